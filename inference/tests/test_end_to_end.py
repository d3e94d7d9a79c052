"""Kernel settings end to end through the bundled engine (SmolLM2-135M, fp32, CPU):
greedy sparse with a budget covering the context is token-identical to dense; with budget 64
on a 3,000-token conversation the teacher-forced KL against dense is far above the fp32 noise
floor; an fp8 KV cache gives a small mean KL. The measured numbers are printed (pytest -s).
(Where that fp8 KL comes from is the KV-format study's: studies/tests/test_kv_formats.py.)
The KL checks run on a 3,000-token conversation (inference/conversations.py) (about two minutes on this CPU);
KERNELS_E2E_SHORT=1 runs them on 800 tokens for a quick local iteration."""

import os

import pytest

from inference.conversations import source_conversation
from inference.engine import GenerationRequest, SamplingParams
from kernels.settings import KernelSettings

pytestmark = pytest.mark.slow

DENSE = KernelSettings()
SHORT = os.environ.get("KERNELS_E2E_SHORT") == "1"
CONVERSATION_TOKENS, PROMPT_TOKENS = (800, 600) if SHORT else (3000, 2600)


@pytest.fixture(scope="module")
def conversation(engine):
    """A deterministic chat cut to CONVERSATION_TOKENS: prompt, then the continuation scored
    (studies/kv_formats.py scores the same one)."""
    return source_conversation(engine, CONVERSATION_TOKENS, CONVERSATION_TOKENS - PROMPT_TOKENS)


def test_greedy_sparse_with_budget_covering_context_is_token_identical_to_dense(engine):
    prompt = engine.apply_chat_template([{"role": "user", "content": "List five facts about the planet Mars."}])
    sampling = SamplingParams(temperature=0.0, max_tokens=12)
    sparse = KernelSettings(attention="sparse", sparse_budget=1024)
    assert len(prompt) + 12 <= 1024
    results = engine.generate([
        GenerationRequest("dense", prompt, sampling, DENSE),
        GenerationRequest("sparse", prompt, sampling, sparse),
    ])
    by_id = {r.request_id: r.token_ids for r in results}
    assert len(by_id["dense"]) > 0
    assert by_id["sparse"] == by_id["dense"]


def test_sparse_budget_64_diverges_measurably_above_the_fp32_noise_floor(engine, conversation):
    prompt, cont = conversation
    full = engine.divergence(prompt, cont, DENSE, KernelSettings(attention="sparse", sparse_budget=4096), top_k=0)
    tight = engine.divergence(prompt, cont, DENSE, KernelSettings(attention="sparse", sparse_budget=64), top_k=0)
    print(f"\n[sparse vs dense, {len(prompt)}+{len(cont)} tokens] budget>=context: mean KL {full['mean_kl']:.3g}, "
          f"max {full['max_kl']:.3g}, top1 {full['top1_agreement']:.4f}; budget 64: mean KL {tight['mean_kl']:.3g}, "
          f"max {tight['max_kl']:.3g}, top1 {tight['top1_agreement']:.4f}")
    assert full["mean_kl"] < 1e-6 and full["top1_agreement"] == 1.0  # the fp32 noise floor
    assert tight["mean_kl"] > 1e-3
    assert tight["mean_kl"] > 1000 * max(full["mean_kl"], 1e-9)


def test_fp8_kv_cache_mean_kl_is_in_the_8bit_cache_range(engine, conversation):
    prompt, cont = conversation
    fp8 = engine.divergence(prompt, cont, DENSE, KernelSettings(kv_cache_dtype="fp8_e4m3"), top_k=0)
    print(f"\n[fp8_e4m3 KV vs auto, {len(prompt)}+{len(cont)} tokens] mean KL {fp8['mean_kl']:.3g}, "
          f"max {fp8['max_kl']:.3g}, top1 {fp8['top1_agreement']:.4f}")
    # Measured on SmolLM2-135M: mean KL ~0.015-0.018, top-1 agreement ~0.93-0.94 (per-head
    # e4m3 scales, 3 mantissa bits); a broken dequantization gives KL > 1.
    assert 0 < fp8["mean_kl"] < 0.05
    assert fp8["top1_agreement"] > 0.85

