"""Paged KV cache shared by every attention implementation.

Layout (docs/contracts.md):

    k, v        (L, num_pages, page_size, Hkv, D)  storage dtype: the compute dtype, or
                                                   torch.float8_e4m3fn for kv_cache_dtype="fp8_e4m3"
    k_scale,    (L, Hkv) float32                   dequantized = stored.float() * scale
    v_scale                                        (ones for "auto")
    kmin, kmax  (L, num_pages, Hkv, D)             per-page elementwise bounds of the keys as the
                bounds_dtype                       attention reads them (dequantized); views into
                                                   `kbounds` (L, Hkv, num_pages, 2, D) so that the
                                                   indexer reads both bounds of a page and KV head
                                                   as one contiguous row.

The bounds are kept in the keys' own dtype (`bounds_dtype`): the minimum and maximum of bf16
(fp16, fp32) keys are bf16 (fp16, fp32) values, so this is exact, and the indexer, which reads
one bounds row per page of every sequence, moves half the bytes it would in float32. An fp8
cache keeps float32 bounds of the dequantized keys (stored code * scale is not an fp8 value).

On the CPU with the native kernels, the cache also keeps `ksketch` (L, Hkv, num_pages, R) uint8:
an 8-bit sketch of every bounds row with its error bound (kernels/cpu/indexer.c, "page-bound
sketches"). The native indexer reads it in a first pass and scores exactly only the pages the
sketch cannot rule out: the same selection from 160 bytes per page and KV head instead of a
512-byte float32 bounds row (head dim 64). Every writer of the bounds rebuilds the sketch rows
of the pages it touched (write, reset_pages here; rope_write and decode_layer in C). By default
only float32 bounds (fp32 and fp8 caches) get sketches: a sketch row spans three cache lines, a
float32 bounds row eight, a bf16 one four, and on bf16 rows the first pass's extra work eats the
saving (measured: docs/performance.md, "What each indexer step is worth").
`page_sketches=True` sketches bf16 bounds too, `False` keeps none (every page scored exactly).

A slot is `page_id * page_size + offset`. The engine owns page allocation; it calls
`reset_pages` when it hands pages to a sequence, so the bounds start empty (+inf / -inf), and
`snapshot_bounds` / `restore_bounds` when two passes write the same pages (teacher forcing
under two settings of one cache layout: each pass starts from the bounds the prefill left).

FP8 scale policy (per layer and KV head, computed from the values written)
--------------------------------------------------------------------------
e4m3 has ~2 significant decimal digits at every magnitude between 2**-6 and 448, so a scale
only has to put the largest value near (not above) 448; headroom costs precision only for
values that fall into the subnormal range. A scale therefore is fixed once per layer and
then never changes: changing it would require re-quantizing pages already written, and would
make a request's numbers depend on what other requests wrote before it.

* `calibrate(layer, k, v)` fixes the scales of a layer from representative keys/values:
  scale = headroom * amax / 448 per KV head. The engine should call it once per layer at
  start-up on a fixed calibration prompt, so that results are reproducible whatever order
  requests arrive in (vLLM's on-the-fly calibration does the same).
* Otherwise the first `write` to a layer calibrates it from the values being written.
* Values beyond the calibrated range saturate at +-448 * scale (never inf / NaN).
  `saturated` counts saturated elements per (layer, KV head), so a caller can tell.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kernels import cpu as kernels_cpu

FP8_DTYPE = torch.float8_e4m3fn
FP8_MAX = 448.0  # largest finite float8_e4m3fn
# Scale floor so an all-zero calibration batch cannot produce a zero scale.
_MIN_AMAX = 1e-6
# Writes of up to this many tokens update the page key bounds in place (see write()).
_DIRECT_BOUNDS_MAX_TOKENS = 128


def fp8_quantize(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Quantize `x` (..., Hkv, D) with per-head `scale` (Hkv,) to float8_e4m3fn, saturating."""
    scaled = x.float() / scale[:, None]
    return scaled.clamp_(-FP8_MAX, FP8_MAX).to(FP8_DTYPE)


