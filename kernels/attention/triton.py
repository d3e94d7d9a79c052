"""Sparse decode attention as a Triton kernel: each query attends to the pages the indexer
selected for its KV head, with an online softmax and tl.dot. FP8 pages are loaded as fp8 and
dequantized in the kernel with the per-head scale (upcast only: quantization happens in torch,
since the interpreter's casts *to* fp8 are wrong). Same contract as reference.py.

One program per (query, KV head); the G query heads sharing that KV head are the rows of the
tile (padded to 16 for tl.dot), so each selected page is read once for all of them.

Run on the CPU with TRITON_INTERPRET=1 set before this module is imported.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from kernels.attention.dense import check_gqa
from kernels.kv_cache import PagedKVCache

_LOG2E = 1.4426950408889634


@triton.jit
def _sparse_decode_kernel(
    q_ptr, k_ptr, v_ptr, k_scale_ptr, v_scale_ptr, block_table_ptr, seq_lens_ptr, sel_ptr, out_ptr,
    stride_qn, stride_qh,
    stride_cp, stride_cs, stride_ch,  # k/v of one layer: (num_pages, PAGE_SIZE, Hkv, D), D contiguous
    stride_tn,
    stride_sn, stride_sh,
    stride_on, stride_oh,
    num_selected, qk_scale,
    G: tl.constexpr, G_PAD: tl.constexpr, D: tl.constexpr, D_PAD: tl.constexpr,
    PAGE_SIZE: tl.constexpr, BLOCK_T: tl.constexpr, DOT_DTYPE: tl.constexpr, INPUT_PRECISION: tl.constexpr,
):
    # tl.dot needs every tile dimension >= 16.
    tl.static_assert(G_PAD >= 16 and G_PAD >= G, "G_PAD must be >= 16 and cover the grouped heads")
    tl.static_assert(D_PAD >= 16 and D_PAD >= D, "D_PAD must be >= 16 and cover the head dim")
    tl.static_assert(BLOCK_T >= 16 and BLOCK_T >= PAGE_SIZE, "BLOCK_T must be >= 16 and hold a page")
    n = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1).to(tl.int64)

    # Phase 1: the G query heads of KV head h; scale folded in, in log2 units for exp2.
    g = tl.arange(0, G_PAD)
    d = tl.arange(0, D_PAD)
    d_mask = d < D
    q = tl.load(
        q_ptr + n * stride_qn + (h * G + g)[:, None] * stride_qh + d[None, :],
        mask=(g < G)[:, None] & d_mask[None, :], other=0.0,
    ).to(tl.float32)
    q = (q * qk_scale).to(DOT_DTYPE)
    k_scale = tl.load(k_scale_ptr + h)
    v_scale = tl.load(v_scale_ptr + h)
    seq_len = tl.load(seq_lens_ptr + n).to(tl.int64)

    m_i = tl.full([G_PAD], float("-inf"), tl.float32)  # running max (log2 units)
    l_i = tl.zeros([G_PAD], tl.float32)  # running softmax denominator
    acc = tl.zeros([G_PAD, D_PAD], tl.float32)
    t = tl.arange(0, BLOCK_T)

    # Phase 2: one selected page per iteration; -1 padding entries mask every token.
    for j in range(0, num_selected):
        page_idx = tl.load(sel_ptr + n * stride_sn + h * stride_sh + j).to(tl.int64)
        page = tl.load(block_table_ptr + n * stride_tn + tl.maximum(page_idx, 0)).to(tl.int64)
        pos = page_idx * PAGE_SIZE + t
        # page_idx = -1 gives pos < 0. (Vector comparisons only: the interpreter mis-types
        # `vector & scalar_bool` as int32.)
        t_mask = (t < PAGE_SIZE) & (pos >= 0) & (pos < seq_len)
        offs = page * stride_cp + t[:, None] * stride_cs + h * stride_ch + d[None, :]
        tile_mask = t_mask[:, None] & d_mask[None, :]
        # Dequantize on load (fp8 -> fp32 * scale; scale is 1 for non-fp8 caches).
        k = (tl.load(k_ptr + offs, mask=tile_mask, other=0.0).to(tl.float32) * k_scale).to(DOT_DTYPE)
        s = tl.dot(q, tl.trans(k), input_precision=INPUT_PRECISION)  # (G_PAD, BLOCK_T)
        s = tl.where(t_mask[None, :], s, float("-inf"))

        # Online softmax: rescale the running sums to the new max. While a row has seen no
        # visible token its max is -inf; subtract 0 instead to avoid inf - inf = NaN.
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.math.exp2(m_i - m_safe)
        p = tl.math.exp2(s - m_safe[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = (tl.load(v_ptr + offs, mask=tile_mask, other=0.0).to(tl.float32) * v_scale).to(DOT_DTYPE)
        acc = acc * alpha[:, None] + tl.dot(p.to(DOT_DTYPE), v, input_precision=INPUT_PRECISION)
        m_i = m_new

    # Phase 3: normalise and store the G real rows.
    out = acc / l_i[:, None]
    tl.store(
        out_ptr + n * stride_on + (h * G + g)[:, None] * stride_oh + d[None, :],
        out.to(out_ptr.dtype.element_ty),
        mask=(g < G)[:, None] & d_mask[None, :],
    )


def interpreted() -> bool:
    """True when this module's kernels run in the Triton interpreter (TRITON_INTERPRET=1)."""
    return type(_sparse_decode_kernel).__name__ == "InterpretedFunction"


