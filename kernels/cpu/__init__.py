"""Native CPU kernels for the engine's decode path: a bf16-weight linear layer with fused
epilogues, RMSNorm, rope + paged-cache write, paged decode attention (dense and sparse), the
Quest page indexer, and a whole decoder layer in one call. The C units are beside this file
(common.h maps them); _loader.py builds, caches and loads them, and declares their ctypes types.
This module holds the Python wrappers: they check shapes and dtypes, then make one C call.

Why native: at decode a 135M model does ~20 small ops per layer, and torch's per-op cost
(dispatch, allocation, a fork/join per op) is larger than the math. The C code does each step in
one call, in float32 with a fixed summation order per output element, so results are batch
invariant (a row's output never depends on the other rows of the call). See
docs/architecture.md for where this sits in the engine.

`available()` is False, with the reason in `unavailable_reason()`, when no compiler is found, the
build fails, or TRIAGE_NATIVE_KERNELS=0; callers then use the torch implementations.
"""

from __future__ import annotations

import ctypes

import torch

from ._loader import DecodeLayerArgs, _lib, available, build_variant, cpu_flags, unavailable_reason

__all__ = [
    "DecodeLayout", "LayerWeights", "PackedWeight", "SparseDecodeLayout", "advise_huge", "available", "bf16_dot",
    "build_variant", "cpu_flags", "decode_layer", "decode_layer_scratch", "fp8_dequant", "fp8_quantize",
    "grouped_query_bounds", "linear", "page_scores", "paged_decode", "rms_norm", "rope_write", "select_from_scores",
    "select_pages", "simd_lanes", "sketch_intervals", "sketch_pages", "sketch_row_bytes", "sparse_decode",
    "stream_read_seconds", "unavailable_reason",
]

_DTYPE_CODES = {torch.float32: 0, torch.bfloat16: 1}
_KV_CODES = {torch.float32: 0, torch.bfloat16: 1}
if hasattr(torch, "float8_e4m3fn"):
    _KV_CODES[torch.float8_e4m3fn] = 2


def simd_lanes() -> int:
    """float32 lanes of the build's vector paths: 16 (AVX-512), 8 (AVX2 + FMA), 0 (plain C or unavailable)."""
    lib = _lib()
    return int(lib.tk_simd_lanes()) if lib is not None else 0


def bf16_dot() -> bool:
    """Whether the build multiplies bf16 activations by bf16 weights with AVX512-BF16's vdpbf16ps
    (twice the FMA rate; the same bits, see linear.c)."""
    lib = _lib()
    return bool(lib.tk_bf16_dot()) if lib is not None else False


def _threads() -> int:
    return torch.get_num_threads()


def _check(t: torch.Tensor, name: str, dtypes=(torch.float32, torch.bfloat16)) -> None:
    if t.device.type != "cpu" or not t.is_contiguous() or t.dtype not in dtypes:
        raise ValueError(f"{name} must be a contiguous CPU tensor of dtype {dtypes}, got "
                         f"{t.dtype} on {t.device}{'' if t.is_contiguous() else ' (not contiguous)'}")


class PackedWeight:
    """An (N, K) weight packed for `linear`, kept in bf16 (default) or float32 (`dtype`); the
    math is float32 either way. `silu_half` packs a fused [gate; up] weight (N = 2H) so that
    `linear` returns silu(gate) * up (N/2 columns)."""

    def __init__(self, weight: torch.Tensor, *, silu_half: bool = False, dtype: torch.dtype = torch.bfloat16) -> None:
        lib = _lib()
        assert lib is not None, "native kernels unavailable"
        if dtype not in _DTYPE_CODES:
            raise ValueError(f"packed weights are bfloat16 or float32, not {dtype}")
        w = weight.detach().to(dtype).contiguous()
        self.dtype = dtype
        self.out_features, self.in_features = w.shape
        half = self.out_features // 2 if silu_half else 0
        if silu_half and (self.out_features % 2 or half % 16):
            raise ValueError(f"a fused gate/up weight needs 2H rows with H a multiple of 16, got {self.out_features}")
        self.silu_half = half
        self.packed = torch.empty(lib.tk_linear_packed_numel(*w.shape), dtype=dtype)
        advise_huge(self.packed)
        lib.tk_linear_pack(w.data_ptr(), _DTYPE_CODES[dtype], self.out_features, self.in_features, half,
                           self.packed.data_ptr())

    @property
    def output_features(self) -> int:
        return self.silu_half or self.out_features