def fp8_dequantize(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Inverse of fp8_quantize: (..., Hkv, D) float8 -> float32."""
    return x.float() * scale[:, None]


@dataclass(frozen=True)
class BoundsSnapshot:
    """The key bounds (and their sketches) of some pages, as `PagedKVCache.snapshot_bounds` copied
    them."""

    pages: torch.Tensor            # (n,) long page ids
    kbounds: torch.Tensor          # (L, Hkv, n, 2, D) bounds_dtype
    ksketch: torch.Tensor | None   # (L, Hkv, n, R) uint8; None when the cache keeps no sketches


class PagedKVCache:
    def __init__(
        self,
        *,
        num_layers: int,
        num_pages: int,
        page_size: int,
        n_kv_heads: int,
        head_dim: int,
        dtype: torch.dtype,
        kv_cache_dtype: str = "auto",
        device: str | torch.device = "cpu",
        fp8_headroom: float = 2.0,
        page_sketches: bool | None = None,
    ) -> None:
        if kv_cache_dtype not in ("auto", "fp8_e4m3"):
            raise ValueError(f"kv_cache_dtype must be 'auto' or 'fp8_e4m3', got {kv_cache_dtype!r}")
        if fp8_headroom < 1.0:
            raise ValueError(f"fp8_headroom must be >= 1, got {fp8_headroom}")
        self.num_layers = num_layers
        self.num_pages = num_pages
        self.page_size = page_size
        self.n_kv_heads = n_kv_heads
        self.head_dim = head_dim
        self.dtype = dtype
        self.kv_cache_dtype = kv_cache_dtype
        self.device = torch.device(device)
        self.fp8_headroom = float(fp8_headroom)
        self.is_fp8 = kv_cache_dtype == "fp8_e4m3"
        self.storage_dtype = FP8_DTYPE if self.is_fp8 else dtype
        # Exact in the keys' dtype (see the module docstring); float32 for dequantized fp8 keys.
        self.bounds_dtype = torch.float32 if self.is_fp8 else dtype

        shape = (num_layers, num_pages, page_size, n_kv_heads, head_dim)
        self.k = self._alloc(shape, self.storage_dtype).zero_()
        self.v = self._alloc(shape, self.storage_dtype).zero_()
        self.k_scale = torch.ones(num_layers, n_kv_heads, dtype=torch.float32, device=self.device)
        self.v_scale = torch.ones(num_layers, n_kv_heads, dtype=torch.float32, device=self.device)
        # Per layer: have the fp8 scales been fixed? (Host-side list: no device sync to read.)
        self.calibrated = [not self.is_fp8] * num_layers
        self.saturated = torch.zeros(num_layers, n_kv_heads, dtype=torch.int64, device=self.device)

        # Head-major so that one KV head's bounds of a page are one contiguous row of 2*D floats
        # ([kmin | kmax]): the indexer reads one row per (head, page).
        self.kbounds = self._alloc((num_layers, n_kv_heads, num_pages, 2, head_dim), self.bounds_dtype)
        self.kmin = self.kbounds[:, :, :, 0, :].transpose(1, 2)  # (L, P, Hkv, D) view
        self.kmax = self.kbounds[:, :, :, 1, :].transpose(1, 2)  # (L, P, Hkv, D) view
        self.kmin.fill_(float("inf"))
        self.kmax.fill_(float("-inf"))
        self.ksketch: torch.Tensor | None = None
        if page_sketches is None:  # (see the module docstring: they pay for float32 bounds rows)
            page_sketches = self.bounds_dtype == torch.float32
        if page_sketches and self.device.type == "cpu" and self.bounds_dtype in (torch.float32, torch.bfloat16) \
                and kernels_cpu.available():
            self.ksketch = self._alloc((num_layers, n_kv_heads, num_pages, kernels_cpu.sketch_row_bytes(head_dim)),
                                       torch.uint8)
            kernels_cpu.sketch_pages(self.kbounds, self.ksketch)  # (empty bounds: every page "score exactly")
        self._scratch: dict[str, torch.Tensor] = {}

    def _alloc(self, shape: tuple, dtype: torch.dtype) -> torch.Tensor:
        """An uninitialised tensor; on the CPU, backed by transparent huge pages where the kernel
        allows: the indexer and attention read rows of random pages all over the cache, and with
        4 KiB pages nearly every row read would also miss the TLB."""
        t = torch.empty(shape, dtype=dtype, device=self.device)
        if self.device.type == "cpu" and kernels_cpu.available():
            kernels_cpu.advise_huge(t)
        return t

    # ------------------------------------------------------------------ bookkeeping
    @property
    def num_slots(self) -> int:
        return self.num_pages * self.page_size

    def reset_pages(self, page_ids: torch.Tensor) -> None:
        """Forget the key bounds of pages being (re)allocated and zero their keys and values.
        Attention only uses positions < seq_len, all of which the new owner writes, but a
        whole-page implementation still multiplies the masked rows by a zero probability, and
        0 * NaN is NaN: a page once written by a run that produced NaN or inf (a broken kernel,
        the thing this product looks for) must not poison the next sequence that gets it."""
        page_ids = self._page_ids(page_ids)
        if page_ids.numel() == 0:
            return
        self.kmin[:, page_ids] = float("inf")
        self.kmax[:, page_ids] = float("-inf")
        self._resketch(None, page_ids)
        self.k.view(torch.uint8)[:, page_ids] = 0  # all-zero bits: 0.0 in every storage dtype
        self.v.view(torch.uint8)[:, page_ids] = 0

    def _page_ids(self, page_ids) -> torch.Tensor:
        """Page ids as a flat long tensor, refused unless all lie in the pool (torch indexing would
        wrap -1 to the last page and touch the wrong one)."""
        page_ids = torch.as_tensor(page_ids, dtype=torch.long, device=self.device).reshape(-1)
        if bool(((page_ids < 0) | (page_ids >= self.num_pages)).any()):
            raise ValueError(f"page ids must be in [0, {self.num_pages}), got {page_ids.tolist()[:20]}")
        return page_ids

    def copy_pages(self, src: torch.Tensor, dst: torch.Tensor) -> None:
        """Make pages `dst` exact copies of pages `src` in every layer: keys, values, key bounds
        and their sketches (the engine copies a shared prompt's last, partly filled page into each
        sample's own page). Pages must not appear in both."""
        src, dst = self._page_ids(src), self._page_ids(dst)
        if src.numel() != dst.numel():
            raise ValueError(f"copy_pages needs as many destinations as sources, got {src.numel()} and {dst.numel()}")
        if src.numel() == 0:
            return
        if bool(torch.isin(dst, src).any()) or torch.unique(dst).numel() != dst.numel():
            raise ValueError("copy_pages: destination pages must be distinct and not among the sources")
        k, v = self.k.view(torch.uint8), self.v.view(torch.uint8)  # (bytes: float8 indexing is not in every torch)
        k[:, dst] = k[:, src]
        v[:, dst] = v[:, src]
        self.kbounds[:, :, dst] = self.kbounds[:, :, src]
        if self.ksketch is not None:
            self.ksketch[:, :, dst] = self.ksketch[:, :, src]

    def snapshot_bounds(self, page_ids: torch.Tensor) -> BoundsSnapshot:
        """A copy of the key bounds and sketches of pages `page_ids`, for `restore_bounds`. Bounds
        only grow as keys are written, so a caller that runs two passes writing the same slots (the
        engine's teacher-forced divergence under two settings) puts them back between the passes;
        keys and values need no copy, since each pass rewrites every slot before reading it."""
        pages = self._page_ids(page_ids)  # (indexing by a tensor of ids copies: no clone needed)
        sketch = None if self.ksketch is None else self.ksketch[:, :, pages]
        return BoundsSnapshot(pages, self.kbounds[:, :, pages], sketch)

    def restore_bounds(self, snapshot: BoundsSnapshot) -> None:
        """Put the key bounds and sketches of the snapshot's pages back exactly as they were when
        it was taken (other pages, keys and values untouched)."""
        L, Hkv, _, _, D = self.kbounds.shape
        n = snapshot.pages.numel()
        if (tuple(snapshot.kbounds.shape) != (L, Hkv, n, 2, D) or snapshot.kbounds.dtype != self.bounds_dtype
                or (snapshot.ksketch is None) != (self.ksketch is None)):
            raise ValueError("restore_bounds: the snapshot was taken from a cache of another layout")
        self.kbounds[:, :, snapshot.pages] = snapshot.kbounds
        if self.ksketch is not None:
            self.ksketch[:, :, snapshot.pages] = snapshot.ksketch

    def calibrate(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> None:
        """Fix the fp8 scales of `layer` from sample keys/values (N, Hkv, D). No-op for "auto".
        Call before anything is written to the layer (stored pages are not re-quantized)."""
        if not self.is_fp8:
            return
        self._check_kv(k, v)
        headroom = self.fp8_headroom / FP8_MAX
        self.k_scale[layer] = k.detach().float().abs().amax(dim=(0, 2)).clamp_min(_MIN_AMAX) * headroom
        self.v_scale[layer] = v.detach().float().abs().amax(dim=(0, 2)).clamp_min(_MIN_AMAX) * headroom
        self.calibrated[layer] = True

    def set_scales(self, layer: int, k_scale: torch.Tensor, v_scale: torch.Tensor) -> None:
        """Fix the fp8 scales of `layer` explicitly, (Hkv,) each (e.g. from a checkpoint)."""
        if not self.is_fp8:
            return
        self.k_scale[layer] = torch.as_tensor(k_scale, dtype=torch.float32, device=self.device)
        self.v_scale[layer] = torch.as_tensor(v_scale, dtype=torch.float32, device=self.device)
        self.calibrated[layer] = True

    # ------------------------------------------------------------------ writes
    def write(self, layer: int, slots: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
        """Store N tokens' keys/values (N, Hkv, D) at `slots` (N,) of `layer`; quantize for fp8
        (in torch) and widen the key bounds of the pages touched."""
        self._check_kv(k, v)
        slots = slots.to(device=self.device, dtype=torch.long).reshape(-1)
        if slots.numel() != k.shape[0]:
            raise ValueError(f"{slots.numel()} slots for {k.shape[0]} tokens")
        if slots.numel() == 0:
            return
        Hkv, D = self.n_kv_heads, self.head_dim
        k_layer = self.k[layer].view(self.num_slots, Hkv, D)
        v_layer = self.v[layer].view(self.num_slots, Hkv, D)
        if self.is_fp8:
            if not self.calibrated[layer]:
                self.calibrate(layer, k, v)
            k_scale, v_scale = self.k_scale[layer], self.v_scale[layer]
            k_limit, v_limit = (k_scale * FP8_MAX)[:, None], (v_scale * FP8_MAX)[:, None]
            self.saturated[layer] += (k.float().abs() > k_limit).sum(dim=(0, 2))
            self.saturated[layer] += (v.float().abs() > v_limit).sum(dim=(0, 2))
            k_stored = fp8_quantize(k, k_scale)
            k_layer[slots] = k_stored  # (index_copy_ has no float8 kernel)
            v_layer[slots] = fp8_quantize(v, v_scale)
            k_read = fp8_dequantize(k_stored, k_scale)  # bounds of what attention will read
        else:
            k_stored = k.to(self.dtype)
            k_layer.index_copy_(0, slots, k_stored)
            v_layer.index_copy_(0, slots, v.to(self.dtype))
            k_read = k_stored  # (the bounds are in the keys' dtype: min / max are exact)

        # Widen the bounds of the pages touched. This runs for every layer of every step (only
        # sparse attention reads the bounds), so a few tokens (decode) scatter-reduce straight
        # into their pages' rows; many tokens (prefill) reduce over the touched pages first.
        pages = torch.div(slots, self.page_size, rounding_mode="floor")
        if slots.numel() <= _DIRECT_BOUNDS_MAX_TOKENS:
            index = pages.view(-1, 1, 1).expand(-1, Hkv, D)
            self.kmin[layer].scatter_reduce_(0, index, k_read, reduce="amin", include_self=True)
            self.kmax[layer].scatter_reduce_(0, index, k_read, reduce="amax", include_self=True)
            self._resketch(layer, pages)
            return
        touched, local = torch.unique(pages, return_inverse=True)
        index = local[:, None].expand(-1, Hkv * D)
        flat = k_read.reshape(-1, Hkv * D)
        kmin = self.kmin[layer, touched].reshape(-1, Hkv * D)
        kmax = self.kmax[layer, touched].reshape(-1, Hkv * D)
        kmin.scatter_reduce_(0, index, flat, reduce="amin", include_self=True)
        kmax.scatter_reduce_(0, index, flat, reduce="amax", include_self=True)
        self.kmin[layer, touched] = kmin.view(-1, Hkv, D)
        self.kmax[layer, touched] = kmax.view(-1, Hkv, D)
        self._resketch(layer, touched, unique=True)

    def _resketch(self, layer: int | None, pages: torch.Tensor, *, unique: bool = False) -> None:
        """Rebuild the page-bound sketches of `pages` in `layer` (None: every layer) after their
        bounds changed."""
        if self.ksketch is None:
            return
        if not unique:
            pages = torch.unique(pages)  # (one writer per row: the native loop runs rows in parallel)
        if layer is None:
            kernels_cpu.sketch_pages(self.kbounds, self.ksketch, pages)
        else:
            kernels_cpu.sketch_pages(self.kbounds[layer], self.ksketch[layer], pages)

    def _check_kv(self, k: torch.Tensor, v: torch.Tensor) -> None:
        expected = (self.n_kv_heads, self.head_dim)
        if k.dim() != 3 or tuple(k.shape[1:]) != expected or k.shape != v.shape:
            raise ValueError(
                f"k and v must both be (N, {self.n_kv_heads}, {self.head_dim}); "
                f"got {tuple(k.shape)} and {tuple(v.shape)}"
            )

    # ------------------------------------------------------------------ reads
    def dequantized(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(num_pages, page_size, Hkv, D) float32 keys and values of `layer` as attention reads
        them. Whole-layer copy: for tests and references, not the hot path."""
        k, v = self.k[layer], self.v[layer]
        if self.is_fp8:
            return fp8_dequantize(k, self.k_scale[layer]), fp8_dequantize(v, self.v_scale[layer])
        return k.float(), v.float()

    def gather_pages(
        self, layer: int, page_ids: torch.Tensor, *, values: bool
    ) -> torch.Tensor:
        """Keys (or values) of the pages `page_ids` (...), dequantized to float32:
        (..., page_size, Hkv, D)."""
        store = self.v[layer] if values else self.k[layer]
        pages = store[page_ids.long()]
        if self.is_fp8:
            scale = (self.v_scale if values else self.k_scale)[layer]
            return fp8_dequantize(pages, scale)
        return pages.float()

    def scratch(self, name: str, numel: int, dtype: torch.dtype) -> torch.Tensor:
        """A flat work buffer of at least `numel` elements, kept and grown across calls (for the
        attention's page gathers: a fresh multi-MB buffer page-faults on every call)."""
        buf = self._scratch.get(name)
        if buf is None or buf.numel() < numel or buf.dtype != dtype:
            buf = self._scratch[name] = torch.empty(numel, dtype=dtype, device=self.device)
        return buf[:numel]

    def __repr__(self) -> str:
        return (
            f"PagedKVCache(layers={self.num_layers}, pages={self.num_pages}x{self.page_size}, "
            f"kv_heads={self.n_kv_heads}, head_dim={self.head_dim}, dtype={self.dtype}, "
            f"kv_cache_dtype={self.kv_cache_dtype!r}, device={self.device})"
        )
