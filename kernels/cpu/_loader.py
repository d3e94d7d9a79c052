"""Building and loading the native CPU kernels (the C units beside this file) for kernels.cpu.

The units (common.h lists them) are compiled together into one shared library at first use,
with the system C compiler (`cc`, or $CC) and `-O3 -march=native -ffp-contract=off -fopenmp` (no
implicit FMA contraction: every fused multiply-add is written out, so the scalar and vector
paths round the same way), then cached under $TRIAGE_KERNEL_CACHE (default
~/.cache/triage-kernels) keyed by every source and header file, the flags, the compiler and the
CPU. `available()` is False, with the reason in `unavailable_reason()`, when no compiler is
found, the build fails, or TRIAGE_NATIVE_KERNELS=0; callers then use the torch implementations.

`_declare` gives every entry point its ctypes argument and result types; tk_decode_layer takes
its arguments as one DecodeLayerArgs (the C struct tk_decode_layer_args of common.h).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

logger = logging.getLogger("kernels.cpu")

_HERE = Path(__file__).parent
_UNITS = sorted(_HERE.glob("*.c"))  # compiled together, into one library
_FLAGS = ["-O3", "-march=native", "-ffp-contract=off", "-fopenmp", "-fPIC", "-shared", "-std=gnu11"]

_reason: str | None = None

P, I64, I, F = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_float


class DecodeLayerArgs(ctypes.Structure):
    """tk_decode_layer's arguments: common.h's tk_decode_layer_args, the same fields in the same
    order (kernels/tests/test_cpu_native.py holds the two layouts to each other). Pointers are
    addresses (tensor.data_ptr()) or None."""

    _fields_ = [
        # the step
        ("x", P), ("T", I64), ("cos_t", P), ("sin_t", P), ("slots", P), ("scratch", P), ("nthreads", I),
        # the layer: shapes, norms and packed weights
        ("dim", I64), ("hidden", I64), ("H", I64), ("Hkv", I64), ("D", I64), ("eps", F),
        ("attn_norm_w", P), ("ffn_norm_w", P), ("wqkv", P), ("wo", P), ("w13", P), ("w2", P),
        # the layer's cache
        ("k_cache", P), ("v_cache", P), ("kbounds", P), ("ksketch", P), ("num_pages", I64), ("page_size", I64),
        ("kv_dtype", I), ("k_scale", P), ("v_scale", P), ("saturated", P),
        # attention
        ("block_table", P), ("bt_stride", I64), ("seq_lens", P), ("scale", F), ("sparse_K", I64),
        ("sink", I64), ("local", I64), ("selected", P),
    ]


def _cpu_id() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return line
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    line = _cpu_id()
    return frozenset(line.split(":", 1)[1].split()) if line.startswith("flags") else frozenset()


def _sources_digest() -> bytes:
    """Every unit and header, by name and content: a change to any of them is a new build."""
    digest = hashlib.sha256()
    for path in sorted([*_HERE.glob("*.c"), *_HERE.glob("*.h")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.digest()


def _build(cache_dir: Path, flags: list[str] = _FLAGS) -> Path:
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        raise RuntimeError("no C compiler found (install gcc, e.g. apt-get install gcc, or set CC)")
    key = hashlib.sha256(_sources_digest() + " ".join(flags).encode() + _cpu_id().encode()
                         + compiler.encode()).hexdigest()[:16]
    target = cache_dir / f"libtriage_kernels-{key}.so"
    if target.exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        out = Path(tmp) / target.name
        proc = subprocess.run([compiler, *flags, *map(str, _UNITS), "-o", str(out), "-lm"],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            names = ", ".join(unit.name for unit in _UNITS)
            raise RuntimeError(f"{compiler} failed to build {names}:\n{proc.stderr[-2000:]}")
        os.replace(out, target)  # atomic: concurrent processes build their own and one wins
    return target


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    """Argument and result types of the library's entry points."""
    lib.tk_linear_packed_numel.argtypes, lib.tk_linear_packed_numel.restype = [I64, I64], I64
    lib.tk_linear_pack.argtypes, lib.tk_linear_pack.restype = [P, I, I64, I64, I64, P], None
    lib.tk_advise_huge.argtypes, lib.tk_advise_huge.restype = [P, I64], None
    lib.tk_linear.argtypes = [P, I, I64, I64, I64, P, I, I64, I64, P, I, I64, P, I, I64, I]
    lib.tk_linear.restype = None
    lib.tk_rms_norm.argtypes, lib.tk_rms_norm.restype = [P, I, I64, I64, P, F, P, I], None
    lib.tk_rope_write.argtypes = [P, I, I64, I64, I64, I64, P, P, P, P, P, P, P, P, I64, I64, I, P, P, P, I]
    lib.tk_rope_write.restype = None
    lib.tk_paged_decode.argtypes = [P, I, I64, I64, I64, I64, P, P, I, I64, P, I64, P, F, P, P, P, I]
    lib.tk_paged_decode.restype = None
    lib.tk_fp8_dequant.argtypes, lib.tk_fp8_dequant.restype = [P, I64, I64, F, P], None
    lib.tk_fp8_quantize.argtypes, lib.tk_fp8_quantize.restype = [P, I64, I64, F, P], I64
    lib.tk_decode_layer.argtypes = [ctypes.POINTER(DecodeLayerArgs)]
    lib.tk_decode_layer.restype = None
    lib.tk_decode_layer_args_fields.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(I64),
                                                ctypes.POINTER(I64), ctypes.POINTER(ctypes.c_char), I64]
    lib.tk_decode_layer_args_fields.restype = I64
    lib.tk_decode_layer_args_size.argtypes, lib.tk_decode_layer_args_size.restype = [], I64
    lib.tk_stream_read.argtypes, lib.tk_stream_read.restype = [P, I64, I], ctypes.c_double
    lib.tk_simd_lanes.argtypes, lib.tk_simd_lanes.restype = [], I
    lib.tk_bf16_dot.argtypes, lib.tk_bf16_dot.restype = [], I
    lib.tk_page_scores.argtypes = [P, I, I64, I64, I64, I64, P, I, I64, P, I64, I64, P, I]
    lib.tk_page_scores.restype = None
    lib.tk_group_query_bounds.argtypes = [P, I, I64, I64, I64, I64, P]
    lib.tk_group_query_bounds.restype = None
    lib.tk_sparse_decode.argtypes = [P, I, I64, I64, I64, I64, P, P, I, I64, I64, P, I64, P, P, I64, F, P, P, P, P, I]
    lib.tk_sparse_decode.restype = None
    lib.tk_select_pages.argtypes = [P, I64, I64, I64, P, I64, I64, I64, I64, P, I]
    lib.tk_select_pages.restype = None
    lib.tk_index_pages.argtypes = [P, I, I64, I64, I64, I64, P, I, P, I64, P, I64, I64, P, I64, I64, I64, I64, P,
                                   I]
    lib.tk_index_pages.restype = None
    lib.tk_sketch_row_bytes.argtypes, lib.tk_sketch_row_bytes.restype = [I64], I64
    lib.tk_sketch_pages.argtypes = [P, I, I64, I64, I64, I64, P, I64, P, I]
    lib.tk_sketch_pages.restype = None
    lib.tk_sketch_intervals.argtypes = [P, I, I64, I64, I64, I64, P, I64, P, I64, P, P]
    lib.tk_sketch_intervals.restype = None
    return lib


