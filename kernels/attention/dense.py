"""Dense attention: causal varlen prefill over fresh tokens, and decode over the whole paged
KV cache. The reference every other setting is compared with.

GQA convention (as Hugging Face `repeat_kv` and torch SDPA `enable_gqa`): query head h reads
KV head h // G, with G = H // Hkv.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from kernels import cpu as kernels_cpu
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
    On a GPU, SDPA's fused (flash) kernel in the inputs' dtype (float32 accumulation), with the
    KV heads repeated to the query heads first. On the CPU, blocked float32 GEMMs
    (`_causal_blocked`): torch's CPU flash kernel ran at ~15 GFLOPS here (10 ms per layer for a
    512-token prompt against 4 ms for the GEMMs).
    """
    T, H, D = q.shape
    if k.shape[0] != T or v.shape != k.shape or k.shape[2] != D:
        raise ValueError(f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} do not match")
    G = check_gqa(H, k.shape[1])
    bounds = cu_seqlens.tolist()
    if bounds[0] != 0 or bounds[-1] != T:
        raise ValueError(f"cu_seqlens must run from 0 to {T}, got {bounds}")
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    out = torch.empty_like(q)
    if q.device.type == "cpu":
        for start, end in zip(bounds[:-1], bounds[1:]):
            if end > start:
                out[start:end] = _causal_blocked(q[start:end], k[start:end], v[start:end], scale)
        return out
    if G > 1:
        k, v = k.repeat_interleave(G, dim=1), v.repeat_interleave(G, dim=1)  # query head h reads KV head h // G
    for start, end in zip(bounds[:-1], bounds[1:]):
        if end == start:
            continue
        qs, ks, vs = (x[start:end].transpose(0, 1) for x in (q, k, v))  # (H, L, D)
        out[start:end] = F.scaled_dot_product_attention(qs, ks, vs, is_causal=True, scale=scale).transpose(0, 1)
    return out


# Query rows per block of _causal_blocked (at most): a block's scores are (H, rows, its last
# position) float32, and the keys past a block's last row, which the causal mask hides anyway,
# are never multiplied. Long prompts use fewer rows per block so that the scores stay under
# _MAX_SCORE_ELEMENTS (64 MB; softmax makes one more such tensor).
_PREFILL_BLOCK = 256


