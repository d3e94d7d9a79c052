"""Shared, session-scoped fixtures: the model is loaded once per test session.

`engine` is an fp32 Engine on the default GGUF (correctness tests compare against references in
fp32). The Hugging Face reference model/tokenizer load lazily, only for tests that need them.
"""

from __future__ import annotations

import pytest
import torch

from inference.engine import Engine
from inference.gguf_loader import default_model_path


@pytest.fixture(scope="session")
def model_path():
    return default_model_path()


@pytest.fixture(scope="session")
def engine(model_path):
    return Engine(model_path, dtype="fp32", max_cache_tokens=8192)


@pytest.fixture(scope="session")
def engine_bf16(model_path):
    """The production dtype (seeded reproducibility must hold in bf16 too)."""
    return Engine(model_path, dtype="bf16", max_cache_tokens=8192)


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