def decode_layer_args_layout(lib: ctypes.CDLL) -> tuple[int, list[tuple[str, int, int, str]]]:
    """tk_decode_layer_args as the library was compiled: (sizeof, [(name, offset, size, kind)] in
    field order), kind 'f' float, 'i' int, 'q' int64_t, 'P' a pointer (for the layout test)."""
    n = lib.tk_decode_layer_args_fields(None, None, None, None, 0)
    names, offsets, sizes = (ctypes.c_char_p * n)(), (I64 * n)(), (I64 * n)()
    kinds = ctypes.create_string_buffer(n)
    lib.tk_decode_layer_args_fields(names, offsets, sizes, kinds, n)
    fields = [(names[i].decode(), offsets[i], sizes[i], kinds.raw[i:i + 1].decode()) for i in range(n)]
    return int(lib.tk_decode_layer_args_size()), fields


def build_variant(cache_dir: Path, march: str) -> ctypes.CDLL:
    """The library compiled for another -march (tests run the portable C path with it)."""
    flags = [f"-march={march}" if f == "-march=native" else f for f in _FLAGS]
    lib = _declare(ctypes.CDLL(str(_build(cache_dir, flags))))
    lib.march = march
    return lib


@functools.lru_cache(maxsize=1)
def _lib() -> ctypes.CDLL | None:
    global _reason
    if os.environ.get("TRIAGE_NATIVE_KERNELS", "1").lower() in ("0", "false", "no", "off"):
        _reason = "disabled by TRIAGE_NATIVE_KERNELS=0"
        return None
    cache_dir = Path(os.environ.get("TRIAGE_KERNEL_CACHE") or Path.home() / ".cache" / "triage-kernels")
    try:
        try:
            path = _build(cache_dir)
        except OSError:  # an unwritable home: build in the temporary directory instead
            path = _build(Path(tempfile.gettempdir()) / f"triage-kernels-{os.getuid()}")
        lib = ctypes.CDLL(str(path))
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        _reason = str(exc)
        logger.warning("native CPU kernels unavailable, using torch ops instead: %s", exc)
        return None
    return _declare(lib)


def available() -> bool:
    return _lib() is not None


def unavailable_reason() -> str | None:
    _lib()
    return _reason