def _causal_blocks(L: int, H: int, device):
    """(first row, end, hidden) per block of query rows: keys 0..end-1 are multiplied, hidden
    (rows, end) bool marks the ones after each row (the causal mask)."""
    block = max(16, min(_PREFILL_BLOCK, _MAX_SCORE_ELEMENTS // (H * L)))
    for s0 in range(0, L, block):
        e = min(L, s0 + block)
        yield s0, e, torch.arange(e, device=device)[None, :] > torch.arange(s0, e, device=device)[:, None]


def _causal_blocked(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """One sequence: q (L, H, D), k/v (L, Hkv, D) -> (L, H, D) in q.dtype, float32 math.
    GQA without repeating KV heads: the G query heads of a KV head are G * rows rows of one
    GEMM against that head's keys. The GEMMs run in kernels.cpu where it is available
    (`_causal_blocked_native`), else in torch."""
    L, H, D = q.shape
    Hkv = k.shape[1]
    G = H // Hkv
    if kernels_cpu.available() and q.dtype == k.dtype == v.dtype and q.dtype in (torch.float32, torch.bfloat16):
        return _causal_blocked_native(q, k, v, scale)
    qf = q.float().view(L, Hkv, G, D).permute(1, 2, 0, 3)       # (Hkv, G, L, D)
    kf = k.float().permute(1, 2, 0)                              # (Hkv, D, L)
    vf = v.float().transpose(0, 1)                               # (Hkv, L, D)
    out = torch.empty(Hkv, G, L, D, dtype=torch.float32, device=q.device)
    for s0, e, hidden in _causal_blocks(L, H, q.device):
        rows = e - s0
        scores = torch.bmm(qf[:, :, s0:e].reshape(Hkv, G * rows, D), kf[:, :, :e]).mul_(scale)
        scores.view(Hkv, G, rows, e).masked_fill_(hidden, float("-inf"))
        out[:, :, s0:e] = torch.bmm(torch.softmax(scores, dim=-1), vf[:, :e]).view(Hkv, G, rows, D)
    return out.permute(2, 0, 1, 3).reshape(L, H, D).to(q.dtype)


def _causal_blocked_native(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """_causal_blocked with its two GEMMs in kernels.cpu.linear (float32 sums; bf16 x bf16
    products by vdpbf16ps where the CPU has it): per KV head the keys are packed once and a
    block's scores read only the keys up to its last row; the values of those positions are packed
    per block so the probabilities multiply only them. About 3x torch's float32 bmm here."""
    L, H, D = q.shape
    Hkv = k.shape[1]
    G = H // Hkv
    out = torch.empty(L, Hkv, G, D, dtype=torch.float32)
    qg = q.view(L, Hkv, G, D)
    for h in range(Hkv):
        keys = kernels_cpu.PackedWeight(k[:, h], dtype=k.dtype)                 # N = L positions, K = D
        qh = qg[:, h].contiguous()                                               # (L, G, D)
        for s0, e, hidden in _causal_blocks(L, H, q.device):
            rows = e - s0
            scores = kernels_cpu.linear(qh[s0:e].view(rows * G, D), keys, out_dtype=torch.float32, columns=e)
            scores.mul_(scale).view(rows, G, e).masked_fill_(hidden[:, None, :], float("-inf"))
            values = kernels_cpu.PackedWeight(v[:e, h].t(), dtype=v.dtype)        # N = D, K = e positions
            probs = torch.softmax(scores, dim=-1)
            out[s0:e, h] = kernels_cpu.linear(probs, values, out_dtype=torch.float32).view(rows, G, D)
    return out.view(L, H, D).to(q.dtype)


# Decode attention works on fixed chunks of CHUNK positions so that a query's result never
# depends on the other sequences of its batch (batch invariance, seeded sampling reproducible
# in any batch): every reduction over positions is either over one whole chunk (a fixed-size
# GEMM / row sum, the same kernel whatever the batch) or a sequential sum over chunks in index
# order, to which the all-masked chunks of a shorter sequence add exact zeros.
_CHUNK_TOKENS = 256
# dense_decode gathers and attends the sequences of a decode step in slices of about this many
# bytes of gathered keys + values, so that the two GEMMs read the pages from cache, not memory.
# Measured (SmolLM2-135M, bf16, batch 32 x 640 positions, this machine): 8 MB 25-30% faster per
# step than one gather of the whole batch; 4 MB about the same as 8 MB, 1 MB and 16 MB slower.
_SLICE_BYTES = 8 << 20


@dataclass
class DecodePlan:
    """Layout of one decode batch, computed once per step and shared by every layer.

    Queries with identical block-table rows (teacher forcing) form one group that shares one
    gather of its pages; an ordinary decode step has one query per group."""

    num_queries: int
    chunk: int                      # positions per chunk (a multiple of the page size)
    num_chunks: int
    pages: torch.Tensor             # (U, num_chunks * chunk // page_size) int64 page ids (padding: 0)
    bias: torch.Tensor              # (U, num_chunks, Qmax, 1, chunk) float32: 0 visible, -inf not
    order: torch.Tensor | None      # (N,) query order by group, None when every query is its own group
    group_rank: tuple[torch.Tensor, torch.Tensor] | None  # (group, rank) of the sorted queries
    queries_per_group: int          # Qmax


def rows_write_own_pages(block_table: torch.Tensor, seq_lens: torch.Tensor, page_size: int) -> bool:
    """No two query rows' last positions (the tokens a decode step writes) lie on one page: the
    rows are separate sequences, though they may share earlier, full pages (samples of one prompt
    share its prefill). Teacher forcing puts several queries of one sequence on a page."""
    n = block_table.shape[0]
    if n <= 1:
        return True
    last = ((seq_lens.to(torch.long) - 1) // page_size).clamp(0, block_table.shape[1] - 1)
    return torch.unique(block_table.gather(1, last.view(n, 1).to(block_table.device))).numel() == n


def plan_decode(cache: PagedKVCache, block_table: torch.Tensor, seq_lens: torch.Tensor) -> DecodePlan:
    N = block_table.shape[0]
    S = cache.page_size
    device = cache.device
    if seq_lens.shape != (N,):
        raise ValueError(f"block_table {tuple(block_table.shape)} and seq_lens {tuple(seq_lens.shape)} do not match")
    seq_lens = seq_lens.to(device=device, dtype=torch.long)
    max_len = int(seq_lens.max()) if N else 1
    max_pages = -(-max_len // S)
    if max_pages > block_table.shape[1]:
        raise ValueError(f"seq_lens need {max_pages} pages but block_table has {block_table.shape[1]}")
    chunk = S * -(-_CHUNK_TOKENS // S)
    num_chunks = max(1, -(-max_len // chunk))
    T = num_chunks * chunk
    tables = block_table[:, :max_pages].to(device=device, dtype=torch.long).clamp(0, cache.num_pages - 1)

    # Group queries sharing a block-table row (teacher forcing: many queries of one sequence).
    # Rows that write pages of their own are separate sequences, the ordinary decode step (samples
    # of one prompt share its first pages): each query its own group, no sort, sliced gathers.
    if N <= 1 or rows_write_own_pages(tables, seq_lens, S):
        unique_tables, order, group_rank, q_max = tables, None, None, 1
        lens = seq_lens[:, None]                                        # (U, 1)
    else:
        unique_tables, group = torch.unique(tables, dim=0, return_inverse=True)
        U = unique_tables.shape[0]
        counts = torch.bincount(group, minlength=U)
        order = torch.argsort(group, stable=True)
        group_sorted = group[order]
        rank = torch.arange(N, device=device) - (torch.cumsum(counts, 0) - counts)[group_sorted]
        q_max = int(counts.max())
        lens = torch.ones(U, q_max, dtype=torch.long, device=device)    # padding queries see 1 position
        lens[group_sorted, rank] = seq_lens[order]
        group_rank = (group_sorted, rank)
    U = unique_tables.shape[0]
    pages = torch.zeros(U, T // S, dtype=torch.long, device=device)
    pages[:, :max_pages] = unique_tables
    positions = torch.arange(T, device=device).view(1, num_chunks, 1, 1, chunk)
    visible = positions < lens.view(U, 1, q_max, 1, 1)
    bias = torch.zeros(visible.shape, dtype=torch.float32, device=device).masked_fill_(~visible, float("-inf"))
    return DecodePlan(N, chunk, num_chunks, pages, bias, order, group_rank, q_max)


def dense_decode(
    q: torch.Tensor,
    cache: PagedKVCache,
    layer: int,
    block_table: torch.Tensor,
    seq_lens: torch.Tensor,
    *,
    scale: float | None = None,
    plan: DecodePlan | None = None,
) -> torch.Tensor:
    """Each query attends to positions [0, seq_len) of its block table's pages.

    q: (N, H, D), block_table: (N, P) int page ids, seq_lens: (N,) int >= 1 -> (N, H, D).
    `plan`: `plan_decode(cache, block_table, seq_lens)`, built once per step for all layers
    (built here when not given). Computed in q.dtype with float32 softmax; the cache is read
    in its stored dtype (fp8 dequantized to q.dtype).
    """
    N, H, D = q.shape
    Hkv = cache.n_kv_heads
    G = check_gqa(H, Hkv)
    if D != cache.head_dim or block_table.shape[0] != N or seq_lens.shape != (N,):
        raise ValueError(
            f"q {tuple(q.shape)}, block_table {tuple(block_table.shape)}, seq_lens "
            f"{tuple(seq_lens.shape)} do not fit a cache of head_dim {cache.head_dim}"
        )
    if N == 0:
        return q.new_empty(N, H, D)
    if plan is None:
        plan = plan_decode(cache, block_table, seq_lens)
    elif plan.num_queries != N:
        raise ValueError(f"the decode plan is for {plan.num_queries} queries, got {N}")
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    U, q_max = plan.pages.shape[0], plan.queries_per_group
    T = plan.num_chunks * plan.chunk
    if plan.order is None:
        # Sequences in slices whose gathered pages stay in cache for the two GEMMs that read
        # them. Each query's math is the same whatever slice it falls in (the same per-matrix
        # GEMMs and per-row reductions; a slice of one gets _batched_matmul's batch-of-two
        # treatment as U == 1 always did), so the result stays batch invariant.
        per = max(1, _SLICE_BYTES // (2 * T * Hkv * D * cache.k.element_size()))
        if per >= U:
            k = _gather(cache, layer, plan.pages, values=False, dtype=q.dtype).view(U, T, Hkv * D)
            v = _gather(cache, layer, plan.pages, values=True, dtype=q.dtype).view(U, T, Hkv * D)
            return _attend(q.view(U, 1, H, D), k, v, plan, plan.bias, scale, G).view(N, H, D).to(q.dtype)
        out = torch.empty(N, H, D, dtype=q.dtype, device=q.device)
        qv = q.view(U, 1, H, D)
        for u0 in range(0, U, per):
            u1 = min(U, u0 + per)
            k = _gather(cache, layer, plan.pages[u0:u1], values=False, dtype=q.dtype).view(u1 - u0, T, Hkv * D)
            v = _gather(cache, layer, plan.pages[u0:u1], values=True, dtype=q.dtype).view(u1 - u0, T, Hkv * D)
            out[u0:u1] = _attend(qv[u0:u1], k, v, plan, plan.bias[u0:u1], scale, G).view(u1 - u0, H, D)
        return out
    k = _gather(cache, layer, plan.pages, values=False, dtype=q.dtype).view(U, T, Hkv * D)
    v = _gather(cache, layer, plan.pages, values=True, dtype=q.dtype).view(U, T, Hkv * D)
    group, rank = plan.group_rank
    q_groups = q.new_zeros(U, q_max, H, D)
    q_groups[group, rank] = q[plan.order]
    out_groups = torch.empty(U, q_max, H, D, dtype=torch.float32, device=q.device)
    step = max(1, _MAX_SCORE_ELEMENTS // (U * H * T))
    for c0 in range(0, q_max, step):
        c1 = min(q_max, c0 + step)
        out_groups[:, c0:c1] = _attend(q_groups[:, c0:c1], k, v, plan, plan.bias[:, :, c0:c1], scale, G)
    out = torch.empty(N, H, D, dtype=q.dtype, device=q.device)
    out[plan.order] = out_groups[group, rank].to(q.dtype)
    return out


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, plan: DecodePlan, bias: torch.Tensor,
            scale: float, G: int) -> torch.Tensor:
    """q (U, Qc, H, D) queries of U groups; k/v (U, T, Hkv*D) their pages; bias (U, nC, Qc, 1, C)
    -> (U, Qc, H, D) float32."""
    U, Qc, H, D = q.shape
    Hkv = H // G
    nC, C = plan.num_chunks, plan.chunk
    R = Qc * H
    # Block-diagonal queries: row (query, head) holds q only in its KV head's D columns, so one
    # GEMM against the pages' (position, Hkv*D) rows scores every head without reshuffling the
    # cache (3x the flops of per-head GEMMs, but the K rows are read once, contiguously).
    q_block = q.new_zeros(U, Qc, Hkv, G, Hkv, D)
    q_block.diagonal(dim1=2, dim2=4).copy_(q.view(U, Qc, Hkv, G, D).permute(0, 1, 3, 4, 2))
    k_chunks = k.view(U, nC, C, Hkv * D)
    scores = _batched_matmul(q_block.view(U, 1, R, Hkv * D), k_chunks.transpose(-1, -2))  # (U, nC, R, C)
    s = scores.float() if scores.dtype != torch.float32 else scores
    s.view(U, nC, Qc, H, C).mul_(scale).add_(bias)
    s.sub_(s.amax(dim=(1, 3), keepdim=True)).exp_()                  # max is exact in any order
    s.div_(_sum_chunks(s.sum(-1, keepdim=True), keepdim=True))                      # (U, 1, R, 1) softmax denominator
    p = s.to(k.dtype)
    out = _batched_matmul(p, v.view(U, nC, C, Hkv * D))              # (U, nC, R, Hkv*D)
    out = out.view(U, nC, Qc, Hkv, G, Hkv, D).diagonal(dim1=3, dim2=5)  # (U, nC, Qc, G, D, Hkv)
    return _sum_chunks(out).permute(0, 1, 4, 2, 3).reshape(U, Qc, H, D)


def _sum_chunks(x: torch.Tensor, *, keepdim: bool = False) -> torch.Tensor:
    """Sum over dim 1 (chunks) in float32, strictly in chunk order: torch.sum's cascade order
    depends on the length, which would make a sequence's result depend on its neighbours'."""
    acc = x[:, 0].float()
    for i in range(1, x.shape[1]):
        acc = acc + x[:, i]
    return acc.unsqueeze(1) if keepdim else acc


def _batched_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """torch.matmul, except that a single matrix product is computed as a batch of two: on the
    CPU, float32 matmul takes another code path (another summation order) for a batch of one."""
    batch = max(a.shape[:-2].numel(), b.shape[:-2].numel())
    if batch > 1:
        return torch.matmul(a, b)
    return torch.matmul(torch.cat([a, a]), torch.cat([b, b]))[:1]


def _gather(cache: PagedKVCache, layer: int, pages: torch.Tensor, *, values: bool, dtype: torch.dtype) -> torch.Tensor:
    """Keys (values) of `pages` (U, n) -> (U * n * page_size, Hkv, D) in `dtype` (fp8 dequantized),
    gathered into a buffer reused across calls (fresh multi-MB buffers page-fault every time)."""
    store = (cache.v if values else cache.k)[layer]
    S, Hkv, D = cache.page_size, cache.n_kv_heads, cache.head_dim
    flat = store.view(cache.num_pages, S * Hkv * D)
    n = pages.numel()
    buf = cache.scratch("v" if values else "k", n * S * Hkv * D, store.dtype).view(n, S * Hkv * D)
    torch.index_select(flat, 0, pages.reshape(-1), out=buf)
    out = buf.view(n * S, Hkv, D)
    if cache.is_fp8:
        scale = (cache.v_scale if values else cache.k_scale)[layer]
        return (out.float() * scale[:, None]).to(dtype)
    return out if out.dtype == dtype else out.to(dtype)