_DOT_DTYPES = {torch.float32: tl.float32, torch.bfloat16: tl.bfloat16, torch.float16: tl.float16}


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
    """q (N, H, D), selected (N, Hkv, K) int32 -> (N, H, D) in q.dtype."""
    N, H, D = q.shape
    Hkv, S = cache.n_kv_heads, cache.page_size
    check_gqa(H, Hkv)
    if D != cache.head_dim:
        raise ValueError(f"q {tuple(q.shape)} does not fit a cache of {Hkv} KV heads x {cache.head_dim}")
    K = selected.shape[-1]
    if selected.shape != (N, Hkv, K) or block_table.shape[0] != N or seq_lens.shape != (N,):
        raise ValueError(
            f"selected {tuple(selected.shape)}, block_table {tuple(block_table.shape)}, seq_lens "
            f"{tuple(seq_lens.shape)} do not fit {N} queries x {Hkv} KV heads"
        )
    if q.dtype not in _DOT_DTYPES:
        raise ValueError(f"q dtype {q.dtype} not supported; use float32, bfloat16 or float16")
    # The interpreter also truncates instead of rounding when casting fp32 -> bf16/fp16, so
    # under TRITON_INTERPRET the kernel writes fp32 and torch rounds.
    out = torch.empty_like(q, dtype=torch.float32 if interpreted() else q.dtype)
    if N == 0:
        return out.to(q.dtype)
    q = q if q.stride(-1) == 1 else q.contiguous()
    block_table = block_table.to(torch.int32).contiguous()
    seq_lens = seq_lens.to(torch.int32).contiguous()
    selected = selected.to(torch.int32).contiguous()
    k, v = cache.k[layer], cache.v[layer]  # (num_pages, S, Hkv, D)
    assert k.stride() == v.stride() and k.stride(-1) == 1
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    G = H // Hkv
    # bf16/fp16 operands for tl.dot on a GPU (fp32 accumulation). The interpreter's tl.dot
    # multiplies bf16 tensors' raw bit patterns, so under TRITON_INTERPRET the dots run in fp32.
    dot_dtype = tl.float32 if interpreted() else _DOT_DTYPES[q.dtype]
    _sparse_decode_kernel[(N, Hkv)](
        q, k, v, cache.k_scale[layer], cache.v_scale[layer], block_table, seq_lens, selected, out,
        q.stride(0), q.stride(1),
        k.stride(0), k.stride(1), k.stride(2),
        block_table.stride(0),
        selected.stride(0), selected.stride(1),
        out.stride(0), out.stride(1),
        K, scale * _LOG2E,
        G=G, G_PAD=max(16, triton.next_power_of_2(G)), D=D, D_PAD=max(16, triton.next_power_of_2(D)),
        PAGE_SIZE=S, BLOCK_T=max(16, S), DOT_DTYPE=dot_dtype,
        # fp32 inputs: exact fp32 products (not TF32), so fp32 results match the fp32 reference.
        INPUT_PRECISION="ieee" if dot_dtype == tl.float32 else "tf32",
    )
    return out.to(q.dtype)
