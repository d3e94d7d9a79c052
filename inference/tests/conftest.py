"""Session-scoped Hugging Face references of the bundled model, loaded lazily, only for the
tests that need them (transformers and accelerate are test dependencies, `.[dev]`: imported, not
skipped when missing). `model_path`, `engine` (fp32) and `engine_bf16` come from the root
conftest.py, shared with every package's tests.
"""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="session")
def hf_tokenizer(model_path):
    import transformers

    return transformers.AutoTokenizer.from_pretrained(str(model_path.parent), gguf_file=model_path.name)


@pytest.fixture(scope="session")
def hf_model(model_path):
    import accelerate  # noqa: F401  (from_pretrained needs it; fail here, not deep inside)
    import transformers

    model = transformers.LlamaForCausalLM.from_pretrained(
        str(model_path.parent), gguf_file=model_path.name, torch_dtype=torch.float32)
    return model.eval()