def linear(x: torch.Tensor, w: PackedWeight, *, out_dtype: torch.dtype | None = None,
           residual: torch.Tensor | None = None, columns: int | None = None) -> torch.Tensor:
    """x (..., K) @ W^T [-> silu(gate) * up] [+ residual] -> (..., N) in out_dtype (x's by default).
    `columns`: only the first `columns` outputs (N = columns; each is computed exactly as in the
    full product, the later panels are not read)."""
    _check(x, "x")
    K = x.shape[-1]
    if K != w.in_features:
        raise ValueError(f"x has {K} features, the weight expects {w.in_features}")
    N = w.output_features
    if columns is not None:
        if w.silu_half or not 0 <= columns <= N:
            raise ValueError(f"columns must be in [0, {N}] of a plain weight, got {columns}")
        N = columns
    M = x.numel() // K
    out = torch.empty(*x.shape[:-1], N, dtype=out_dtype or x.dtype)
    r_ptr, r_code = None, 0
    if residual is not None:
        _check(residual, "residual")
        if residual.shape != out.shape:
            raise ValueError(f"residual {tuple(residual.shape)} does not match the output {tuple(out.shape)}")
        r_ptr, r_code = residual.data_ptr(), _DTYPE_CODES[residual.dtype]
    if M and N:
        _lib().tk_linear(x.data_ptr(), _DTYPE_CODES[x.dtype], M, K, K, w.packed.data_ptr(), _DTYPE_CODES[w.dtype],
                         w.out_features if columns is None else N, w.silu_half, out.data_ptr(),
                         _DTYPE_CODES[out.dtype], N, r_ptr, r_code, N, _threads())
    return out


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    _check(x, "x")
    if weight.dtype != x.dtype or weight.shape != x.shape[-1:]:
        raise ValueError(f"weight {weight.dtype} {tuple(weight.shape)} does not fit x {x.dtype} {tuple(x.shape)}")
    D = x.shape[-1]
    out = torch.empty_like(x)
    _lib().tk_rms_norm(x.data_ptr(), _DTYPE_CODES[x.dtype], x.numel() // D, D, weight.contiguous().data_ptr(),
                       eps, out.data_ptr(), _threads())
    return out


def rope_write(qkv: torch.Tensor, n_heads: int, cos: torch.Tensor, sin: torch.Tensor, slots: torch.Tensor,
               cache, layer: int) -> torch.Tensor:
    """qkv (T, H + 2*Hkv, D): rotate-half rope on queries and keys with each token's cos/sin
    rows (T, D), keys and values into `cache` at `slots` (T,), page key bounds widened. The cache
    is stored in qkv's dtype, or fp8 with the layer's scales fixed (keys and values as they would
    be in qkv's dtype, quantized exactly as PagedKVCache.write does, saturations counted).
    -> roped q (T, H, D)."""
    T, W, D = qkv.shape
    Hkv = cache.n_kv_heads
    if W != n_heads + 2 * Hkv or D != cache.head_dim or cos.shape != (T, D) or qkv.dtype not in _DTYPE_CODES \
            or not (cache.k.dtype == qkv.dtype or cache.is_fp8):
        raise ValueError(f"qkv {tuple(qkv.shape)} {qkv.dtype}, cos {tuple(cos.shape)} do not fit {n_heads} heads "
                         f"and {cache!r}")
    if cache.is_fp8 and not cache.calibrated[layer]:
        raise ValueError(f"layer {layer}'s fp8 scales are not fixed yet: calibrate the cache first")
    qkv, cos, sin = qkv.contiguous(), cos.to(qkv.dtype).contiguous(), sin.to(qkv.dtype).contiguous()
    slots = slots.to(torch.int64).contiguous()
    q = torch.empty(T, n_heads, D, dtype=qkv.dtype)
    _lib().tk_rope_write(qkv.data_ptr(), _DTYPE_CODES[qkv.dtype], T, n_heads, Hkv, D, cos.data_ptr(), sin.data_ptr(),
                         slots.data_ptr(), q.data_ptr(), _layer_ptr(cache.k, layer), _layer_ptr(cache.v, layer),
                         _layer_ptr(cache.kbounds, layer), _sketch_ptr(cache, layer), cache.num_pages,
                         cache.page_size, *_fp8_args(cache, layer), _threads())
    return q


