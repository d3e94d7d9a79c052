"""Page indexer as one fused Triton kernel: Quest-bound scoring of every page of a query's
block table, then top-k page selection, with static output shapes and no host
synchronisation (capturable in a CUDA graph). Same contract and tie rule as reference.py.

One program per (query, KV head):
  1. sum the G grouped query heads into [sum min(q,0) | sum relu(q)] (see reference.py);
  2. score the pages in blocks of BLOCK_P: one dot product with each page's [kmin | kmax] row;
     pack (score, page) into one sortable int64 key, store the keys to a scratch row;
  3. reload the row, sort it, and take the K-th largest key as the threshold (keys are unique:
     the page index is in the low bits, so a tie on the score goes to the lower page);
  4. compact the selected pages to the output in ascending page order (a prefix sum gives
     each its slot), pad with -1.

Run on the CPU with TRITON_INTERPRET=1 set before this module is imported.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.indexer.reference import num_selected_pages
from kernels.kv_cache import PagedKVCache

# Keys of pages past the sequence end: below every real key (INT64_MIN).
_INVALID_KEY = -(2**63)
# Largest block-table width the single-block sort handles (pages per sequence); 16384 pages
# of 16 tokens = 256k tokens.
_MAX_PAGES = 16384


@triton.jit
def _page_topk_kernel(
    q_ptr, bounds_ptr, block_table_ptr, seq_lens_ptr, keys_ptr, out_ptr,
    stride_qn, stride_qh,
    stride_bh, stride_bp,
    stride_tn,
    stride_kn, stride_kh,
    stride_on, stride_oh,
    num_table_pages, num_selected, sink_pages, local_pages,
    G: tl.constexpr, G_PAD: tl.constexpr, D: tl.constexpr, D_PAD: tl.constexpr,
    PAGE_SIZE: tl.constexpr, P_PAD: tl.constexpr, BLOCK_P: tl.constexpr, K_PAD: tl.constexpr,
):
    tl.static_assert(P_PAD % BLOCK_P == 0, "P_PAD must be a multiple of BLOCK_P")
    tl.static_assert(G_PAD >= G, "G_PAD must cover the grouped heads")
    n = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1).to(tl.int64)

    # Phase 1: grouped query bound vectors (query heads h*G .. h*G+G-1 share KV head h).
    g = tl.arange(0, G_PAD)
    d = tl.arange(0, D_PAD)
    d_mask = d < D
    q = tl.load(
        q_ptr + n * stride_qn + (h * G + g)[:, None] * stride_qh + d[None, :],
        mask=(g < G)[:, None] & d_mask[None, :], other=0.0,
    ).to(tl.float32)
    q_neg = tl.sum(tl.minimum(q, 0.0), axis=0)  # (D_PAD,) pairs with kmin
    q_pos = tl.sum(tl.maximum(q, 0.0), axis=0)  # (D_PAD,) pairs with kmax

    seq_len = tl.load(seq_lens_ptr + n).to(tl.int64)
    n_pages = tl.minimum((seq_len + PAGE_SIZE - 1) // PAGE_SIZE, num_table_pages)
    key_row = keys_ptr + n * stride_kn + h * stride_kh

    # Phase 2: score pages block by block; forced pages (sink, local) get +inf.
    for p0 in range(0, P_PAD, BLOCK_P):
        p = p0 + tl.arange(0, BLOCK_P).to(tl.int64)
        valid = p < n_pages
        page = tl.load(block_table_ptr + n * stride_tn + p, mask=valid, other=0).to(tl.int64)
        row = bounds_ptr + h * stride_bh + page[:, None] * stride_bp
        row_mask = valid[:, None] & d_mask[None, :]
        kmin = tl.load(row + d[None, :], mask=row_mask, other=0.0).to(tl.float32)  # (bounds_dtype: exact)
        kmax = tl.load(row + D + d[None, :], mask=row_mask, other=0.0).to(tl.float32)
        score = tl.sum(kmin * q_neg[None, :] + kmax * q_pos[None, :], axis=1)
        forced = (p < sink_pages) | (p >= n_pages - local_pages)
        score = tl.where(forced, float("inf"), score) + 0.0  # + 0.0 turns -0.0 into +0.0
        # Order-preserving float -> int32 map (flip the magnitude bits of negatives), then the
        # page index in the low 32 bits, inverted so that the lower page wins a tie.
        bits = score.to(tl.int32, bitcast=True)
        mono = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits).to(tl.int64)
        key = (mono << 32) | (0x7FFFFFFF - p)
        key = tl.where(valid, key, -9223372036854775808)
        tl.store(key_row + p, key)
    # Other threads of this program wrote the row: make their stores visible before reading.
    tl.debug_barrier()

    # Phase 3: the K-th largest key is the selection threshold.
    p = tl.arange(0, P_PAD).to(tl.int64)
    keys = tl.load(key_row + p)
    ranked = tl.sort(keys, descending=True)
    threshold = tl.min(tl.where(p < num_selected, ranked, 9223372036854775807), axis=0)
    selected = (keys >= threshold) & (p < n_pages)

    # Phase 4: compact to ascending page order; unused slots get -1.
    slot = tl.cumsum(selected.to(tl.int32), axis=0) - 1
    out_row = out_ptr + n * stride_on + h * stride_oh
    tl.store(out_row + slot, p.to(tl.int32), mask=selected)
    count = tl.sum(selected.to(tl.int32), axis=0)
    j = tl.arange(0, K_PAD)
    tl.store(out_row + j, tl.full([K_PAD], -1, tl.int32), mask=(j >= count) & (j < num_selected))


def interpreted() -> bool:
    """True when this module's kernels run in the Triton interpreter (TRITON_INTERPRET=1)."""
    return type(_page_topk_kernel).__name__ == "InterpretedFunction"


