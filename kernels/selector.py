"""Choose the attention implementation for a request's kernel settings (like vLLM's
attention/selector.py): ordered capability checks, a clear error with the remedy when a choice
cannot run here, the chosen backend logged once, Triton imported only when asked for.

    backend = select_attention(settings, device)
    out = backend.prefill(q, k, v, cu_seqlens)                    # dense for every setting
    out = backend.decode(q, cache, layer, block_table, seq_lens)  # dense, or sparse pages only
"""

from __future__ import annotations

import functools
import math
import importlib
import importlib.util
import logging
import os
from typing import Any, Callable

import torch

from kernels import cpu as kernels_cpu
from kernels.attention.dense import dense_decode, dense_prefill, plan_decode, rows_write_own_pages
from kernels.indexer.reference import num_selected_pages
from kernels.kv_cache import PagedKVCache
from kernels.settings import KernelSettings

logger = logging.getLogger(__name__)

# Sparse decode is split into chunks of queries so that the gathered pages and page bounds of
# one chunk stay below this many float32 elements (teacher forcing sends hundreds of queries).
_MAX_GATHER_ELEMENTS = 1 << 25


class KernelUnavailableError(RuntimeError):
    """The requested kernel settings cannot run on this device/installation. The message says
    what is missing and how to fix it."""


def triton_interpreter_enabled() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "yes", "on")


def _rows_own_pages(block_table: torch.Tensor, seq_lens: torch.Tensor, page_size: int) -> bool:
    """A decode step of separate sequences, which the native whole-layer path runs: every row
    writes a page of its own and no two rows are one sequence's (equal block-table rows). Samples
    of one prompt share its full pages and qualify. Teacher forcing (engine.divergence) gives many
    queries one sequence's row and runs the per-op path, wherever its queries fall, so that its
    numbers do not depend on the prompt's length modulo the page size."""
    n = block_table.shape[0]
    if n <= 1:
        return True
    if not rows_write_own_pages(block_table, seq_lens, page_size):
        return False
    return torch.unique(block_table[:, 0]).numel() == n or torch.unique(block_table, dim=0).shape[0] == n


class DenseAttention:
    """Causal attention over the whole cache: prefill by dense_prefill; decode by the native CPU
    kernel (kernels.cpu.paged_decode: reads the pages in place, one pass per query) when it is
    available and each query writes a page of its own (an ordinary decode step), else by the torch
    implementation (kernels.attention.dense, the reference), which also serves teacher forcing
    (many queries sharing pages: one gather and GEMMs)."""

    name = "dense"

    def __init__(self, settings: KernelSettings, device: torch.device) -> None:
        self.settings, self.device = settings, device
        self.native = device.type == "cpu" and kernels_cpu.available()

    def prefill(self, q, k, v, cu_seqlens, *, scale: float | None = None) -> torch.Tensor:
        return dense_prefill(q, k, v, cu_seqlens, scale=scale)

    def plan_decode(self, cache: PagedKVCache, block_table, seq_lens):
        """Per-step layout shared by every layer's decode()."""
        if self._native_step(block_table, seq_lens, cache.page_size):
            return kernels_cpu.DecodeLayout(cache, block_table, seq_lens)
        return plan_decode(cache, block_table, seq_lens)

    def decode(self, q, cache: PagedKVCache, layer: int, block_table, seq_lens, *, scale=None, plan=None) -> torch.Tensor:
        if plan is None and self._native_step(block_table, seq_lens, cache.page_size):
            plan = kernels_cpu.DecodeLayout(cache, block_table, seq_lens)
        if isinstance(plan, kernels_cpu.DecodeLayout):
            scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
            return kernels_cpu.paged_decode(q.contiguous(), cache, layer, scale=scale, layout=plan)
        return dense_decode(q, cache, layer, block_table, seq_lens, scale=scale, plan=plan)

    def _native_step(self, block_table: torch.Tensor, seq_lens: torch.Tensor, page_size: int) -> bool:
        return self.native and _rows_own_pages(block_table, seq_lens, page_size)

    def __repr__(self) -> str:
        return f"DenseAttention(device={self.device}, native_decode={self.native})"