def advise_huge(t: torch.Tensor) -> None:
    """Ask for transparent huge pages behind `t` (madvise; call before its memory is first written:
    the pages are chosen when first touched). A no-op where the kernel offers none."""
    _lib().tk_advise_huge(t.data_ptr(), t.numel() * t.element_size())


def sketch_row_bytes(head_dim: int) -> int:
    """Bytes of one page-bound sketch row (indexer.c, "page-bound sketches"): 2 * head_dim 8-bit codes,
    padded to 16, then 8 float32 parameters (160 bytes at head_dim 64)."""
    return int(_lib().tk_sketch_row_bytes(head_dim))


def sketch_pages(kbounds: torch.Tensor, sketch: torch.Tensor, pages: torch.Tensor | None = None) -> None:
    """Rebuild the sketch rows ([L,] Hkv, num_pages, row bytes) uint8 of `pages` (all when None;
    no page twice) from the bounds ([L,] Hkv, num_pages, 2, D), float32 or bfloat16, of one layer
    or all: after every write to the bounds."""
    *lead, num_pages, two, D = kbounds.shape
    _check(kbounds, "kbounds")
    if sketch.dtype != torch.uint8 or sketch.shape != (*lead, num_pages, sketch_row_bytes(D)) \
            or not sketch.is_contiguous() or len(lead) not in (1, 2):
        raise ValueError(f"sketch {tuple(sketch.shape)} {sketch.dtype} does not fit bounds {tuple(kbounds.shape)}")
    if pages is not None:
        pages = pages.to(torch.int64).contiguous()
    L, Hkv = ([1] + lead)[-2:]
    _lib().tk_sketch_pages(kbounds.data_ptr(), _DTYPE_CODES[kbounds.dtype], L, Hkv, num_pages, D,
                           None if pages is None else pages.data_ptr(), 0 if pages is None else pages.numel(),
                           sketch.data_ptr(), _threads())


