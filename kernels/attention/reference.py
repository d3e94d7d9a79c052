"""Sparse decode attention in torch: each query attends only to the pages the indexer selected
for its KV head. Gathers the selected pages alone (never the whole context), dequantizes fp8,
and computes in float32.

selected: (N, Hkv, K) int32 logical page indices into the query's block-table row, -1 = none
(see kernels/indexer/reference.py). Positions >= seq_len inside a selected page are masked.
"""

from __future__ import annotations

import math

import torch

from kernels.attention.dense import check_gqa
from kernels.kv_cache import PagedKVCache, FP8_DTYPE


def gather_selected(
    cache: PagedKVCache, layer: int, block_table: torch.Tensor, selected: torch.Tensor, *, values: bool
) -> torch.Tensor:
    """Keys or values of the selected pages, per KV head: (N, Hkv, K * page_size, D) float32."""
    N, Hkv, K = selected.shape
    S, D = cache.page_size, cache.head_dim
    logical = selected.long().clamp_min(0)
    physical = torch.gather(block_table.long(), 1, logical.view(N, Hkv * K)).view(N, Hkv, K)
    physical = physical.clamp(0, cache.num_pages - 1)
    # Row r = (page * S + s) * Hkv + h of the layer's storage viewed as (num_pages*S*Hkv, D):
    # one index_select of contiguous D-element rows, the fastest gather torch has on the CPU.
    rows = (physical[..., None] * S + torch.arange(S, device=selected.device)) * Hkv
    rows = rows + torch.arange(Hkv, device=selected.device).view(1, Hkv, 1, 1)  # (N, Hkv, K, S)
    store = (cache.v if values else cache.k)[layer].view(-1, D)
    pages = store.index_select(0, rows.view(-1)).view(N, Hkv, K * S, D)
    if store.dtype == FP8_DTYPE:
        scale = (cache.v_scale if values else cache.k_scale)[layer]
        return pages.float() * scale.view(1, Hkv, 1, 1)
    return pages.float()


def sparse_decode(
    q: torch.Tensor,
    cache: PagedKVCache,
    layer: int,
    block_table: torch.Tensor,
    seq_lens: torch.Tensor,
    selected: torch.Tensor,
    *,
    scale: float | None = None,
) -> torch.Tensor:
    """q (N, H, D), selected (N, Hkv, K) -> (N, H, D) in q.dtype."""
    N, H, D = q.shape
    Hkv, S = cache.n_kv_heads, cache.page_size
    G = check_gqa(H, Hkv)
    K = selected.shape[-1]
    if selected.shape != (N, Hkv, K):
        raise ValueError(f"selected must be (N={N}, Hkv={Hkv}, K), got {tuple(selected.shape)}")
    scale = 1.0 / math.sqrt(D) if scale is None else scale

    k = gather_selected(cache, layer, block_table, selected, values=False)  # (N, Hkv, K*S, D)
    v = gather_selected(cache, layer, block_table, selected, values=True)
    positions = selected.long()[..., None] * S + torch.arange(S, device=q.device)  # (N, Hkv, K, S)
    visible = (selected[..., None] >= 0) & (positions < seq_lens.to(q.device).long().view(N, 1, 1, 1))
    visible = visible.view(N, Hkv, 1, K * S)

    qg = q.float().view(N, Hkv, G, D)
    scores = torch.matmul(qg, k.transpose(-1, -2)) * scale  # (N, Hkv, G, K*S)
    scores = scores.masked_fill(~visible, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    out = torch.matmul(probs, v)  # (N, Hkv, G, D)
    return out.reshape(N, H, D).to(q.dtype)