class SparseAttention:
    """Dense prefill; decode attends only to the pages the indexer selects (Quest)."""

    name = "sparse"

    def __init__(
        self,
        settings: KernelSettings,
        device: torch.device,
        *,
        select_pages: Callable[..., torch.Tensor],
        sparse_decode: Callable[..., torch.Tensor],
    ) -> None:
        self.settings, self.device = settings, device
        self._select_pages, self._sparse_decode = select_pages, sparse_decode

    def prefill(self, q, k, v, cu_seqlens, *, scale: float | None = None) -> torch.Tensor:
        return dense_prefill(q, k, v, cu_seqlens, scale=scale)

    def select(self, q, cache: PagedKVCache, layer: int, block_table, seq_lens) -> torch.Tensor:
        """The indexer alone: (N, Hkv, K) int32 selected logical pages (-1 padded)."""
        s = self.settings
        return self._select_pages(
            q, cache, layer, block_table, seq_lens,
            budget=s.sparse_budget, sink_pages=s.sink_pages, local_pages=s.local_pages,
        )

    def plan_decode(self, cache: PagedKVCache, block_table, seq_lens):
        """A decode step's layout for the whole model: a kernels.cpu.SparseDecodeLayout when
        the native indexer and sparse decode run this step (the model then runs each bf16 layer
        as one kernels.cpu.decode_layer call, attention included), else None."""
        native = self._select_pages is kernels_cpu.select_pages and self._sparse_decode is kernels_cpu.sparse_decode
        if not native or not _rows_own_pages(block_table, seq_lens, cache.page_size):
            return None
        s = self.settings
        return kernels_cpu.SparseDecodeLayout(cache, block_table, seq_lens, budget=s.sparse_budget,
                                              sink_pages=s.sink_pages, local_pages=s.local_pages)

    def decode(self, q, cache: PagedKVCache, layer: int, block_table, seq_lens, *, scale=None,
               plan=None) -> torch.Tensor:
        """(A plan from plan_decode changes nothing here: the per-op path selects the same pages
        and computes the same attention for these queries.)"""
        N, H, D = q.shape
        P = block_table.shape[1]
        K = num_selected_pages(self.settings.sparse_budget, cache.page_size, P)
        per_query = cache.n_kv_heads * 2 * D * (K * cache.page_size + P)
        chunk = max(1, _MAX_GATHER_ELEMENTS // per_query)
        if N <= chunk:
            return self._decode_chunk(q, cache, layer, block_table, seq_lens, scale)
        return torch.cat([
            self._decode_chunk(q[i:i + chunk], cache, layer, block_table[i:i + chunk], seq_lens[i:i + chunk], scale)
            for i in range(0, N, chunk)
        ])

    def _decode_chunk(self, q, cache, layer, block_table, seq_lens, scale):
        selected = self.select(q, cache, layer, block_table, seq_lens)
        return self._sparse_decode(q, cache, layer, block_table, seq_lens, selected, scale=scale)

    def __repr__(self) -> str:
        s = self.settings
        return (
            f"SparseAttention(budget={s.sparse_budget}, sink_pages={s.sink_pages}, local_pages={s.local_pages}, "
            f"indexer={s.indexer}, decode_kernel={s.decode_kernel}, device={self.device})"
        )


def select_attention(settings: KernelSettings | dict[str, Any] | None, device: torch.device | str = "cpu"):
    """Backend for `settings` on `device`. Raises KernelUnavailableError (with the remedy) when
    the settings cannot run here. Cheap to call per request: backends are cached."""
    if not isinstance(settings, KernelSettings):
        settings = KernelSettings.from_dict(settings)
    device = torch.device(device)
    return _select(settings, device, triton_interpreter_enabled())


@functools.lru_cache(maxsize=64)
def _select(settings: KernelSettings, device: torch.device, interpret: bool):
    # 1. The KV cache dtype must exist in this torch build.
    if settings.kv_cache_dtype == "fp8_e4m3" and not hasattr(torch, "float8_e4m3fn"):
        raise KernelUnavailableError(
            f"kv_cache_dtype 'fp8_e4m3' needs torch.float8_e4m3fn (torch >= 2.1); this is torch "
            f"{torch.__version__}. Upgrade torch or use kv_cache_dtype 'auto'."
        )
    # 2. Dense: always available; decode_kernel and indexer only concern sparse decode.
    if settings.attention == "dense":
        backend = DenseAttention(settings, device)
        logger.info("attention backend for %s on %s: %r", settings.label, device, backend)
        return backend
    # 3. Sparse: each of indexer / decode_kernel in torch or triton.
    if settings.indexer == "triton":
        select_pages = _triton_module("kernels.indexer.triton", "indexer", device, interpret).select_pages
    else:
        from kernels.indexer.reference import select_pages

        if device.type == "cpu" and kernels_cpu.available():
            # The same selection in one native call: the page scores read in place (the torch
            # reference gathers every page's bounds into a copy first: ~4 ms of a 5 ms sparse step
            # at 32k context, batch 8) and the top-k, fused per (query, KV head).
            select_pages = kernels_cpu.select_pages
    if settings.decode_kernel == "triton":
        sparse_decode = _triton_module("kernels.attention.triton", "decode_kernel", device, interpret).sparse_decode
    elif device.type == "cpu" and kernels_cpu.available():
        # The dense kernel's computation over the selected pages, read in place (the torch
        # reference gathers them and converts to float32 first: ~2 ms of a 3 ms sparse layer at
        # batch 32); kernels.attention.reference.sparse_decode stays the reference it is tested
        # against.
        sparse_decode = kernels_cpu.sparse_decode
    else:
        from kernels.attention.reference import sparse_decode
    backend = SparseAttention(settings, device, select_pages=select_pages, sparse_decode=sparse_decode)
    mode = " (Triton interpreter: slow, for tests)" if interpret and device.type != "cuda" and "triton" in (
        settings.indexer, settings.decode_kernel) else ""
    logger.info("attention backend for %s on %s: %r%s", settings.label, device, backend, mode)
    return backend


def _triton_module(module_name: str, field: str, device: torch.device, interpret: bool):
    """Import a Triton kernel module after checking that it can run on `device`."""
    if importlib.util.find_spec("triton") is None:
        raise KernelUnavailableError(
            f"{field}='triton' needs the triton package, which is not installed. "
            f"Install it (pip install triton) or use {field}='torch'."
        )
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise KernelUnavailableError(f"{field}='triton' on {device}, but CUDA is not available.")
    elif device.type == "cpu":
        if not interpret:
            raise KernelUnavailableError(
                f"{field}='triton' needs a GPU, and this engine runs on {device}. Either run the engine "
                f"on a CUDA device (--device cuda:0), or set TRITON_INTERPRET=1 in the environment before "
                f"the process starts to run the Triton kernels in the interpreter on the CPU (slow; for "
                f"tests). Or use {field}='torch'."
            )
    else:
        raise KernelUnavailableError(f"{field}='triton' cannot run on {device.type}; use a CUDA device or {field}='torch'.")
    module = importlib.import_module(module_name)
    if device.type == "cpu" and not module.interpreted():
        raise KernelUnavailableError(
            f"{field}='triton' on the CPU needs TRITON_INTERPRET=1 when Triton kernels are first imported, "
            f"but {module_name} was imported without it. Set TRITON_INTERPRET=1 at process start."
        )
    return module