def sketch_intervals(q: torch.Tensor, cache, layer: int, block_table: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Test hook: (lo, hi), each (N, Hkv, P) float64, the interval the indexer's first pass puts
    around each block-table page's exact score (kernels.cpu.page_scores) from the layer's sketches;
    (-inf, inf) where it has no finite bound."""
    N, H, D = q.shape
    P = block_table.shape[1]
    q = _query_for_indexer(q)
    table = _int32(block_table)
    lo = torch.empty(N, cache.n_kv_heads, P, dtype=torch.float64)
    hi = torch.empty_like(lo)
    _lib().tk_sketch_intervals(q.data_ptr(), _DTYPE_CODES[q.dtype], N, H, cache.n_kv_heads, D,
                               _layer_ptr(cache.ksketch, layer), cache.num_pages, table.data_ptr(), P,
                               lo.data_ptr(), hi.data_ptr())
    return lo, hi


def _sketch_ptr(cache, layer: int):
    """The layer's page-bound sketches for the C calls, or None (the indexer then scores every page
    exactly; the writers keep none)."""
    sketch = getattr(cache, "ksketch", None)
    return None if sketch is None else _layer_ptr(sketch, layer)


def _fp8_args(cache, layer: int) -> tuple:
    """(kv dtype code, k scales, v scales, saturated counters) of one layer for the C calls."""
    if not cache.is_fp8:
        return _KV_CODES[cache.k.dtype], None, None, None
    return (_KV_CODES[cache.k.dtype], _layer_ptr(cache.k_scale, layer), _layer_ptr(cache.v_scale, layer),
            _layer_ptr(cache.saturated, layer))


def fp8_quantize(x: torch.Tensor, scale: float) -> tuple[torch.Tensor, int]:
    """(n, D) float32 -> ((n, D) float8_e4m3fn, saturated count), quantized as the native cache
    writes do (for tests: it must equal kernels.kv_cache.fp8_quantize)."""
    x = x.to(torch.float32).contiguous()
    if x.dim() != 2:
        raise ValueError(f"x must be (n, D), got {tuple(x.shape)}")
    out = torch.empty(x.shape, dtype=torch.uint8)
    saturated = _lib().tk_fp8_quantize(x.data_ptr(), x.shape[0], x.shape[1], scale, out.data_ptr())
    return out.view(torch.float8_e4m3fn), int(saturated)


class DecodeLayout:
    """A decode step's block table and lengths checked and laid out once for every layer."""

    sparse_K = 0  # (dense attention)

    def __init__(self, cache, block_table: torch.Tensor, seq_lens: torch.Tensor) -> None:
        self.block_table = block_table.to(torch.int32).clamp(0, cache.num_pages - 1).contiguous()
        self.seq_lens = _int32(seq_lens)
        n, pages = self.block_table.shape
        if self.seq_lens.shape != (n,):
            raise ValueError(f"block_table {tuple(block_table.shape)} and seq_lens {tuple(seq_lens.shape)} do not match")
        if n and (int(self.seq_lens.min()) < 1 or int(self.seq_lens.max()) > pages * cache.page_size):
            raise ValueError(f"seq_lens must be in [1, {pages * cache.page_size}] for a block table of {pages} "
                             f"pages, got {self.seq_lens.tolist()}")


class SparseDecodeLayout(DecodeLayout):
    """DecodeLayout for sparse attention: decode_layer runs the Quest indexer (select_pages) and
    sparse_decode instead of paged_decode, with these settings: for the same queries, the same
    pages and attention output as the per-op SparseAttention path."""

    def __init__(self, cache, block_table: torch.Tensor, seq_lens: torch.Tensor, *, budget: int, sink_pages: int,
                 local_pages: int) -> None:
        from kernels.indexer.reference import num_selected_pages

        super().__init__(cache, block_table, seq_lens)
        P = self.block_table.shape[1]
        self.sparse_K = min(num_selected_pages(budget, cache.page_size, P), P)
        self.sink_pages, self.local_pages = sink_pages, local_pages
        self.selected = torch.empty(self.block_table.shape[0], cache.n_kv_heads, max(1, self.sparse_K),
                                    dtype=torch.int32)


def fp8_dequant(codes: torch.Tensor, scale: float) -> torch.Tensor:
    """(n, D) float8_e4m3fn (or its uint8 codes) -> (n, D) float32 times `scale`, through the
    attention kernels' own row loads (for tests: it must equal torch's `.float() * scale`)."""
    codes = codes.view(torch.uint8).contiguous()
    if codes.dim() != 2:
        raise ValueError(f"codes must be (n, D), got {tuple(codes.shape)}")
    out = torch.empty(codes.shape, dtype=torch.float32)
    _lib().tk_fp8_dequant(codes.data_ptr(), codes.shape[0], codes.shape[1], scale, out.data_ptr())
    return out


