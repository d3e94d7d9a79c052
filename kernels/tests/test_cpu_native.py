"""kernels.cpu (native C, compiled at first use) against the torch implementations.

Each native routine is checked against torch on the same inputs, and for batch invariance
(a row's result is bit-identical whatever the other rows of the call), which the engine's
"same seed, same text in any batch" rests on."""

from __future__ import annotations

import math
import os

import pytest
import torch
import torch.nn.functional as F

from kernels import cpu
from kernels.attention.dense import dense_decode
from kernels.kv_cache import PagedKVCache

from .helpers import draw_queries, layer_weights, make_batch

pytestmark = pytest.mark.usefixtures("native_kernels")  # (skips without them, fails under REQUIRE_SERVICES=1)


def _fp64_linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x.double() @ w.double().T


@pytest.mark.parametrize("M", [1, 3, 12, 13, 32, 100], ids=lambda m: f"M{m}")
@pytest.mark.parametrize("N,K", [(96, 64), (100, 97), (576, 1536)], ids=lambda v: str(v))
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
@pytest.mark.parametrize("wdtype", [torch.bfloat16, torch.float32], ids=["w-bf16", "w-fp32"])
def test_linear_matches_float64_reference(M, N, K, dtype, wdtype):
    g = torch.Generator().manual_seed(M * 1000 + N + K)
    w = torch.randn(N, K, generator=g).to(wdtype)
    x = torch.randn(M, K, generator=g).to(dtype)
    y = cpu.linear(x, cpu.PackedWeight(w, dtype=wdtype), out_dtype=torch.float32)
    ref = _fp64_linear(x, w)
    # float32 accumulation of K products: error ~ K * eps32 * sum|x w|
    bound = K * 2 ** -23 * (x.double().abs() @ w.double().abs().T)
    assert ((y.double() - ref).abs() <= bound + 1e-6).all()


@pytest.mark.parametrize("wdtype", [torch.bfloat16, torch.float32], ids=["w-bf16", "w-fp32"])
def test_linear_is_batch_invariant(wdtype):
    g = torch.Generator().manual_seed(0)
    w = cpu.PackedWeight(torch.randn(200, 576, generator=g), dtype=wdtype)
    x = torch.randn(40, 576, generator=g).to(wdtype)
    full = cpu.linear(x, w)
    for rows in ([0], [5], [0, 1], list(range(13)), list(range(7, 40))):
        part = cpu.linear(x[rows].contiguous(), w)
        assert torch.equal(part, full[rows]), rows


@pytest.mark.parametrize("wdtype", [torch.bfloat16, torch.float32], ids=["w-bf16", "w-fp32"])
def test_linear_fused_silu_mul_and_residual(wdtype):
    g = torch.Generator().manual_seed(1)
    H, K, M = 48, 64, 5
    w = torch.randn(2 * H, K, generator=g).to(wdtype)
    x = torch.randn(M, K, generator=g).to(torch.bfloat16)
    y = cpu.linear(x, cpu.PackedWeight(w, silu_half=True, dtype=wdtype), out_dtype=torch.float32)
    ref = _fp64_linear(x, w)
    expected = F.silu(ref[:, :H]) * ref[:, H:]
    torch.testing.assert_close(y.double(), expected, atol=1e-4, rtol=1e-4)
    residual = torch.randn(M, 2 * H, generator=g).to(torch.bfloat16)
    y = cpu.linear(x, cpu.PackedWeight(w, dtype=wdtype), residual=residual, out_dtype=torch.float32)
    torch.testing.assert_close(y.double(), ref + residual.double(), atol=1e-4, rtol=1e-4)


def test_fused_silu_tails_match_torch():
    """silu(g) at the edges of the shared exp polynomial's range (it clamps at -87): large |g|,
    signed zeros, infinities and NaN, as torch's float32 silu gives them."""
    gate = torch.tensor([-200.0, -100.0, -88.0, -87.0, -86.0, -20.0, -1.0, -0.0, 0.0, 1e-30, 3.0, 87.5, 100.0,
                         float("inf"), float("-inf"), float("nan")])
    w = torch.cat([gate, torch.ones(16)])[:, None]  # K = 1: g = x * w with x = 1
    y = cpu.linear(torch.ones(1, 1), cpu.PackedWeight(w, silu_half=True, dtype=torch.float32))
    torch.testing.assert_close(y[0], F.silu(gate), rtol=1e-6, atol=1e-35, equal_nan=True)


def test_linear_first_columns_equal_the_full_product():
    g = torch.Generator().manual_seed(17)
    w = cpu.PackedWeight(torch.randn(100, 64, generator=g).to(torch.bfloat16))
    x = torch.randn(13, 64, generator=g).to(torch.bfloat16)
    full = cpu.linear(x, w, out_dtype=torch.float32)
    for n in (0, 1, 31, 32, 33, 100):
        assert torch.equal(cpu.linear(x, w, out_dtype=torch.float32, columns=n), full[:, :n])
    with pytest.raises(ValueError, match="columns"):
        cpu.linear(x, w, columns=101)


def test_linear_rejects_bad_shapes():
    w = cpu.PackedWeight(torch.randn(32, 64).to(torch.bfloat16))
    with pytest.raises(ValueError, match="expects 64"):
        cpu.linear(torch.randn(2, 63), w)
    with pytest.raises(ValueError, match="H a multiple of 16"):
        cpu.PackedWeight(torch.randn(40, 64), silu_half=True)
    with pytest.raises(ValueError, match="bfloat16 or float32"):
        cpu.PackedWeight(torch.randn(32, 64), dtype=torch.float16)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
def test_rms_norm_matches_torch(dtype):
    g = torch.Generator().manual_seed(2)
    x = (torch.randn(7, 576, generator=g) * 3).to(dtype)
    w = torch.randn(576, generator=g).to(dtype)
    torch.testing.assert_close(cpu.rms_norm(x, w, 1e-5), F.rms_norm(x, (576,), w, 1e-5))


def _cache(dtype, *, pages=64, page_size=16, hkv=3, d=64, kv="auto"):
    return PagedKVCache(num_layers=2, num_pages=pages, page_size=page_size, n_kv_heads=hkv, head_dim=d,
                        dtype=dtype, kv_cache_dtype=kv)


