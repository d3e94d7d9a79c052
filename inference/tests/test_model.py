"""Model correctness against Hugging Face transformers' LlamaForCausalLM loaded from the same
GGUF, in fp32: logits within 1e-3 and identical top-1 at every position."""

from __future__ import annotations

import pytest
import torch

from inference.engine import GenerationRequest, SamplingParams
from kernels.settings import KernelSettings

LONG_TEXT = (
    "The history of the printing press begins in the fifteenth century. "
    "Johannes Gutenberg combined movable metal type, oil-based ink and a wooden press, and by 1455 "
    "his workshop in Mainz had printed the 42-line Bible. <div class=\"note\">Printing spread quickly: "
    "by 1500 more than 250 towns had presses.</div>\n"
    "def count_words(text):\n    return len(text.split())\n\n"
)


def _prompts(engine):
    tok = engine.tokenizer
    chat = engine.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}])
    code = tok.encode("import numpy as np\n\ndef softmax(x):\n    e = np.exp(x - x.max())\n    return e / e.sum()\n")
    long_ids = tok.encode(LONG_TEXT * 14)
    assert len(long_ids) > 1000
    return {"chat": chat, "code": code, "long": long_ids[:1030]}


@pytest.fixture(scope="module")
def hf_logits(engine, hf_model):
    with torch.inference_mode():
        return {name: hf_model(torch.tensor([ids])).logits[0].float() for name, ids in _prompts(engine).items()}


@pytest.mark.parametrize("name", ["chat", "code", "long"])
def test_prefill_logits_match_transformers(engine, hf_logits, name):
    ids = _prompts(engine)[name]
    ours = engine.prompt_logits(ids)
    ref = hf_logits[name]
    assert ours.shape == ref.shape == (len(ids), engine.config.vocab_size)
    assert (ours - ref).abs().max().item() < 1e-3
    assert torch.equal(ours.argmax(-1), ref.argmax(-1))


def test_paged_decode_path_matches_transformers(engine, hf_logits):
    """Teacher forcing runs the continuation through the paged *decode* attention path."""
    ids = _prompts(engine)["code"]
    split = 7  # the continuation crosses several 16-token pages
    div = engine.divergence(ids[:split], ids[split:], KernelSettings(), KernelSettings(page_size=8), top_k=0)
    ref = torch.log_softmax(hf_logits["code"], -1)[split - 1:-1]
    expected = ref.gather(1, torch.tensor(ids[split:])[:, None]).squeeze(1)
    assert torch.allclose(torch.tensor(div["reference"]["logprobs"]), expected, atol=1e-3)
    assert torch.allclose(torch.tensor(div["candidate"]["logprobs"]), expected, atol=1e-3)
    assert div["reference"]["top1"] == ref.argmax(-1).tolist()
    assert div["max_kl"] < 1e-5 and div["top1_agreement"] == 1.0 and div["first_over_threshold"] is None


def test_capital_of_france_is_paris(engine):
    ids = engine.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}])
    result = engine.generate([GenerationRequest("paris", ids, SamplingParams(temperature=0, max_tokens=16))])[0]
    assert "Paris" in result.text


def test_bf16_engine_agrees_with_fp32(engine, engine_bf16):
    """bf16 weights: same greedy answer; logits close to fp32 (bf16 has ~3 significant digits)."""
    ids = _prompts(engine)["chat"]
    lo, hi = engine_bf16.prompt_logits(ids), engine.prompt_logits(ids)
    assert lo.dtype == torch.float32
    assert (lo - hi).abs().max().item() < 2.0
    assert (lo - hi).abs().mean().item() < 0.3
    assert (lo.argmax(-1) == hi.argmax(-1)).float().mean().item() > 0.9
