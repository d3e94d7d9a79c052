"""Sampling functions: the sampled distribution is softmax(logits / T) restricted as asked."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from inference.sampling import draw_uniforms, filtered_probs, logprobs_of, sample

N_SAMPLES = 20_000


def _params(b, *, t=1.0, p=1.0, k=0, m=0.0):
    return dict(temperature=torch.full((b,), float(t)), top_p=torch.full((b,), float(p)),
                top_k=torch.full((b,), k, dtype=torch.long), min_p=torch.full((b,), float(m)))


def _nucleus_reference(logits: torch.Tensor, t: float, top_p: float) -> np.ndarray:
    """Independent reference: sort, keep the smallest head whose mass reaches top_p, renormalize."""
    p = torch.softmax(logits.double() / t, -1).numpy()
    order = np.argsort(-p, kind="stable")
    mass = np.cumsum(p[order])
    n_keep = int(np.searchsorted(mass, top_p) + 1)
    out = np.zeros_like(p)
    out[order[:n_keep]] = p[order[:n_keep]]
    return out / out.sum()


@pytest.fixture(scope="module")
def first_token_logits(engine):
    ids = engine.apply_chat_template([{"role": "user", "content": "Tell me a short story about a cat."}])
    return engine.prompt_logits(ids)[-1]


@pytest.mark.parametrize("temperature,top_p", [(0.6, 0.9), (0.6, 1.0)], ids=["T0.6-p0.9", "T0.6-unfiltered"])
def test_sampled_first_tokens_follow_softmax_after_top_p(first_token_logits, temperature, top_p):
    expected = _nucleus_reference(first_token_logits, temperature, top_p)
    gen = torch.Generator().manual_seed(1234)
    counts = np.zeros_like(expected)
    chunk = 500
    for _ in range(N_SAMPLES // chunk):
        logits = first_token_logits[None, :].expand(chunk, -1)
        ids = sample(logits, **_params(chunk, t=temperature, p=top_p), uniforms=torch.rand(chunk, generator=gen))
        np.add.at(counts, ids.numpy(), 1)
    assert counts[expected == 0].sum() == 0, "sampled a token outside the nucleus"
    # Chi-square over tokens expected >= 5 times, the rest pooled into one bin.
    big = expected * N_SAMPLES >= 5
    obs = np.append(counts[big], counts[~big & (expected > 0)].sum())
    exp = np.append(expected[big], expected[~big & (expected > 0)].sum()) * N_SAMPLES
    keep = exp > 0
    assert big.sum() >= 3, "test needs a spread distribution"
    result = stats.chisquare(obs[keep], exp[keep])
    assert result.pvalue > 1e-3, f"chi-square p={result.pvalue:.2g}"


def test_top_k_and_min_p_filter_exactly():
    logits = torch.tensor([[3.0, 2.0, 1.0, 0.0, -1.0]])
    probs = torch.softmax(logits, -1)
    top2 = filtered_probs(logits, **_params(1, k=2))
    assert torch.allclose(top2, torch.cat([probs[:, :2] / probs[:, :2].sum(), torch.zeros(1, 3)], 1))
    minp = filtered_probs(logits, **_params(1, m=0.3))  # keep p >= 0.3 * max: e^-1 = 0.37 passes, e^-2 not
    assert torch.allclose(minp, torch.cat([probs[:, :2] / probs[:, :2].sum(), torch.zeros(1, 3)], 1))
    nucleus = filtered_probs(logits, **_params(1, p=0.5))
    assert nucleus[0, 0] == 1 and nucleus[0, 1:].sum() == 0


def test_filtered_probs_matches_the_reference():
    logits = torch.randn(1, 1000, generator=torch.Generator().manual_seed(0))
    probs = filtered_probs(logits, **_params(1, t=0.7, p=0.9))
    assert np.allclose(probs[0].numpy(), _nucleus_reference(logits[0], 0.7, 0.9), atol=1e-6)


@pytest.mark.parametrize("kind", ["top_p", "unfiltered", "top_k", "min_p"])
def test_sampling_beyond_the_candidate_shortcut_is_exact(kind):
    """Near-flat distributions keep hundreds of tokens: the full-row path. The samples must stay
    inside the kept set and cover it uniformly enough."""
    V = 1000
    logits = torch.linspace(0, 1e-3, V)[None, :].expand(4000, -1)
    params = {"top_p": _params(4000, p=0.9), "unfiltered": _params(4000), "top_k": _params(4000, k=600),
              "min_p": _params(4000, m=0.5)}[kind]
    expected = filtered_probs(logits[:1], **{k: v[:1] for k, v in params.items()})[0]
    ids = sample(logits, **params, uniforms=torch.rand(4000, generator=torch.Generator().manual_seed(2)))
    assert expected[ids].min() > 0
    n_kept = int((expected > 0).sum())
    assert n_kept == {"top_p": 900, "unfiltered": V, "top_k": 600, "min_p": V}[kind] or kind == "top_p"
    counts = np.bincount(ids.numpy(), minlength=V)[expected.numpy() > 0]
    assert stats.chisquare(counts).pvalue > 1e-3


@pytest.mark.parametrize("spread", [0.1, 30.0], ids=["flat-full-row", "peaked-candidates"])
def test_unfiltered_draw_at_the_top_of_the_unit_interval_keeps_a_real_token(spread):
    """u just below 1 with no filter: the draw must land on a token of positive probability in
    both the full-row path (flat logits) and the candidate path (peaked logits)."""
    logits = torch.randn(3, 5000, generator=torch.Generator().manual_seed(7)) * spread
    for t in (0.3, 1.0):
        params = _params(3, t=t)
        ids = sample(logits, **params, uniforms=torch.full((3,), 1 - 2 ** -24))
        probs = filtered_probs(logits, **params)
        assert (probs.gather(1, ids[:, None]) > 0).all()


def test_greedy_rows_take_the_argmax_in_a_mixed_batch():
    logits = torch.randn(4, 50, generator=torch.Generator().manual_seed(0))
    params = _params(4, t=1.0)
    params["temperature"] = torch.tensor([0.0, 1.0, 0.0, 0.7])
    ids = sample(logits, **params, uniforms=torch.rand(4, generator=torch.Generator().manual_seed(1)))
    assert ids[0] == logits[0].argmax() and ids[2] == logits[2].argmax()


def test_rows_are_independent_of_batch_composition():
    gen = torch.Generator().manual_seed(3)
    logits = torch.randn(6, 300, generator=gen)
    u = torch.rand(6, generator=gen)
    together = sample(logits, **_params(6, t=0.8, p=0.9), uniforms=u)
    alone = torch.cat([sample(logits[i:i + 1], **_params(1, t=0.8, p=0.9), uniforms=u[i:i + 1]) for i in range(6)])
    assert torch.equal(together, alone)


def test_draw_uniforms_uses_each_rows_generator():
    a = draw_uniforms([torch.Generator().manual_seed(5), None, torch.Generator().manual_seed(6)])
    b = draw_uniforms([torch.Generator().manual_seed(5)])
    assert a[0] == b[0] and a[1] == 0 and a[2] != a[0]


def test_logprobs_are_raw_log_softmax():
    logits = torch.randn(2, 10, generator=torch.Generator().manual_seed(0))
    chosen, top, top_ids = logprobs_of(logits, torch.tensor([3, 7]), top_k=3)
    ref = torch.log_softmax(logits, -1)
    assert torch.allclose(chosen, ref[[0, 1], [3, 7]])
    assert torch.equal(top_ids, ref.topk(3).indices) and torch.allclose(top, ref.topk(3).values)