def paged_decode(q: torch.Tensor, cache, layer: int, block_table: torch.Tensor | None = None,
                 seq_lens: torch.Tensor | None = None, *, scale: float, layout: DecodeLayout | None = None) -> torch.Tensor:
    """Dense decode attention over the paged cache: q (N, H, D) -> (N, H, D) in q.dtype.
    Pass `layout` (built once per step) or block_table (N, P) and seq_lens (N,)."""
    _check(q, "q")
    N, H, D = q.shape
    if H % cache.n_kv_heads or D != cache.head_dim:
        raise ValueError(f"q {tuple(q.shape)} does not fit {cache!r}")
    if layout is None:
        layout = DecodeLayout(cache, block_table, seq_lens)
    bt = layout.block_table
    if bt.shape[0] != N:
        raise ValueError(f"{N} queries for a layout of {bt.shape[0]}")
    out = torch.empty_like(q)
    fp8 = cache.is_fp8
    _lib().tk_paged_decode(q.data_ptr(), _DTYPE_CODES[q.dtype], N, H, cache.n_kv_heads, D,
                           _layer_ptr(cache.k, layer), _layer_ptr(cache.v, layer), _KV_CODES[cache.k.dtype],
                           cache.page_size, bt.data_ptr(), bt.shape[1], layout.seq_lens.data_ptr(), scale,
                           _layer_ptr(cache.k_scale, layer) if fp8 else None,
                           _layer_ptr(cache.v_scale, layer) if fp8 else None, out.data_ptr(), _threads())
    return out


def sparse_decode(q: torch.Tensor, cache, layer: int, block_table: torch.Tensor, seq_lens: torch.Tensor,
                  selected: torch.Tensor, *, scale: float | None = None) -> torch.Tensor:
    """kernels.attention.reference.sparse_decode reading the selected pages in place: q (N, H, D),
    selected (N, Hkv, K) int32 logical pages (-1 = none) -> (N, H, D) in q.dtype. Each (query, KV
    head) runs the dense kernel's computation over its selected pages only. Other dtypes (e.g.
    float16) go to the reference."""
    if q.dtype not in _DTYPE_CODES or cache.k.dtype not in _KV_CODES:
        from kernels.attention.reference import sparse_decode as reference

        return reference(q, cache, layer, block_table, seq_lens, selected, scale=scale)
    q = q.contiguous()
    _check(q, "q")
    N, H, D = q.shape
    Hkv = cache.n_kv_heads
    if H % Hkv or D != cache.head_dim:
        raise ValueError(f"q {tuple(q.shape)} does not fit {cache!r}")
    K = selected.shape[-1]
    if selected.shape != (N, Hkv, K):
        raise ValueError(f"selected must be (N={N}, Hkv={Hkv}, K), got {tuple(selected.shape)}")
    table = _int32(block_table)
    lens = _int32(seq_lens)
    if table.shape[0] != N or lens.shape != (N,):
        raise ValueError(f"block_table {tuple(block_table.shape)} and seq_lens {tuple(seq_lens.shape)} do not "
                         f"fit {N} queries")
    sel = _int32(selected)
    if sel.numel() and int(sel.max()) >= table.shape[1]:
        raise ValueError(f"selected pages reach {int(sel.max())}, past the block table's {table.shape[1]} pages")
    scale = 1.0 / D ** 0.5 if scale is None else scale
    out = torch.empty_like(q)
    duplicates = torch.zeros(1, dtype=torch.int32)
    fp8 = cache.is_fp8
    _lib().tk_sparse_decode(q.data_ptr(), _DTYPE_CODES[q.dtype], N, H, Hkv, D, _layer_ptr(cache.k, layer),
                            _layer_ptr(cache.v, layer), _KV_CODES[cache.k.dtype], cache.page_size, cache.num_pages,
                            table.data_ptr(), table.shape[1], lens.data_ptr(), sel.data_ptr(), K, scale,
                            _layer_ptr(cache.k_scale, layer) if fp8 else None,
                            _layer_ptr(cache.v_scale, layer) if fp8 else None, out.data_ptr(), duplicates.data_ptr(),
                            _threads())
    if int(duplicates):
        raise ValueError("selected lists a page twice for some query and KV head; the indexer never does "
                         "(kernels.attention.reference.sparse_decode would attend it twice)")
    return out


