"""Sampling: small pure functions over a batch of logits, keyword-only parameters.

Reproducibility: randomness enters only through `uniforms`, one number per row drawn from that
sequence's own `torch.Generator` (`draw_uniforms`), and every operation is row-wise, so sample i
with seed s gets the same token whatever else shares its batch.

Filters: top_k, top_p (nucleus) and min_p each keep a prefix of the tokens sorted by
probability, so together they keep the shortest of the three prefixes. The sampler looks for
that prefix among the top `_CANDIDATES` tokens first and sorts a whole row only when the prefix
is longer (rare at chat temperatures); the result is exact either way. Unfiltered rows draw by
inverse CDF in the same descending order, over the candidates when u falls inside their mass.
"""

from __future__ import annotations

from typing import Sequence

import torch

_CANDIDATES = 256


def draw_uniforms(generators: Sequence[torch.Generator | None], *, device: torch.device | str = "cpu") -> torch.Tensor:
    """One U[0,1) per row from each row's generator (rows with None get 0: greedy rows)."""
    values = [float(torch.rand(1, generator=g).item()) if g is not None else 0.0 for g in generators]
    return torch.tensor(values, dtype=torch.float64, device=device)


def _prefix_keep(sorted_probs: torch.Tensor, *, top_p: torch.Tensor, top_k: torch.Tensor, min_p: torch.Tensor,
                 p_max: torch.Tensor) -> torch.Tensor:
    """(B, n) probabilities sorted descending -> bool mask of the kept prefix (at least one)."""
    n = sorted_probs.shape[1]
    rank = torch.arange(n, device=sorted_probs.device)[None, :]
    mass_before = sorted_probs.cumsum(-1) - sorted_probs
    keep = mass_before < top_p[:, None].to(sorted_probs.dtype)
    keep &= (rank < top_k[:, None]) | (top_k[:, None] <= 0)
    keep &= sorted_probs >= (min_p.to(sorted_probs.dtype) * p_max)[:, None]
    keep[:, 0] = True
    return keep


def filtered_probs(logits: torch.Tensor, *, temperature: torch.Tensor, top_p: torch.Tensor, top_k: torch.Tensor,
                   min_p: torch.Tensor) -> torch.Tensor:
    """(B, V) distribution that `sample` draws from: softmax(logits / T) restricted to the top_k,
    nucleus and min_p sets and renormalized; a one-hot on the argmax where temperature is 0.
    (Full-vocabulary and slow: for tests and for showing a distribution.)"""
    B, V = logits.shape
    assert temperature.shape == top_p.shape == top_k.shape == min_p.shape == (B,), "one parameter per row"
    greedy = temperature <= 0
    t = torch.where(greedy, torch.ones_like(temperature), temperature).to(logits.dtype)
    probs = torch.softmax(logits / t[:, None], dim=-1)
    sorted_probs, order = probs.sort(-1, descending=True)
    keep = _prefix_keep(sorted_probs, top_p=top_p, top_k=top_k, min_p=min_p, p_max=sorted_probs[:, 0])
    out = torch.zeros_like(probs).scatter_(1, order, sorted_probs * keep)
    out = out / out.sum(-1, keepdim=True)
    one_hot = torch.zeros_like(probs).scatter_(1, logits.argmax(-1, keepdim=True), 1.0)
    return torch.where(greedy[:, None], one_hot, out)


def _draw(probs: torch.Tensor, keep: torch.Tensor | None, uniforms: torch.Tensor) -> torch.Tensor:
    """Inverse CDF over each row of `probs` (masked by `keep`): (B,) column indices."""
    weights = probs.double() if keep is None else probs.double() * keep
    cdf = weights.cumsum(-1)
    target = uniforms.to(cdf.dtype)[:, None] * cdf[:, -1:]
    col = torch.searchsorted(cdf, target, right=True).squeeze(1).clamp_(max=probs.shape[1] - 1)
    # Never land on a zero-weight column (possible only at the exact upper edge).
    zero = weights.gather(1, col[:, None]).squeeze(1) <= 0
    if bool(zero.any()):
        col = torch.where(zero, weights.argmax(-1), col)
    return col