def select_pages(
    q: torch.Tensor,
    cache: PagedKVCache,
    layer: int,
    block_table: torch.Tensor,
    seq_lens: torch.Tensor,
    *,
    budget: int,
    sink_pages: int,
    local_pages: int,
) -> torch.Tensor:
    """(N, H, D) queries -> (N, Hkv, K) int32 selected logical pages (see reference.py)."""
    N, H, D = q.shape
    Hkv, S = cache.n_kv_heads, cache.page_size
    if H % Hkv or D != cache.head_dim:
        raise ValueError(f"q {tuple(q.shape)} does not fit a cache of {Hkv} KV heads x {cache.head_dim}")
    if block_table.shape[0] != N or seq_lens.shape != (N,):
        raise ValueError(f"block_table {tuple(block_table.shape)} / seq_lens {tuple(seq_lens.shape)} for {N} queries")
    P = block_table.shape[1]
    if P > _MAX_PAGES:
        raise ValueError(f"block tables of {P} pages exceed the Triton indexer's limit of {_MAX_PAGES}")
    K = num_selected_pages(budget, S, P)
    out = torch.empty(N, Hkv, K, dtype=torch.int32, device=q.device)
    if N == 0:
        return out
    q = q.contiguous() if q.stride(-1) != 1 else q
    block_table = block_table.to(torch.int32).contiguous()
    seq_lens = seq_lens.to(torch.int32).contiguous()
    bounds = cache.kbounds[layer]  # (Hkv, num_pages, 2, D), contiguous rows of 2*D
    P_PAD = max(16, triton.next_power_of_2(P))
    BLOCK_P = min(P_PAD, 64)
    keys = torch.empty(N, Hkv, P_PAD, dtype=torch.int64, device=q.device)  # scratch
    G = H // Hkv
    _page_topk_kernel[(N, Hkv)](
        q, bounds, block_table, seq_lens, keys, out,
        q.stride(0), q.stride(1),
        bounds.stride(0), bounds.stride(1),
        block_table.stride(0),
        keys.stride(0), keys.stride(1),
        out.stride(0), out.stride(1),
        P, K, sink_pages, local_pages,
        G=G, G_PAD=triton.next_power_of_2(G), D=D, D_PAD=triton.next_power_of_2(D),
        PAGE_SIZE=S, P_PAD=P_PAD, BLOCK_P=BLOCK_P, K_PAD=triton.next_power_of_2(K),
    )
    return out