class LayerWeights:
    """One Llama decoder layer's weights packed for decode_layer (bf16)."""

    def __init__(self, *, wqkv, wo, w13, w2, attention_norm, ffn_norm, eps: float, n_heads: int,
                 n_kv_heads: int, head_dim: int, layer: int) -> None:
        self.wqkv, self.wo = PackedWeight(wqkv), PackedWeight(wo)
        self.w13, self.w2 = PackedWeight(w13, silu_half=True), PackedWeight(w2)
        self.attention_norm = attention_norm.detach().to(torch.bfloat16).contiguous()
        self.ffn_norm = ffn_norm.detach().to(torch.bfloat16).contiguous()
        self.eps, self.n_heads, self.n_kv_heads, self.head_dim = float(eps), n_heads, n_kv_heads, head_dim
        self.hidden = self.w13.output_features
        self.layer = layer


def decode_layer(x: torch.Tensor, w: LayerWeights, cos: torch.Tensor, sin: torch.Tensor, slots: torch.Tensor, cache,
                 layout: DecodeLayout, scratch: torch.Tensor) -> None:
    """One decoder layer of a bf16 decode step, in place on x (T, dim), in one native call:
    rms_norm, linear (qkv), rope_write, attention (paged_decode; or, for a SparseDecodeLayout,
    select_pages then sparse_decode), linear (wo) + residual, rms_norm, linear (gate/up with silu)
    and linear (w2) + residual, composed in C. The cache is bf16, or fp8 with its scales fixed.
    cos/sin (T, D) bf16, slots (T,) int64; scratch from decode_layer_scratch()."""
    T, dim = x.shape
    H, Hkv, D = w.n_heads, w.n_kv_heads, w.head_dim
    if cache.is_fp8 and not cache.calibrated[w.layer]:
        raise ValueError(f"layer {w.layer}'s fp8 scales are not fixed yet: calibrate the cache first")
    kv_dtype, k_scale, v_scale, saturated = _fp8_args(cache, w.layer)
    args = DecodeLayerArgs(
        x=x.data_ptr(), T=T, cos_t=cos.data_ptr(), sin_t=sin.data_ptr(), slots=slots.data_ptr(),
        scratch=scratch.data_ptr(), nthreads=_threads(),
        dim=dim, hidden=w.hidden, H=H, Hkv=Hkv, D=D, eps=w.eps,
        attn_norm_w=w.attention_norm.data_ptr(), ffn_norm_w=w.ffn_norm.data_ptr(), wqkv=w.wqkv.packed.data_ptr(),
        wo=w.wo.packed.data_ptr(), w13=w.w13.packed.data_ptr(), w2=w.w2.packed.data_ptr(),
        k_cache=_layer_ptr(cache.k, w.layer), v_cache=_layer_ptr(cache.v, w.layer),
        kbounds=_layer_ptr(cache.kbounds, w.layer), ksketch=_sketch_ptr(cache, w.layer), num_pages=cache.num_pages,
        page_size=cache.page_size, kv_dtype=kv_dtype, k_scale=k_scale, v_scale=v_scale, saturated=saturated,
        block_table=layout.block_table.data_ptr(), bt_stride=layout.block_table.shape[1],
        seq_lens=layout.seq_lens.data_ptr(), scale=1.0 / D ** 0.5, sparse_K=layout.sparse_K,
        sink=getattr(layout, "sink_pages", 0), local=getattr(layout, "local_pages", 0),
        selected=layout.selected.data_ptr() if layout.sparse_K else None,
    )
    _lib().tk_decode_layer(ctypes.byref(args))


def decode_layer_scratch(T: int, dim: int, n_heads: int, n_kv_heads: int, head_dim: int, hidden: int) -> torch.Tensor:
    return torch.empty(T * (2 * dim + (n_heads + 2 * n_kv_heads) * head_dim + 2 * n_heads * head_dim + hidden),
                       dtype=torch.bfloat16)