def sample(logits: torch.Tensor, *, temperature: torch.Tensor, top_p: torch.Tensor, top_k: torch.Tensor,
           min_p: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """(B, V) float logits -> (B,) token ids drawn from `filtered_probs` with the given uniforms."""
    B, V = logits.shape
    assert temperature.shape == top_p.shape == top_k.shape == min_p.shape == uniforms.shape == (B,)
    rows = torch.nonzero(temperature > 0, as_tuple=True)[0]
    if rows.numel() == 0:
        return logits.argmax(-1)
    out = torch.zeros(B, dtype=torch.long, device=logits.device)
    if rows.numel() < B:  # greedy rows take the argmax (exact: the same in any batch)
        greedy = torch.nonzero(temperature <= 0, as_tuple=True)[0]
        out[greedy] = logits[greedy].argmax(-1)
    scaled = logits[rows].float() / temperature[rows, None].float()
    lse = torch.logsumexp(scaled, -1, keepdim=True)
    tp, tk, mp, u = top_p[rows], top_k[rows], min_p[rows], uniforms[rows]
    n = min(_CANDIDATES, V)
    vals, idx = scaled.topk(n, dim=-1)                                   # (R, n) descending
    cand = torch.exp(vals - lse)
    keep = _prefix_keep(cand, top_p=tp, top_k=tk, min_p=mp, p_max=cand[:, 0])
    # Resolved within the candidates when one of the three prefixes ends inside them.
    resolved = ((tk > 0) & (tk <= n)) | ((tp < 1) & (cand.sum(-1) >= tp)) | (
        (mp > 0) & (cand[:, -1] < mp * cand[:, 0]))
    sampled = idx.gather(1, _draw(cand, keep, u)[:, None]).squeeze(1)
    # Unfiltered rows: inverse CDF over the whole vocabulary in descending-probability order.
    # Its first n steps are the candidates' CDF, so a u below the candidates' mass (nearly always
    # at chat temperatures) is resolved here; the rest sorts the row. (Both sides normalize by a
    # total within float rounding of 1; tokens tied across the n-th place may be ordered
    # differently by topk and sort. Either way each token keeps its probability to ~1e-7.)
    unfiltered = (tk <= 0) & (tp >= 1) & (mp <= 0)
    if bool(unfiltered.any()):
        cdf = cand.double().cumsum(-1)
        target = u.to(cdf.dtype)[:, None]
        inside = unfiltered & (target[:, 0] < cdf[:, -1])
        col = torch.searchsorted(cdf, target, right=True).squeeze(1).clamp_(max=n - 1)
        sampled = torch.where(inside, idx.gather(1, col[:, None]).squeeze(1), sampled)
        resolved = (resolved & ~unfiltered) | inside
    for r in torch.nonzero(~resolved, as_tuple=True)[0].tolist():
        sp, order = torch.exp(scaled[r:r + 1] - lse[r:r + 1]).sort(-1, descending=True)  # (1, V)
        # Unfiltered (u past the candidates) keeps every token; _draw scales u by the row's total.
        kr = None if bool(unfiltered[r]) else _prefix_keep(
            sp, top_p=tp[r:r + 1], top_k=tk[r:r + 1], min_p=mp[r:r + 1], p_max=sp[:, 0])
        sampled[r] = order[0, _draw(sp, kr, u[r:r + 1])[0]]
    out[rows] = sampled
    return out


def logprobs_of(logits: torch.Tensor, token_ids: torch.Tensor, *, top_k: int = 0
                ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Log-probabilities under the model's own distribution (log_softmax of the raw logits, before
    temperature or filtering, as vLLM and teacher forcing report them).
    Returns (B,) chosen logprobs and, if top_k > 0, (B, k) top logprobs and their ids."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    chosen = logp.gather(1, token_ids[:, None].long()).squeeze(1)
    if top_k <= 0:
        return chosen, None, None
    vals, ids = logp.topk(top_k, dim=-1)
    return chosen, vals, ids