@pytest.mark.parametrize("kv", ["auto", "fp8_e4m3"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
@pytest.mark.parametrize("H,Hkv,D,slots", [
    (9, 3, 64, [3, 17, 18, 40, 63]),
    (9, 3, 64, list(range(100, 140)) + [7, 300, 301, 1023]),  # prefill-like runs sharing pages
    (4, 4, 32, [5, 6, 900]),
    (6, 2, 40, [1, 2, 33]),  # D/2 not a multiple of 16: the scalar loop
], ids=["gqa-d64-5tok", "gqa-d64-44tok", "mha-d32", "gqa-d40"])
def test_rope_write_matches_torch_rope_and_cache_write(dtype, H, Hkv, D, slots, kv):
    """Bit-equal to torch's rope and PagedKVCache.write: bf16 / float32 caches, and fp8 ones
    (codes, float32 bounds of the dequantized keys, saturation counts; scales that make some
    elements saturate)."""
    from kernels.rope import apply_rope

    g = torch.Generator().manual_seed(3)
    T = len(slots)
    qkv = (torch.randn(T, H + 2 * Hkv, D, generator=g) * 4).to(dtype)
    for start in (0, D // 2):  # signed zeros in both halves: rotate-half's -x of a +0 is -0 in torch
        qkv[:, :, start:start + 3] = 0.0
        qkv[:, :, start + 3:start + 5] = -0.0
    angles = torch.rand(T, D, generator=g) * 6
    cos, sin = angles.cos().to(dtype), angles.sin().to(dtype)
    slots = torch.tensor(slots)
    native, ref = _cache(dtype, hkv=Hkv, d=D, kv=kv), _cache(dtype, hkv=Hkv, d=D, kv=kv)
    if kv == "fp8_e4m3":
        with pytest.raises(ValueError, match="calibrate"):
            cpu.rope_write(qkv, H, cos, sin, slots, native, 1)
        k_scale, v_scale = torch.rand(Hkv, generator=g) * 0.02 + 0.005, torch.rand(Hkv, generator=g) * 0.02 + 0.005
        for c in (native, ref):
            c.set_scales(1, k_scale, v_scale)
    q = cpu.rope_write(qkv, H, cos, sin, slots, native, 1)
    qk = apply_rope(qkv[:, : H + Hkv], cos[:, None], sin[:, None])
    ref.write(1, slots, qk[:, H:], qkv[:, H + Hkv:])
    bits = {torch.bfloat16: torch.int16, torch.float32: torch.int32}[dtype]  # bit-equal, signed zeros included
    assert torch.equal(q.view(bits), qk[:, :H].contiguous().view(bits))
    if kv == "fp8_e4m3":
        assert torch.equal(native.k.view(torch.uint8), ref.k.view(torch.uint8))
        assert torch.equal(native.v.view(torch.uint8), ref.v.view(torch.uint8))
        assert torch.equal(native.saturated, ref.saturated) and int(ref.saturated.sum()) > 0
        assert native.kbounds.dtype == torch.float32
    else:
        assert torch.equal(native.k.view(bits), ref.k.view(bits)) and torch.equal(native.v.view(bits), ref.v.view(bits))
    assert torch.equal(native.kbounds, ref.kbounds)


@pytest.mark.parametrize("kv", ["auto", "fp8_e4m3"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
def test_rope_write_lets_nan_keys_into_the_bounds_as_torch_does(dtype, kv, variant_lib, monkeypatch):
    """A NaN key makes its page's bounds NaN where it lands, in the native write (this machine's
    build and each -march variant: the SIMD and scalar loops) as in PagedKVCache.write (torch's
    amin / amax propagate NaN), and keeps them NaN: the indexer then scores that page NaN on
    both paths (ranked first, as the reference ranks NaN)."""
    from kernels.rope import apply_rope

    g = torch.Generator().manual_seed(5)
    H, Hkv, D, slots = 9, 3, 64, torch.tensor([3, 4, 5, 40, 41])
    qkv = torch.randn(len(slots), H + 2 * Hkv, D, generator=g).to(dtype)
    qkv[1, H + 2, 7] = float("nan")  # page 0, KV head 2
    qkv[3, H, 40] = float("nan")  # page 2, KV head 0; a finite key after it on the same page
    angles = torch.rand(len(slots), D, generator=g) * 6
    cos, sin = angles.cos().to(dtype), angles.sin().to(dtype)
    ref = _cache(dtype, kv=kv)
    if kv == "fp8_e4m3":
        ref.set_scales(1, torch.full((Hkv,), 0.02), torch.full((Hkv,), 0.02))
    qk = apply_rope(qkv[:, : H + Hkv], cos[:, None], sin[:, None])
    ref.write(1, slots, qk[:, H:], qkv[:, H + Hkv:])
    want = ref.kbounds[1].float()
    assert int(want.isnan().sum()) == 8  # two keys, each NaN in two rotate-half dims, in kmin and kmax
    for lib in ("native", "variant"):
        if lib == "variant":
            monkeypatch.setattr(cpu, "_lib", lambda: variant_lib)
        native = _cache(dtype, kv=kv)
        if kv == "fp8_e4m3":
            native.set_scales(1, torch.full((Hkv,), 0.02), torch.full((Hkv,), 0.02))
        cpu.rope_write(qkv, H, cos, sin, slots, native, 1)
        got = native.kbounds[1].float()
        assert torch.equal(got.isnan(), want.isnan()), lib
        assert torch.equal(got.nan_to_num(0.0), want.nan_to_num(0.0)), lib


def test_fp8_quantization_is_torchs_bit_for_bit():
    # every e4m3 value, the midpoints between neighbours (ties to even) and one float32 step
    # either side of both, subnormals, the saturation edge, +-0, inf, NaN, and random magnitudes
    from kernels.kv_cache import fp8_quantize

    g = torch.Generator().manual_seed(6)
    vals = torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn).float()
    vals = vals[~vals.isnan()].unique()
    mids = (vals[1:] + vals[:-1]) / 2
    inf = torch.tensor(float("inf"))
    near = [x for v in (vals, mids, -mids) for x in (v, torch.nextafter(v, inf), torch.nextafter(v, -inf))]
    special = torch.tensor([0.0, -0.0, 448.0, 449.0, 464.0, 465.0, 1e9, -1e9, float("inf"), -float("inf"),
                            2.0 ** -6, 2.0 ** -9, 2.0 ** -10, 1e-40, -1e-40])
    x = torch.cat(near + [special, torch.randn(40000, generator=g) * torch.exp(torch.randn(40000, generator=g) * 4)])
    x = x[: x.numel() // 64 * 64].view(-1, 64)
    for scale in (1.0, 0.37, 2.0 ** -5, 123.0):
        codes, saturated = cpu.fp8_quantize(x, scale)
        ref = fp8_quantize(x.view(-1, 1, 64), torch.tensor([scale])).view(-1, 64)
        assert torch.equal(codes.view(torch.uint8), ref.view(torch.uint8))
        assert saturated == int((x.abs() > torch.tensor(scale) * 448).sum()) > 0
    nan_codes, _ = cpu.fp8_quantize(torch.full((1, 8), float("nan")), 1.0)
    assert nan_codes.float().isnan().all()


def _filled_cache(dtype, lens, *, page_size, hkv, d, kv="auto", seed=0, poison=False):
    g = torch.Generator().manual_seed(seed)
    n_pages = [-(-n // page_size) for n in lens]
    cache = _cache(dtype, pages=sum(n_pages) + 3, page_size=page_size, hkv=hkv, d=d, kv=kv)
    if poison:  # stale rows past a sequence's end hold NaN: they must never reach the output
        cache.k.view(torch.uint8).fill_(0xFF)
        cache.v.view(torch.uint8).fill_(0xFF)
    perm = torch.randperm(cache.num_pages, generator=g)
    table = torch.zeros(len(lens), max(n_pages), dtype=torch.int32)
    used = 0
    for i, (n, p) in enumerate(zip(lens, n_pages)):
        table[i, :p] = perm[used:used + p].int()
        used += p
        slots = torch.tensor([int(table[i, t // page_size]) * page_size + t % page_size for t in range(n)])
        cache.write(0, slots, torch.randn(n, hkv, d, generator=g).to(dtype), torch.randn(n, hkv, d, generator=g).to(dtype))
    return cache, table, torch.tensor(lens, dtype=torch.int32)


@pytest.mark.parametrize("kv", ["auto", "fp8_e4m3"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
@pytest.mark.parametrize("heads,hkv,d", [(9, 3, 64), (8, 2, 64), (8, 1, 64), (4, 4, 64), (6, 2, 40)],
                         ids=["gqa3-d64", "gqa4-d64", "gqa8-d64", "mha-d64", "gqa3-d40"])
@pytest.mark.parametrize("page_size", [8, 16, 64], ids=lambda s: f"page{s}")
def test_paged_decode_matches_dense_reference(kv, dtype, heads, hkv, d, page_size):
    lens = [1, 63, 97, 1025]
    cache, table, seq_lens = _filled_cache(dtype, lens, page_size=page_size, hkv=hkv, d=d, kv=kv)
    q = torch.randn(len(lens), heads, d, generator=torch.Generator().manual_seed(9)).to(dtype)
    out = cpu.paged_decode(q, cache, 0, table, seq_lens, scale=1 / math.sqrt(d))
    ref = dense_decode(q.float(), cache, 0, table, seq_lens)  # float32 reference on the dequantized cache
    if dtype == torch.float32:
        torch.testing.assert_close(out, ref, atol=2e-6, rtol=1e-5)
    else:
        # the tolerance rule (docs/architecture.md, "Conventions"): at most 2x the error of torch's own bf16 computation
        torch_bf16 = dense_decode(q, cache, 0, table, seq_lens).float()
        assert (out.float() - ref).abs().max() <= 2 * (torch_bf16 - ref).abs().max() + 1e-6


def _fp8_dequant_cases():
    g = torch.Generator().manual_seed(4)
    every = torch.arange(256, dtype=torch.uint8).repeat(2, 1).view(8, 64)  # every code, rows of 64
    tail = torch.randint(0, 256, (6, 44), generator=g, dtype=torch.uint8)  # 44: not a multiple of 8, the table
    return [(codes, scale) for codes in (every, tail) for scale in (1.0, 0.0371, 3.5e-3, 7.0e5)]


def _assert_fp8_dequant_exact(dequant):
    for codes, scale in _fp8_dequant_cases():
        out = dequant(codes, scale)
        ref = codes.view(torch.float8_e4m3fn).float() * torch.tensor(scale, dtype=torch.float32)
        nan = ref.isnan()
        assert torch.equal(out.isnan(), nan)
        assert torch.equal(out[~nan].view(torch.int32), ref[~nan].view(torch.int32))  # bits: -0.0 too


def test_fp8_dequantization_is_torchs_bit_for_bit():
    # the attention kernels' fp8 row loads (vector conversion in the SIMD builds, a table in
    # plain C): every code, subnormals, -0 and NaN, times a scale, as torch computes it
    _assert_fp8_dequant_exact(cpu.fp8_dequant)


@pytest.mark.parametrize("scale", [0.125, 0.1, 0.5], ids=["pow2-bf16-scores", "any-scale", "pow2-other"])
def test_paged_decode_bf16_scales(scale):
    """bf16 queries times a power-of-two scale are exact in bf16, and an AVX512-BF16 build scores
    them with vdpbf16ps; any other scale widens the keys. Both within the bf16 bound."""
    lens = [1, 63, 97, 1025]
    cache, table, seq_lens = _filled_cache(torch.bfloat16, lens, page_size=16, hkv=3, d=64)
    q = (torch.randn(len(lens), 9, 64, generator=torch.Generator().manual_seed(12)) * 3).to(torch.bfloat16)
    out = cpu.paged_decode(q, cache, 0, table, seq_lens, scale=scale)
    ref = dense_decode(q.float(), cache, 0, table, seq_lens, scale=scale)
    torch_bf16 = dense_decode(q, cache, 0, table, seq_lens, scale=scale).float()
    assert (out.float() - ref).abs().max() <= 2 * (torch_bf16 - ref).abs().max() + 1e-6


def test_paged_decode_is_batch_invariant():
    lens = [5, 300, 17, 1025, 64]
    cache, table, seq_lens = _filled_cache(torch.bfloat16, lens, page_size=16, hkv=3, d=64)
    q = torch.randn(len(lens), 9, 64, generator=torch.Generator().manual_seed(4)).to(torch.bfloat16)
    full = cpu.paged_decode(q, cache, 0, table, seq_lens, scale=0.125)
    for rows in ([0], [3], [1, 3], [4, 0, 2]):
        part = cpu.paged_decode(q[rows].contiguous(), cache, 0, table[rows], seq_lens[rows], scale=0.125)
        assert torch.equal(part, full[rows]), rows


@pytest.mark.parametrize("kv", ["auto", "fp8_e4m3"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
def test_paged_decode_ignores_stale_rows_past_the_end(dtype, kv):
    """Rows after the last position of a sequence's last page hold whatever an earlier sequence
    left there (NaN here; fp8 code 0xff is NaN too); the kernel reads whole 16-row groups but
    keeps only real positions."""
    lens = [1, 15, 17, 40, 64]
    q = torch.randn(len(lens), 9, 64, generator=torch.Generator().manual_seed(5)).to(dtype)
    outs = []
    for poison in (False, True):
        cache, table, seq_lens = _filled_cache(dtype, lens, page_size=64, hkv=3, d=64, poison=poison, kv=kv)
        outs.append(cpu.paged_decode(q, cache, 0, table, seq_lens, scale=0.125))
    assert torch.isfinite(outs[1]).all()
    assert torch.equal(outs[1], outs[0])


def test_paged_decode_rejects_lengths_past_the_table():
    cache, table, seq_lens = _filled_cache(torch.float32, [20], page_size=16, hkv=3, d=64)
    with pytest.raises(ValueError, match="seq_lens must be in"):
        cpu.paged_decode(torch.randn(1, 9, 64), cache, 0, table, torch.tensor([33]), scale=0.125)


@pytest.fixture(scope="module", params=["x86-64-v2", "x86-64-v3", "x86-64-v4"],
                ids=["portable-c", "avx2", "avx512-fma"])
def variant_lib(request, tmp_path_factory):
    """The native kernels built for another -march: x86-64-v2 (no AVX2: the plain C loops), x86-64-v3
    (AVX2 + FMA, no AVX-512: the 8-lane paths) and x86-64-v4 (AVX-512 without AVX512-BF16: the
    16-lane FMA linear that a native build with vdpbf16ps replaces)."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip(reason="the -march variants of the native kernels are x86-64 targets")
    if request.param == "x86-64-v3":
        if not {"avx2", "fma", "bmi2", "movbe"} <= cpu.cpu_flags():
            pytest.skip(reason="this CPU cannot run an x86-64-v3 (AVX2 + FMA) build")
    if request.param == "x86-64-v4":
        if not {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"} <= cpu.cpu_flags():
            pytest.skip(reason="this CPU cannot run an x86-64-v4 (AVX-512) build")
    return cpu.build_variant(tmp_path_factory.mktemp("kernels"), request.param)


def test_simd_lanes_name_the_build_this_cpu_gets():
    flags = cpu.cpu_flags()
    if "avx512f" in flags:
        assert cpu.simd_lanes() == 16
    elif {"avx2", "fma"} <= flags:
        assert cpu.simd_lanes() == 8
    elif flags:
        assert cpu.simd_lanes() == 0
    assert cpu.bf16_dot() == _compiler_targets("__AVX512BF16__")
    assert not cpu.bf16_dot() or "avx512_bf16" in flags


def _compiler_targets(macro: str) -> bool:
    """Whether the C compiler defines `macro` for -march=native (what the native build sees)."""
    import shutil
    import subprocess

    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    out = subprocess.run([cc, "-march=native", "-dM", "-E", "-x", "c", "/dev/null"], capture_output=True, text=True)
    return f"#define {macro} " in out.stdout


def test_variant_builds_match_the_native_build(variant_lib, monkeypatch):
    """Every machine runs one of four builds of the native kernels (AVX-512 with or without
    AVX512-BF16, AVX2 + FMA, plain C). Each variant against this machine's native build: the linear
    layer computes the same chain per output (bit-equal, vdpbf16ps or FMAs, the fused silu epilogue
    too), RMSNorm is bit-equal, the indexer's page scores are bit-equal, rope and the cache write
    stay bit-equal to torch, and attention meets the same bound as the native path."""
    from kernels.rope import apply_rope

    g = torch.Generator().manual_seed(11)
    w = torch.randn(100, 97, generator=g).to(torch.bfloat16)
    x = torch.randn(13, 97, generator=g).to(torch.bfloat16)
    wg = torch.randn(96, 64, generator=g).to(torch.bfloat16)
    xg = torch.randn(3, 64, generator=g).to(torch.bfloat16)
    lens = [1, 63, 97, 1025]
    cache, table, seq_lens = _filled_cache(torch.bfloat16, lens, page_size=16, hkv=3, d=64)
    q = torch.randn(len(lens), 9, 64, generator=g).to(torch.bfloat16)
    fast = (cpu.linear(x, cpu.PackedWeight(w), out_dtype=torch.float32),
            cpu.linear(x[:1], cpu.PackedWeight(w), out_dtype=torch.float32),  # (one row: the GEMV path)
            cpu.linear(x, cpu.PackedWeight(w, dtype=torch.float32), out_dtype=torch.float32),
            cpu.linear(xg, cpu.PackedWeight(wg, silu_half=True), out_dtype=torch.float32),
            cpu.paged_decode(q, cache, 0, table, seq_lens, scale=0.125))
    resid = torch.randn(13, 100, generator=g).to(torch.bfloat16)
    epilogues = (cpu.linear(x, cpu.PackedWeight(w), residual=resid),  # bf16 out + residual (100: a partial panel)
                 cpu.linear(xg, cpu.PackedWeight(wg, silu_half=True)))  # bf16 out of the silu epilogue
    norm_inputs = [((torch.randn(5, 576, generator=g) * 3).to(dt), torch.randn(576, generator=g).to(dt))
                   for dt in (torch.bfloat16, torch.float32)]
    norm_inputs.append((torch.randn(3, 40, generator=g), torch.randn(40, generator=g)))  # 40: a 16-lane part and a tail
    norms = [cpu.rms_norm(xn, wn, 1e-5) for xn, wn in norm_inputs]
    # Page scores: four rows at a time in the SIMD builds, one in plain C; one order (bf16 and
    # float32 bounds; 2D = 88 leaves a tail past the 16 lanes; 7 pages a partial group of four).
    score_inputs = [(q, cache.kbounds[0], table),
                    (torch.randn(3, 6, 44, generator=g), torch.randn(2, 9, 2, 44, generator=g),
                     torch.randint(0, 9, (3, 7), generator=g, dtype=torch.int32))]
    scores = [cpu.page_scores(*args) for args in score_inputs]

    monkeypatch.setattr(cpu, "_lib", lambda: variant_lib)
    assert cpu.simd_lanes() == {"x86-64-v2": 0, "x86-64-v3": 8, "x86-64-v4": 16}[variant_lib.march]
    assert not cpu.bf16_dot()  # none of the variants has AVX512-BF16: their FMAs against native vdpbf16ps
    assert torch.equal(cpu.linear(x, cpu.PackedWeight(w), out_dtype=torch.float32), fast[0])
    assert torch.equal(cpu.linear(x[:1], cpu.PackedWeight(w), out_dtype=torch.float32), fast[1])
    assert torch.equal(fast[1], fast[0][:1])
    assert torch.equal(cpu.linear(x, cpu.PackedWeight(w, dtype=torch.float32), out_dtype=torch.float32), fast[2])
    assert torch.equal(fast[2], fast[0])  # bf16 weights held in float32: the same products, the same chain
    assert torch.equal(cpu.linear(xg, cpu.PackedWeight(wg, silu_half=True), out_dtype=torch.float32), fast[3])
    assert torch.equal(cpu.linear(x, cpu.PackedWeight(w), residual=resid).view(torch.int16),
                       epilogues[0].view(torch.int16))
    assert torch.equal(cpu.linear(xg, cpu.PackedWeight(wg, silu_half=True)).view(torch.int16),
                       epilogues[1].view(torch.int16))
    for (xn, wn), expected in zip(norm_inputs, norms):  # one sum-of-squares order in every build
        assert torch.equal(cpu.rms_norm(xn, wn, 1e-5), expected)
    for args, expected in zip(score_inputs, scores):
        assert torch.equal(cpu.page_scores(*args), expected)
    out = cpu.paged_decode(q, cache, 0, table, seq_lens, scale=0.125)
    ref = dense_decode(q.float(), cache, 0, table, seq_lens)
    torch_bf16 = dense_decode(q, cache, 0, table, seq_lens).float()
    assert (out.float() - ref).abs().max() <= 2 * (torch_bf16 - ref).abs().max() + 1e-6
    assert (out.float() - fast[4].float()).abs().max() <= 2 * (torch_bf16 - ref).abs().max() + 1e-6
    _assert_fp8_dequant_exact(cpu.fp8_dequant)  # (the variant's row loads: vector or table)
    from kernels.kv_cache import fp8_quantize
    xq = torch.randn(32, 64, generator=g) * torch.exp(torch.randn(32, 64, generator=g) * 3)
    codes, _ = cpu.fp8_quantize(xq, 0.05)  # (the variant's cache writes)
    assert torch.equal(codes.view(torch.uint8), fp8_quantize(xq.view(32, 1, 64), torch.tensor([0.05])).view(32, 64).view(torch.uint8))
    for page_size in (8, 16):  # fp8 pages through the 64-dim kernel (or the generic rows of plain C)
        cache8, table8, lens8 = _filled_cache(torch.bfloat16, lens, page_size=page_size, hkv=3, d=64, kv="fp8_e4m3")
        out8 = cpu.paged_decode(q, cache8, 0, table8, lens8, scale=0.125)
        ref8 = dense_decode(q.float(), cache8, 0, table8, lens8)
        bound8 = 2 * (dense_decode(q, cache8, 0, table8, lens8).float() - ref8).abs().max() + 1e-6
        assert (out8.float() - ref8).abs().max() <= bound8

    qkv = (torch.randn(6, 15, 64, generator=g) * 4).to(torch.bfloat16)
    angles = torch.rand(6, 64, generator=g) * 6
    cos, sin = angles.cos().to(torch.bfloat16), angles.sin().to(torch.bfloat16)
    slots = torch.tensor([3, 17, 18, 40, 63, 64])
    native, reference = _cache(torch.bfloat16), _cache(torch.bfloat16)
    q_roped = cpu.rope_write(qkv, 9, cos, sin, slots, native, 1)
    qk = apply_rope(qkv[:, :12], cos[:, None], sin[:, None])
    reference.write(1, slots, qk[:, 9:], qkv[:, 12:])
    assert torch.equal(q_roped, qk[:, :9])
    assert torch.equal(native.k, reference.k) and torch.equal(native.kbounds, reference.kbounds)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("heads,hkv,d", [(9, 3, 64), (4, 4, 64), (6, 2, 40)], ids=["gqa3-d64", "mha-d64", "gqa3-d40"])
def test_page_scores_match_the_torch_indexer(heads, hkv, d, dtype):
    """The indexer's page scores read in place (kernels.cpu) against the torch reference that
    gathers the bounds first: equal to float32 rounding, batch invariant, and the same selection.
    A bf16 cache's bounds are bf16 (exact: min / max of bf16 keys); scoring them gives the same
    bits as scoring the same bounds held in float32."""
    from kernels.indexer.reference import page_scores, select_pages

    lens = [1, 63, 97, 1025]
    cache, table, seq_lens = _filled_cache(dtype, lens, page_size=16, hkv=hkv, d=d)
    assert cache.kbounds.dtype == dtype
    q = torch.randn(len(lens), heads, d, generator=torch.Generator().manual_seed(13))
    ref = page_scores(q, cache.kbounds[0], table)
    got = cpu.page_scores(q, cache.kbounds[0], table)
    valid = torch.arange(table.shape[1])[None, None, :] < ((seq_lens + 15) // 16)[:, None, None]
    torch.testing.assert_close(got[valid.expand_as(got)], ref[valid.expand_as(ref)], rtol=1e-5, atol=1e-4)
    for rows in ([0], [3], [2, 1]):
        assert torch.equal(cpu.page_scores(q[rows], cache.kbounds[0], table[rows]), got[rows])
    assert torch.equal(cpu.page_scores(q, cache.kbounds[0].float(), table), got)
    kw = dict(budget=128, sink_pages=1, local_pages=2)
    expected = select_pages(q, cache, 0, table, seq_lens, **kw)
    assert torch.equal(select_pages(q, cache, 0, table, seq_lens, scorer=cpu.page_scores, **kw), expected)
    assert torch.equal(cpu.select_pages(q, cache, 0, table, seq_lens, **kw), expected)  # fused: the same pages
    for rows in ([0], [3], [2, 1]):  # batch invariant
        assert torch.equal(cpu.select_pages(q[rows], cache, 0, table[rows], seq_lens[rows], **kw), expected[rows])


def test_variant_builds_read_the_sketches_alike(variant_lib, monkeypatch):
    """The indexer's first pass over the page-bound sketches takes eight pages at a time in the
    SIMD builds (D a multiple of 16) and one at a time in plain C: every build puts the same
    interval around every page, bit for bit, and selects the same pages."""
    kw = dict(budget=256, sink_pages=1, local_pages=2)
    cases = []
    for d in (64, 40):  # (40: the one-page loop in every build)
        batch = make_batch(lens=[3000, 1500, 37], n_kv_heads=3, head_dim=d, page_size=16, seed=d,
                           page_sketches=True)
        q = draw_queries(3, 9, d, seed=d)
        args = (q, batch.cache, 0, batch.block_table)
        cases.append((args, batch.seq_lens, cpu.sketch_intervals(*args), cpu.select_pages(*args, batch.seq_lens, **kw)))
        assert torch.isfinite(cases[-1][2][0][0, :, :180]).all()  # (the pages of the long rows are bounded)
    monkeypatch.setattr(cpu, "_lib", lambda: variant_lib)
    for args, seq_lens, (lo, hi), selected in cases:
        lo_v, hi_v = cpu.sketch_intervals(*args)
        assert torch.equal(lo_v, lo) and torch.equal(hi_v, hi)
        assert torch.equal(cpu.select_pages(*args, seq_lens, **kw), selected)


@pytest.mark.parametrize("sketches", [False, True], ids=["exact", "sketched"])
def test_select_pages_reads_the_layer_asked_for(sketches):
    """The native indexer finds a layer's bounds (and sketches) by offset, without a view per call:
    each layer of a three-layer cache selects its own pages, as the reference does, negative
    layers count from the end as tensor indexing does, and a layer past the cache is an error."""
    from kernels.indexer.reference import select_pages as reference_select

    kw = dict(budget=128, sink_pages=1, local_pages=2)
    batches = [make_batch(lens=[1500, 700], n_kv_heads=3, head_dim=64, page_size=16, num_layers=3, layer=layer,
                          seed=layer, page_sketches=sketches) for layer in range(3)]
    cache = batches[0].cache  # (each batch wrote one layer of its own cache: gather them into one)
    for layer in (1, 2):
        cache.k[layer], cache.v[layer] = batches[layer].cache.k[layer], batches[layer].cache.v[layer]
        cache.kbounds[layer] = batches[layer].cache.kbounds[layer]
        if sketches:
            cache.ksketch[layer] = batches[layer].cache.ksketch[layer]
    q = draw_queries(2, 9, 64, seed=9)
    picked = []
    for layer in range(3):
        table, lens = batches[layer].block_table, batches[layer].seq_lens
        got = cpu.select_pages(q, cache, layer, table, lens, **kw)
        assert torch.equal(got, reference_select(q, cache, layer, table, lens, **kw)), layer
        assert torch.equal(cpu.select_pages(q, cache, layer - 3, table, lens, **kw), got), layer
        picked.append(got)
    assert not torch.equal(picked[0], picked[1]) and not torch.equal(picked[1], picked[2])
    with pytest.raises(IndexError, match="layer 3"):
        cpu.select_pages(q, cache, 3, batches[0].block_table, batches[0].seq_lens, **kw)


def test_fused_selection_shapes_and_bad_input():
    cache, table, seq_lens = _filled_cache(torch.bfloat16, [40, 1], page_size=16, hkv=3, d=64)
    q = torch.randn(2, 9, 64).to(torch.bfloat16)
    kw = dict(budget=512, sink_pages=1, local_pages=1)
    out = cpu.select_pages(q, cache, 0, table, seq_lens, **kw)  # budget past the table: every valid page
    assert out.tolist() == [[[0, 1, 2]] * 3, [[0, -1, -1]] * 3]
    assert cpu.select_pages(q, cache, 0, table[:, :0], seq_lens, **kw).shape == (2, 3, 0)
    with pytest.raises(ValueError, match="do not fit"):
        cpu.select_pages(q, cache, 0, table[:1], seq_lens, **kw)
    with pytest.raises(ValueError, match="does not fit"):
        cpu.select_pages(q[:, :, :32], cache, 0, table, seq_lens, **kw)


def test_page_scores_of_float16_bounds_go_to_the_reference():
    from kernels.indexer.reference import page_scores

    g = torch.Generator().manual_seed(5)
    kbounds = torch.randn(2, 6, 2, 8, generator=g).half()
    q, table = torch.randn(2, 4, 8, generator=g), torch.tensor([[5, 1, 2], [0, 3, 4]])
    assert torch.equal(cpu.page_scores(q, kbounds, table), page_scores(q, kbounds, table))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_grouped_query_bounds_sum_the_heads_in_order(dtype):
    """The native indexer builds [sum_g min(q_g, 0) | sum_g relu(q_g)] itself, adding the G heads
    in order in float32 (bit for bit that loop; the torch reference equals it to float32 rounding:
    torch's own order changes with the shape), for 1..16 grouped heads, with NaN and +-inf."""
    from kernels.indexer.reference import grouped_query_bounds

    g = torch.Generator().manual_seed(17)
    for G in (1, 2, 3, 4, 7, 16):
        q = (torch.randn(4, 2 * G, 40, generator=g) * 30).to(dtype)
        q[0, 0, :4] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0]).to(dtype)
        got = cpu.grouped_query_bounds(q, 2)
        qg = q.float().view(4, 2, G, 40)
        neg, pos = qg[:, :, 0].clamp_max(0), qg[:, :, 0].clamp_min(0)
        for h in range(1, G):
            neg, pos = neg + qg[:, :, h].clamp_max(0), pos + qg[:, :, h].clamp_min(0)
        in_order = torch.stack((neg, pos), dim=2)
        assert got.shape == (4, 2, 2, 40)
        assert torch.equal(got.isnan(), in_order.isnan()) and torch.equal(got.nan_to_num(), in_order.nan_to_num())
        torch.testing.assert_close(got, grouped_query_bounds(q, 2), rtol=1e-6, atol=1e-5, equal_nan=True)
    with pytest.raises(ValueError, match="do not group"):
        cpu.grouped_query_bounds(torch.randn(1, 5, 8), 2)


def test_page_scores_reject_a_table_that_does_not_fit():
    kbounds = torch.randn(1, 4, 2, 8)
    with pytest.raises(ValueError, match="does not fit"):
        cpu.page_scores(torch.randn(1, 1, 8), kbounds, torch.tensor([[1, 2]]), max_pages=5)
    with pytest.raises(ValueError, match="does not fit"):
        cpu.page_scores(torch.randn(2, 1, 8), kbounds, torch.tensor([[1, 2]]))


@pytest.mark.parametrize("kv", ["auto", "fp8_e4m3"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
@pytest.mark.parametrize("heads,hkv,d", [(9, 3, 64), (4, 4, 64), (6, 2, 40)], ids=["gqa3-d64", "mha-d64", "gqa3-d40"])
@pytest.mark.parametrize("page_size,budget", [(16, 64), (16, 4096), (64, 128)], ids=["p16-b64", "p16-all", "p64-b128"])
def test_sparse_decode_matches_the_torch_reference(kv, dtype, heads, hkv, d, page_size, budget):
    from kernels.attention.reference import sparse_decode
    from kernels.indexer.reference import select_pages

    lens = [1, 63, 97, 1025]
    cache, table, seq_lens = _filled_cache(dtype, lens, page_size=page_size, hkv=hkv, d=d, kv=kv)
    q = torch.randn(len(lens), heads, d, generator=torch.Generator().manual_seed(14)).to(dtype)
    selected = select_pages(q, cache, 0, table, seq_lens, budget=budget, sink_pages=1, local_pages=2)
    out = cpu.sparse_decode(q, cache, 0, table, seq_lens, selected)
    exact = sparse_decode(q.double().float(), cache, 0, table, seq_lens, selected)  # float32 reference
    if dtype == torch.float32:
        torch.testing.assert_close(out, exact, atol=2e-6, rtol=1e-5)
    else:  # the tolerance rule: at most 2x the error of the torch path in the same dtype
        same = sparse_decode(q, cache, 0, table, seq_lens, selected).float()
        assert (out.float() - exact).abs().max() <= 2 * (same - exact).abs().max() + 1e-6
    if budget >= max(lens):  # every page, in order: exactly the dense kernel
        assert torch.equal(out, cpu.paged_decode(q, cache, 0, table, seq_lens, scale=1 / math.sqrt(d)))


def test_sparse_decode_is_batch_invariant_and_takes_any_page_order():
    from kernels.attention.reference import sparse_decode

    lens = [5, 300, 17, 1025]
    cache, table, seq_lens = _filled_cache(torch.bfloat16, lens, page_size=16, hkv=3, d=64)
    q = torch.randn(len(lens), 9, 64, generator=torch.Generator().manual_seed(15)).to(torch.bfloat16)
    g = torch.Generator().manual_seed(16)
    selected = torch.full((len(lens), 3, 6), -1, dtype=torch.int32)
    for i, n in enumerate(lens):  # random valid pages, unsorted, the partial last page anywhere, -1 gaps
        pages = torch.randperm(-(-n // 16), generator=g)[:5].int()
        selected[i, :, : len(pages)] = pages
    selected = selected[:, :, torch.randperm(6, generator=g)]
    full = cpu.sparse_decode(q, cache, 0, table, seq_lens, selected)
    ref = sparse_decode(q.float(), cache, 0, table, seq_lens, selected)
    same = sparse_decode(q, cache, 0, table, seq_lens, selected).float()
    assert (full.float() - ref).abs().max() <= 2 * (same - ref).abs().max() + 1e-6
    for rows in ([0], [3], [2, 0]):
        part = cpu.sparse_decode(q[rows], cache, 0, table[rows], seq_lens[rows], selected[rows])
        assert torch.equal(part, full[rows]), rows


@pytest.mark.parametrize("P,budget,sink,local,k_out", [(1, 64, 1, 2, None), (7, 48, 0, 1, None),
                                                        (64, 128, 1, 2, None), (300, 512, 2, 3, None),
                                                        (40, 4096, 1, 2, None), (3, 64, 1, 1, 6), (0, 64, 1, 1, None)],
                         ids=lambda v: str(v))
def test_select_from_scores_equals_the_torch_reference(P, budget, sink, local, k_out):
    """The native top-k against kernels.indexer.reference.select_from_scores, exactly: ties (many
    equal scores), scores an ulp apart and tiny ones (the heap passes over a page below its
    least score), NaN, +-inf, -0.0 and +0.0, sequences of every length up to the table."""
    from kernels.indexer.reference import select_from_scores

    g = torch.Generator().manual_seed(P + budget)
    N, Hkv = 6, 3
    for trial in range(24):
        scores = torch.randint(-4, 5, (N, Hkv, P), generator=g).float() / 2  # coarse: many ties
        if trial % 4 == 1:
            scores = torch.randn(N, Hkv, P, generator=g)
        elif trial % 4 == 2:
            scores = torch.randn(N, Hkv, P, generator=g) * 1e-3
        elif trial % 4 == 3:  # 1 + k ulp
            scores = 1.0 + torch.randint(0, 9, (N, Hkv, P), generator=g).float() * 2.0 ** -23
        special = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0, 0.0])
        pick = torch.rand(N, Hkv, P, generator=g) < 0.1
        scores[pick] = special[torch.randint(0, 5, (int(pick.sum()),), generator=g)]
        seq_lens = torch.randint(1, max(P, 1) * 16 + 1, (N,), generator=g)
        kw = dict(page_size=16, budget=budget, sink_pages=sink, local_pages=local, num_pages_out=k_out)
        expected = select_from_scores(scores, seq_lens, **kw)
        assert torch.equal(cpu.select_from_scores(scores, seq_lens, **kw), expected), trial


def test_sparse_decode_rejects_pages_past_the_table_and_serves_other_dtypes():
    from kernels.attention.reference import sparse_decode

    cache, table, seq_lens = _filled_cache(torch.float32, [40], page_size=16, hkv=3, d=64)
    q = torch.randn(1, 9, 64)
    with pytest.raises(ValueError, match="past the block table"):
        cpu.sparse_decode(q, cache, 0, table, seq_lens, torch.tensor([[[0, 5]] * 3], dtype=torch.int32))
    with pytest.raises(ValueError, match="a page twice"):
        cpu.sparse_decode(q, cache, 0, table, seq_lens, torch.tensor([[[2, 0, 2]] * 3], dtype=torch.int32))
    sel = torch.tensor([[[0, 2]] * 3], dtype=torch.int32)
    half = cpu.sparse_decode(q.half(), cache, 0, table, seq_lens, sel)  # float16: the reference
    assert half.dtype == torch.float16
    assert torch.equal(half, sparse_decode(q.half(), cache, 0, table, seq_lens, sel))


@pytest.mark.parametrize("attention", ["dense", "sparse"])
@pytest.mark.parametrize("kv", ["auto", "fp8_e4m3"])
def test_decode_layer_is_the_composition_of_the_native_ops(kv, attention):
    """decode_layer = rms_norm, linear, rope_write, paged_decode (or select_pages + sparse_decode),
    linear + residual, rms_norm, linear (silu), linear + residual, bit for bit, on bf16 and fp8
    caches: the output and the cache it leaves (codes or bf16 values, page bounds, fp8 saturation
    counts; scales small enough that some values saturate)."""
    g = torch.Generator().manual_seed(21)
    H, Hkv, D, dim, hidden, page_size = 9, 3, 64, 96, 160, 16
    bf = lambda *shape, s=1.0: (torch.randn(*shape, generator=g) * s).to(torch.bfloat16)
    w = layer_weights(g, H=H, Hkv=Hkv, D=D, dim=dim, hidden=hidden, layer=1)
    lens = [70, 33, 128]  # positions after this step's token
    caches, tables = [], None
    for _ in range(2):  # two equal caches: layer 1 holds every earlier position of each sequence
        cache, tables, seq_lens = _filled_cache(torch.bfloat16, lens, page_size=page_size, hkv=Hkv, d=D, kv=kv)
        if kv == "fp8_e4m3":
            cache.set_scales(1, torch.full((Hkv,), 0.004), torch.full((Hkv,), 0.003))
        fill = torch.Generator().manual_seed(22)
        for i, n in enumerate(lens):
            before = torch.tensor([int(tables[i, t // page_size]) * page_size + t % page_size for t in range(n - 1)])
            cache.write(1, before, (torch.randn(n - 1, Hkv, D, generator=fill) * 0.5).to(torch.bfloat16),
                        (torch.randn(n - 1, Hkv, D, generator=fill) * 0.5).to(torch.bfloat16))
        caches.append(cache)
    slots = torch.tensor([int(tables[i, (n - 1) // page_size]) * page_size + (n - 1) % page_size
                          for i, n in enumerate(lens)])
    x = bf(len(lens), dim)
    angles = torch.rand(len(lens), D, generator=g) * 6
    cos, sin = angles.cos().to(torch.bfloat16), angles.sin().to(torch.bfloat16)
    sparse = dict(budget=32, sink_pages=1, local_pages=1)
    layout = (cpu.SparseDecodeLayout(caches[0], tables, seq_lens, **sparse) if attention == "sparse"
              else cpu.DecodeLayout(caches[0], tables, seq_lens))
    fused = x.clone()
    scratch = cpu.decode_layer_scratch(len(lens), dim, H, Hkv, D, hidden)
    if kv == "fp8_e4m3":  # an fp8 layer whose scales are not fixed yet is refused, not quantized with 1.0
        fresh = _cache(torch.bfloat16, kv=kv)
        with pytest.raises(ValueError, match="calibrate"):
            cpu.decode_layer(x.clone(), w, cos, sin, slots, fresh, cpu.DecodeLayout(fresh, tables, seq_lens), scratch)
    cpu.decode_layer(fused, w, cos, sin, slots, caches[0], layout, scratch)

    c = caches[1]
    qkv = cpu.linear(cpu.rms_norm(x, w.attention_norm, w.eps), w.wqkv)
    q = cpu.rope_write(qkv.view(len(lens), H + 2 * Hkv, D), H, cos, sin, slots, c, 1)
    if attention == "sparse":
        selected = cpu.select_pages(q, c, 1, tables, seq_lens, **sparse)
        att = cpu.sparse_decode(q, c, 1, tables, seq_lens, selected, scale=1 / D ** 0.5)
        assert torch.equal(selected, layout.selected)
    else:
        att = cpu.paged_decode(q, c, 1, tables, seq_lens, scale=1 / D ** 0.5)
    h = cpu.linear(att.reshape(len(lens), H * D), w.wo, residual=x)
    composed = cpu.linear(cpu.linear(cpu.rms_norm(h, w.ffn_norm, w.eps), w.w13), w.w2, residual=h)

    assert torch.isfinite(fused.float()).all()
    assert torch.equal(fused.view(torch.int16), composed.view(torch.int16))
    for name in ("k", "v"):
        a, b = getattr(caches[0], name), getattr(c, name)
        assert torch.equal(a.view(torch.uint8), b.view(torch.uint8))
    assert torch.equal(caches[0].kbounds, c.kbounds)
    if kv == "fp8_e4m3":
        assert torch.equal(caches[0].saturated, c.saturated) and int(c.saturated.sum()) > 0


def test_decode_layer_args_are_laid_out_as_the_c_struct(variant_lib):
    """decode_layer passes its arguments as one ctypes.Structure (kernels/cpu/_loader.py,
    DecodeLayerArgs) that tk_decode_layer reads as common.h's tk_decode_layer_args: every field's
    name, offset, size and kind, and the whole size, as this machine's build and each -march variant
    compiled them. A field added, dropped, moved or retyped on one side only fails here instead of
    corrupting memory."""
    import ctypes

    from kernels.cpu._loader import DecodeLayerArgs, decode_layer_args_layout

    kinds = {ctypes.c_void_p: "P", ctypes.c_int64: "q", ctypes.c_int: "i", ctypes.c_float: "f"}
    python = [(name, getattr(DecodeLayerArgs, name).offset, getattr(DecodeLayerArgs, name).size, kinds[ctype])
              for name, ctype in DecodeLayerArgs._fields_]
    for lib in (cpu._lib(), variant_lib):
        size, fields = decode_layer_args_layout(lib)
        assert fields == python
        assert size == ctypes.sizeof(DecodeLayerArgs)