def page_scores(q: torch.Tensor, kbounds: torch.Tensor, block_table: torch.Tensor,
                max_pages: int | None = None) -> torch.Tensor:
    """kernels.indexer.reference.page_scores with the page rows read in place instead of
    gathered: q (N, H, D); kbounds (Hkv, num_pages, 2, D) float32 or bfloat16 (a bf16 cache's
    exact bounds, widened as read; other dtypes go to the reference); block_table (N, P) ->
    (N, Hkv, P') float32, P' = max_pages or P. Each score is the same dot product of length 2D as
    the reference's, summed in a fixed order of its own (equal to float32 rounding)."""
    if not kbounds.is_contiguous() or kbounds.device.type != "cpu":
        raise ValueError(f"kbounds must be a contiguous CPU tensor, got {kbounds.dtype} on {kbounds.device}")
    N = q.shape[0]
    Hkv, num_pages, two, D = kbounds.shape
    P = block_table.shape[1] if max_pages is None else max_pages
    if block_table.dim() != 2 or block_table.shape[0] != N or not 0 <= P <= block_table.shape[1]:
        raise ValueError(f"block_table {tuple(block_table.shape)} does not fit {N} queries and {P} pages")
    if q.dim() != 3 or q.shape[-1] != D or two != 2 or q.shape[1] % Hkv:
        raise ValueError(f"q {tuple(q.shape)} does not fit kbounds {tuple(kbounds.shape)}")
    if kbounds.dtype not in _DTYPE_CODES:  # e.g. a float16 cache's bounds: the reference widens them
        from kernels.indexer.reference import page_scores as reference

        return reference(q, kbounds, block_table, max_pages)
    q = _query_for_indexer(q)
    table = _int32(block_table)
    out = torch.empty(N, Hkv, P, dtype=torch.float32)
    if N and P:
        _lib().tk_page_scores(q.data_ptr(), _DTYPE_CODES[q.dtype], N, q.shape[1], Hkv, D, kbounds.data_ptr(),
                              _DTYPE_CODES[kbounds.dtype], num_pages, table.data_ptr(), table.shape[1], P,
                              out.data_ptr(), _threads())
    return out


def _query_for_indexer(q: torch.Tensor) -> torch.Tensor:
    """q as the native indexer reads it: contiguous float32 or bf16 (others widened to float32,
    as grouped_query_bounds does first)."""
    return (q if q.dtype in _DTYPE_CODES else q.float()).contiguous()


def grouped_query_bounds(q: torch.Tensor, n_kv_heads: int) -> torch.Tensor:
    """kernels.indexer.reference.grouped_query_bounds as the native indexer computes it (the G
    heads added in order in float32; equal to the reference to float32 rounding): q (N, H, D) ->
    (N, Hkv, 2, D) float32."""
    N, H, D = q.shape
    if H % n_kv_heads:
        raise ValueError(f"{H} query heads do not group over {n_kv_heads} KV heads")
    q = _query_for_indexer(q)
    out = torch.empty(N, n_kv_heads, 2, D, dtype=torch.float32)
    if out.numel():
        _lib().tk_group_query_bounds(q.data_ptr(), _DTYPE_CODES[q.dtype], N, H, n_kv_heads, D, out.data_ptr())
    return out


def select_from_scores(scores: torch.Tensor, seq_lens: torch.Tensor, *, page_size: int, budget: int,
                       sink_pages: int, local_pages: int, num_pages_out: int | None = None) -> torch.Tensor:
    """kernels.indexer.reference.select_from_scores in one native pass per (query, KV head): the
    same pages, the same order, the same -1 padding (a heap of the K best keys instead of ~15
    torch ops over the whole score tensor)."""
    from kernels.indexer.reference import num_selected_pages

    N, Hkv, P = scores.shape
    K = num_selected_pages(budget, page_size, P) if num_pages_out is None else num_pages_out
    lens = _int32(seq_lens)
    if lens.shape != (N,):
        raise ValueError(f"seq_lens {tuple(seq_lens.shape)} does not fit scores {tuple(scores.shape)}")
    K = min(K, P)  # the reference's width: top-k of at most P pages
    sc = scores.float().contiguous()
    out = torch.empty(N, Hkv, K, dtype=torch.int32)
    if out.numel():
        _lib().tk_select_pages(sc.data_ptr(), N, Hkv, P, lens.data_ptr(), page_size, sink_pages, local_pages, K,
                               out.data_ptr(), _threads())
    return out


