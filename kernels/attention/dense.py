"""Dense attention: causal varlen prefill over fresh tokens, and decode over the whole paged
KV cache. The reference every other setting is compared with.

GQA convention (as Hugging Face `repeat_kv` and torch SDPA `enable_gqa`): query head h reads
KV head h // G, with G = H // Hkv.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from kernels.kv_cache import PagedKVCache

# Upper bound on elements of one (queries x heads x positions) score block; decode calls with
# many queries (teacher forcing) are split into chunks below it to bound memory.
_MAX_SCORE_ELEMENTS = 1 << 24


def check_gqa(n_heads: int, n_kv_heads: int) -> int:
    if n_heads % n_kv_heads:
        raise ValueError(f"{n_heads} query heads are not a multiple of {n_kv_heads} KV heads")
    return n_heads // n_kv_heads


def dense_prefill(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor, *, scale: float | None = None
) -> torch.Tensor:
    """Causal attention within each packed sequence.

    q: (T, H, D), k/v: (T, Hkv, D), cu_seqlens: (B+1,) int, -> (T, H, D) in q.dtype.
    Computed in float32 (the CPU engine's precision; on GPU the inputs' dtype is kept).
    """
    T, H, D = q.shape
    if k.shape[0] != T or v.shape != k.shape or k.shape[2] != D:
        raise ValueError(f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} do not match")
    check_gqa(H, k.shape[1])
    compute = q.dtype if q.is_cuda else torch.float32
    bounds = cu_seqlens.tolist()
    if bounds[0] != 0 or bounds[-1] != T:
        raise ValueError(f"cu_seqlens must run from 0 to {T}, got {bounds}")
    out = torch.empty_like(q)
    for start, end in zip(bounds[:-1], bounds[1:]):
        if end == start:
            continue
        qs = q[start:end].transpose(0, 1).to(compute)  # (H, L, D)
        ks = k[start:end].transpose(0, 1).to(compute)  # (Hkv, L, D)
        vs = v[start:end].transpose(0, 1).to(compute)
        o = F.scaled_dot_product_attention(qs, ks, vs, is_causal=True, scale=scale, enable_gqa=True)
        out[start:end] = o.transpose(0, 1).to(q.dtype)
    return out


def dense_decode(
    q: torch.Tensor,
    cache: PagedKVCache,
    layer: int,
    block_table: torch.Tensor,
    seq_lens: torch.Tensor,
    *,
    scale: float | None = None,
) -> torch.Tensor:
    """Each query attends to positions [0, seq_len) of its block table's pages.

    q: (N, H, D), block_table: (N, P) int page ids, seq_lens: (N,) int >= 1 -> (N, H, D).
    Queries sharing a block table row (teacher forcing) share one gather of their pages.
    """
    N, H, D = q.shape
    Hkv, S = cache.n_kv_heads, cache.page_size
    G = check_gqa(H, Hkv)
    if D != cache.head_dim or block_table.shape[0] != N or seq_lens.shape != (N,):
        raise ValueError(
            f"q {tuple(q.shape)}, block_table {tuple(block_table.shape)}, seq_lens "
            f"{tuple(seq_lens.shape)} do not fit a cache of head_dim {cache.head_dim}"
        )
    if N == 0:
        return q.new_empty(N, H, D)
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    seq_lens = seq_lens.to(device=q.device, dtype=torch.long)
    max_pages = -(-int(seq_lens.max()) // S)
    if max_pages > block_table.shape[1]:
        raise ValueError(f"seq_lens need {max_pages} pages but block_table has {block_table.shape[1]}")
    tables = block_table[:, :max_pages].to(device=q.device, dtype=torch.long).clamp(0, cache.num_pages - 1)

    # Group queries by identical block-table rows: (U, Qmax) padded query slots.
    if N == 1:
        unique_tables, group = tables, torch.zeros(1, dtype=torch.long, device=q.device)
    else:
        unique_tables, group = torch.unique(tables, dim=0, return_inverse=True)
    U = unique_tables.shape[0]
    counts = torch.bincount(group, minlength=U)
    order = torch.argsort(group, stable=True)
    group_sorted = group[order]
    rank = torch.arange(N, device=q.device) - (torch.cumsum(counts, 0) - counts)[group_sorted]
    q_max = int(counts.max())

    q_pad = torch.zeros(U, q_max, H, D, dtype=torch.float32, device=q.device)
    q_pad[group_sorted, rank] = q[order].float()
    lens = torch.ones(U, q_max, dtype=torch.long, device=q.device)  # padding rows see 1 position
    lens[group_sorted, rank] = seq_lens[order]

    T = max_pages * S
    k = cache.gather_pages(layer, unique_tables, values=False).reshape(U, T, Hkv, D).transpose(1, 2)
    v = cache.gather_pages(layer, unique_tables, values=True).reshape(U, T, Hkv, D).transpose(1, 2)
    positions = torch.arange(T, device=q.device)

    out_pad = torch.empty(U, q_max, H, D, dtype=torch.float32, device=q.device)
    chunk = max(1, _MAX_SCORE_ELEMENTS // (U * H * T))
    for c0 in range(0, q_max, chunk):
        c1 = min(q_max, c0 + chunk)
        Qc = c1 - c0
        # (U, Qc, Hkv, G, D) -> (U, Hkv, Qc*G, D): the G heads of a KV head become extra rows.
        qc = q_pad[:, c0:c1].view(U, Qc, Hkv, G, D).permute(0, 2, 1, 3, 4).reshape(U, Hkv, Qc * G, D)
        mask = positions[None, None, :] < lens[:, c0:c1, None]  # (U, Qc, T)
        mask = mask[:, None, :, None, :].expand(U, 1, Qc, G, T).reshape(U, 1, Qc * G, T)
        o = F.scaled_dot_product_attention(qc, k, v, attn_mask=mask, scale=scale)  # (U, Hkv, Qc*G, D)
        out_pad[:, c0:c1] = o.view(U, Hkv, Qc, G, D).permute(0, 2, 1, 3, 4).reshape(U, Qc, H, D)

    out = torch.empty(N, H, D, dtype=q.dtype, device=q.device)
    out[order] = out_pad[group_sorted, rank].to(q.dtype)
    return out
