"""Session-scoped Hugging Face references of the bundled model, loaded lazily, only for the
tests that need them. `model_path`, `engine` (fp32) and `engine_bf16` come from the root
conftest.py, shared with every package's tests.
"""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="session")
def hf_tokenizer(model_path):
    transformers = pytest.importorskip("transformers", reason="transformers is a test dependency (pip install -e .[dev])")
    return transformers.AutoTokenizer.from_pretrained(str(model_path.parent), gguf_file=model_path.name)


@pytest.fixture(scope="session")
def hf_model(model_path):
    transformers = pytest.importorskip("transformers", reason="transformers is a test dependency (pip install -e .[dev])")
    pytest.importorskip("accelerate", reason="accelerate is a test dependency (pip install -e .[dev])")
    model = transformers.LlamaForCausalLM.from_pretrained(
        str(model_path.parent), gguf_file=model_path.name, torch_dtype=torch.float32)
    return model.eval()