def select_pages(q: torch.Tensor, cache, layer: int, block_table: torch.Tensor, seq_lens: torch.Tensor, *,
                 budget: int, sink_pages: int, local_pages: int) -> torch.Tensor:
    """kernels.indexer.reference.select_pages in one native call: page_scores and
    select_from_scores fused per (query, KV head), the scores in a per-thread buffer, pages past a
    sequence's end not scored. The same scores as page_scores bit for bit, so the same pages (tested). Bounds in
    a dtype the native code does not read (float16) go the reference's way."""
    from kernels.indexer.reference import num_selected_pages

    kbounds = cache.kbounds  # (the layer's rows by offset: no view per call, this is on every decode step)
    if kbounds.dtype not in _DTYPE_CODES or kbounds.device.type != "cpu":
        from kernels.indexer.reference import select_pages as reference

        return reference(q, cache, layer, block_table, seq_lens, budget=budget, sink_pages=sink_pages,
                         local_pages=local_pages, scorer=page_scores, chooser=select_from_scores)
    N, H, D = q.shape
    L, Hkv, num_pages, two, Dk = kbounds.shape
    if D != Dk or H % Hkv:
        raise ValueError(f"q {tuple(q.shape)} does not fit {cache!r}")
    if block_table.dim() != 2 or block_table.shape[0] != N or seq_lens.shape != (N,):
        raise ValueError(f"block_table {tuple(block_table.shape)} and seq_lens {tuple(seq_lens.shape)} do not fit "
                         f"{N} queries")
    P = block_table.shape[1]
    K = min(num_selected_pages(budget, cache.page_size, P), P)  # the reference's width
    out = torch.empty(N, Hkv, K, dtype=torch.int32)
    kb_ptr = _layer_ptr(kbounds, layer)  # (checks the layer, as kbounds[layer] would)
    if out.numel():
        q = _query_for_indexer(q)
        table = _int32(block_table)
        lens = _int32(seq_lens)
        _lib().tk_index_pages(q.data_ptr(), _DTYPE_CODES[q.dtype], N, H, Hkv, D, kb_ptr,
                              _DTYPE_CODES[kbounds.dtype], _sketch_ptr(cache, layer), num_pages, table.data_ptr(),
                              P, P, lens.data_ptr(),
                              cache.page_size, sink_pages, local_pages, K, out.data_ptr(), _threads())
    return out


def _int32(t: torch.Tensor) -> torch.Tensor:
    """t as contiguous int32 (itself when it already is: the common case costs no copy)."""
    return t if t.dtype == torch.int32 and t.is_contiguous() else t.to(torch.int32).contiguous()


def _layer_ptr(t: torch.Tensor, layer: int) -> int:
    """The address of t[layer] (a cache tensor, one contiguous slab per layer) without making the
    view; layer indexes as t[layer] would (negative from the end, IndexError past it)."""
    n = t.shape[0]
    if not -n <= layer < n:
        raise IndexError(f"layer {layer} is out of range for a cache of {n} layers")
    return t.data_ptr() + (layer % n) * t.stride(0) * t.element_size()


def stream_read_seconds(tensors: list[torch.Tensor], *, repeats: int = 3) -> float:
    """Best time to read every byte of `tensors` once with all threads (the memory-bandwidth
    bound of a step that streams them)."""
    import time

    lib = _lib()
    best = float("inf")
    for _ in range(repeats + 1):  # the first pass warms the TLB
        t0 = time.perf_counter()
        for t in tensors:
            lib.tk_stream_read(t.data_ptr(), t.numel() * t.element_size(), _threads())
        best = min(best, time.perf_counter() - t0)
    return best
