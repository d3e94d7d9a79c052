"""Shared builders and slow, obviously-correct references for the kernel tests."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from kernels.kv_cache import PagedKVCache


@dataclass
class Batch:
    cache: PagedKVCache
    block_table: torch.Tensor  # (B, P) int32
    seq_lens: torch.Tensor  # (B,) int32
    keys: list[torch.Tensor]  # per sequence (len, Hkv, D) float32, as written (unquantized)
    values: list[torch.Tensor]


def make_batch(
    *, lens: list[int], n_kv_heads: int, head_dim: int, page_size: int, dtype=torch.float32,
    kv_cache_dtype: str = "auto", device="cpu", seed: int = 0, discrete: bool = False,
    extra_pages: int = 3, scales: float | None = None, num_layers: int = 1, layer: int = 0,
    page_sketches: bool | None = None,
) -> Batch:
    """Sequences of the given lengths written into a cache with shuffled (fragmented) pages.

    discrete=True draws multiples of 1/4 in [-4, 4]: exactly representable in bf16 and e4m3
    (with a power-of-two scale), so score sums are exact and ties are common."""
    g = torch.Generator().manual_seed(seed)
    pages_per_seq = [max(1, -(-n // page_size)) for n in lens]
    P = max(pages_per_seq) + 1  # one spare column: tables wider than needed must work
    num_pages = sum(pages_per_seq) + extra_pages
    cache = PagedKVCache(
        num_layers=num_layers, num_pages=num_pages, page_size=page_size, n_kv_heads=n_kv_heads,
        head_dim=head_dim, dtype=dtype, kv_cache_dtype=kv_cache_dtype, device=device, page_sketches=page_sketches,
    )
    if scales is not None:
        for layer_ in range(num_layers):
            s = torch.full((n_kv_heads,), scales)
            cache.set_scales(layer_, s, s)
    perm = torch.randperm(num_pages, generator=g)
    block_table = torch.full((len(lens), P), -1, dtype=torch.int32)  # -1: never read
    keys, values, used = [], [], 0
    for i, n in enumerate(lens):
        pages = perm[used:used + pages_per_seq[i]]
        used += pages_per_seq[i]
        block_table[i, : len(pages)] = pages.to(torch.int32)
        cache.reset_pages(pages)
        k = _draw((n, n_kv_heads, head_dim), g, discrete)
        v = _draw((n, n_kv_heads, head_dim), g, discrete)
        slots = (pages[:, None] * page_size + torch.arange(page_size)).reshape(-1)[:n]
        # Write in two parts (a "prefill" and a trickle of "decode" steps) to exercise the
        # incremental bound updates.
        cut = max(0, n - 3)
        cache.write(layer, slots[:cut].to(device), k[:cut].to(device), v[:cut].to(device))
        for t in range(cut, n):
            cache.write(layer, slots[t:t + 1].to(device), k[t:t + 1].to(device), v[t:t + 1].to(device))
        keys.append(k)
        values.append(v)
    return Batch(cache, block_table.to(device), torch.tensor(lens, dtype=torch.int32, device=device), keys, values)


def layer_weights(g: torch.Generator, *, H: int, Hkv: int, D: int, dim: int, hidden: int, layer: int):
    """A random bf16 decoder layer for kernels.cpu.decode_layer: small weights, so activations stay O(1)."""
    from kernels import cpu

    bf = lambda *shape, s=1.0: (torch.randn(*shape, generator=g) * s).to(torch.bfloat16)
    return cpu.LayerWeights(wqkv=bf((H + 2 * Hkv) * D, dim, s=0.3), wo=bf(dim, H * D, s=0.1),
                            w13=bf(2 * hidden, dim, s=0.2), w2=bf(dim, hidden, s=0.1), attention_norm=bf(dim),
                            ffn_norm=bf(dim), eps=1e-5, n_heads=H, n_kv_heads=Hkv, head_dim=D, layer=layer)


def _draw(shape, g, discrete):
    x = torch.randn(shape, generator=g)
    return (x * 4).round().clamp(-16, 16) / 4 if discrete else x


def draw_queries(n: int, n_heads: int, head_dim: int, *, seed: int, discrete: bool = False, device="cpu"):
    g = torch.Generator().manual_seed(seed + 1000)
    return _draw((n, n_heads, head_dim), g, discrete).to(device)


def read_sequence(batch: Batch, i: int, layer: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Keys/values of sequence i as the attention reads them (dequantized), float64."""
    cache = batch.cache
    k_all, v_all = cache.dequantized(layer)
    n = int(batch.seq_lens[i])
    pages = batch.block_table[i, : -(-n // cache.page_size)].long()
    k = k_all[pages].reshape(-1, cache.n_kv_heads, cache.head_dim)[:n]
    v = v_all[pages].reshape(-1, cache.n_kv_heads, cache.head_dim)[:n]
    return k.double().cpu(), v.double().cpu()


def naive_attention(q, k, v, *, visible=None, dtype=torch.float64):
    """q (H, D); k/v (T, Hkv, D); visible (Hkv, T) bool or None. Computed in `dtype`
    throughout (the same-precision reference of the tolerance rule)."""
    H, D = q.shape
    Hkv = k.shape[1]
    G = H // Hkv
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    out = torch.empty(H, D, dtype=dtype)
    for h in range(H):
        kh = h // G
        s = (k[:, kh] @ q[h]) * (1.0 / math.sqrt(D))
        if visible is not None:
            s = s.masked_fill(~visible[kh], float("-inf"))
        p = torch.softmax(s.float(), dim=0).to(dtype) if dtype in (torch.bfloat16, torch.float16) else torch.softmax(s, 0)
        out[h] = p @ v[:, kh]
    return out


def quest_selection_bruteforce(q, k_pages_min, k_pages_max, n_pages, *, k_total, sink, local):
    """Literal Quest selection for one query and KV head, in float64 Python loops.

    q (G, D); k_pages_min/max (n_pages, D) -> sorted list of chosen page indices."""
    scores = []
    for p in range(n_pages):
        s = 0.0
        for g in range(q.shape[0]):
            for d in range(q.shape[1]):
                qd = float(q[g, d])
                s += max(qd * float(k_pages_min[p, d]), qd * float(k_pages_max[p, d]))
        scores.append(s)
    forced = {p for p in range(n_pages) if p < sink or p >= n_pages - local}
    rest = sorted((p for p in range(n_pages) if p not in forced), key=lambda p: (-scores[p], p))
    chosen = sorted(forced)[:k_total] if len(forced) > k_total else sorted(forced)
    chosen += rest[: max(0, k_total - len(chosen))]
    return sorted(chosen)


def tolerance_check(out, ref_fp64, ref_same_precision, *, atol=1e-6):
    """flash-attention's rule: the error against the exact result is at most twice the error
    of a torch reference computed in the same precision as the implementation."""
    err = (out.double().cpu() - ref_fp64).abs().max().item()
    base = (ref_same_precision.double().cpu() - ref_fp64).abs().max().item()
    assert err <= 2 * base + atol, f"max error {err:.3g} > 2 x reference error {base:.3g} + {atol}"
    return err, base
