"""PagedKVCache: writes land where the block table says, fp8 stays within e4m3 precision and
saturates instead of overflowing, and per-page key bounds track what attention will read."""

import pytest
import torch

from kernels.kv_cache import FP8_MAX, PagedKVCache, fp8_dequantize, fp8_quantize

from .helpers import make_batch, read_sequence

# e4m3: 3 mantissa bits -> round-to-nearest relative error <= 2**-4 for normal numbers;
# below the smallest normal (2**-6) the spacing is 2**-9, so absolute error <= 2**-10 (scaled).
E4M3_REL = 2.0**-4
E4M3_SUBNORMAL_ABS = 2.0**-10


def _cache(kv_cache_dtype="auto", dtype=torch.float32, **kw):
    args = dict(num_layers=2, num_pages=8, page_size=16, n_kv_heads=3, head_dim=64, dtype=dtype,
                kv_cache_dtype=kv_cache_dtype)
    args.update(kw)
    return PagedKVCache(**args)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("page_size", [16, 64], ids=lambda s: f"page{s}")
@pytest.mark.parametrize("n_tokens", [1, 63, 97], ids=lambda n: f"len{n}")
def test_auto_cache_stores_values_exactly(dtype, page_size, n_tokens):
    batch = make_batch(lens=[n_tokens], n_kv_heads=3, head_dim=64, page_size=page_size, dtype=dtype, seed=1)
    k, v = read_sequence(batch, 0)
    assert batch.cache.k.dtype == dtype
    torch.testing.assert_close(k, batch.keys[0].to(dtype).double(), rtol=0, atol=0)
    torch.testing.assert_close(v, batch.values[0].to(dtype).double(), rtol=0, atol=0)


@pytest.mark.parametrize("magnitude", [1e-3, 1.0, 300.0], ids=["small", "unit", "large"])
def test_fp8_round_trip_is_bounded_by_e4m3_precision(magnitude):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(97, 3, 64, generator=g) * magnitude
    x[:, 1] *= 10  # heads of different range get their own scale
    cache = _cache("fp8_e4m3", num_pages=8)
    slots = torch.arange(97)
    cache.write(0, slots, x, -x)
    assert cache.k.dtype == torch.float8_e4m3fn
    k, v = cache.dequantized(0)
    k = k.reshape(-1, 3, 64)[:97]
    v = v.reshape(-1, 3, 64)[:97]
    scale = cache.k_scale[0].view(1, 3, 1)
    bound = E4M3_REL * x.abs() + E4M3_SUBNORMAL_ABS * scale
    assert ((k - x).abs() <= bound).all()
    assert ((v + x).abs() <= bound).all()
    # Per-head scales follow the per-head range (head 1 is 10x larger).
    ratio = cache.k_scale[0, 1] / cache.k_scale[0, 0]
    assert 5 < ratio < 20
    assert cache.saturated.sum() == 0


def test_fp8_saturates_at_448_times_scale_and_counts_it():
    cache = _cache("fp8_e4m3")
    calib = torch.ones(4, 3, 64)
    cache.calibrate(0, calib, calib)
    scale = cache.k_scale[0].clone()
    torch.testing.assert_close(scale, torch.full((3,), cache.fp8_headroom / FP8_MAX))
    big = torch.full((2, 3, 64), 1e6)
    big[1] = -1e6
    cache.write(0, torch.tensor([0, 1]), big, big)
    k, _ = cache.dequantized(0)
    assert torch.isfinite(k).all()
    torch.testing.assert_close(k[0, 0], (FP8_MAX * scale)[:, None].expand(3, 64))
    torch.testing.assert_close(k[0, 1], -(FP8_MAX * scale)[:, None].expand(3, 64))
    assert cache.saturated[0].tolist() == [2 * 2 * 64] * 3  # 2 tokens x (k and v) x 64 dims per head
    # Scales stay fixed after calibration: later writes never rescale stored pages.
    cache.write(0, torch.tensor([2]), torch.full((1, 3, 64), 5.0), torch.full((1, 3, 64), 5.0))
    torch.testing.assert_close(cache.k_scale[0], scale)


def test_fp8_first_write_calibrates_each_layer_independently():
    cache = _cache("fp8_e4m3")
    assert cache.calibrated == [False, False]
    cache.write(1, torch.tensor([3]), torch.full((1, 3, 64), 2.0), torch.full((1, 3, 64), 4.0))
    assert cache.calibrated == [False, True]
    torch.testing.assert_close(cache.k_scale[1], torch.full((3,), 2.0 * cache.fp8_headroom / FP8_MAX))
    torch.testing.assert_close(cache.v_scale[1], torch.full((3,), 4.0 * cache.fp8_headroom / FP8_MAX))
    assert (cache.k_scale[0] == 1).all()


def test_fp8_quantize_helpers_round_trip():
    x = torch.tensor([[0.0, 1.0, -2.5, 448.0 * 2, 1e-4]]).view(1, 1, 5)
    scale = torch.tensor([2.0])
    q = fp8_quantize(x, scale)
    assert q.dtype == torch.float8_e4m3fn
    torch.testing.assert_close(fp8_dequantize(q, scale), torch.tensor([[[0.0, 1.0, -2.5, 896.0, 0.0]]]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("kv_cache_dtype", ["auto", "fp8_e4m3"], ids=["kv_auto", "kv_fp8"])
@pytest.mark.parametrize("page_size", [16, 64], ids=lambda s: f"page{s}")
def test_page_bounds_are_elementwise_min_max_of_the_keys_attention_reads(kv_cache_dtype, page_size, dtype):
    """Exactly the min / max of the keys as attention reads them, kept in the keys' own dtype
    (bf16 bounds of bf16 keys: half the indexer's bytes, nothing lost); float32 for fp8."""
    batch = make_batch(lens=[1, 97, 63], n_kv_heads=3, head_dim=40, page_size=page_size,
                       kv_cache_dtype=kv_cache_dtype, seed=3, dtype=dtype)
    cache = batch.cache
    expected_dtype = torch.float32 if kv_cache_dtype == "fp8_e4m3" else dtype
    assert cache.bounds_dtype == expected_dtype
    assert cache.kmin.shape == (1, cache.num_pages, 3, 40) and cache.kmin.dtype == expected_dtype
    for i in range(3):
        k, _ = read_sequence(batch, i)
        n = int(batch.seq_lens[i])
        for p in range(-(-n // page_size)):
            page = int(batch.block_table[i, p])
            chunk = k[p * page_size:(p + 1) * page_size].float()
            torch.testing.assert_close(cache.kmin[0, page].float(), chunk.amin(0), rtol=0, atol=0)
            torch.testing.assert_close(cache.kmax[0, page].float(), chunk.amax(0), rtol=0, atol=0)


def test_reset_pages_empties_bounds_of_reallocated_pages_only():
    batch = make_batch(lens=[40], n_kv_heads=3, head_dim=64, page_size=16, seed=4)
    cache = batch.cache
    pages = batch.block_table[0, :3].long()
    before = cache.kmax[0, pages[1]].clone()
    cache.reset_pages(pages[:1])
    assert (cache.kmin[0, pages[0]] == float("inf")).all()
    assert (cache.kmax[0, pages[0]] == float("-inf")).all()
    torch.testing.assert_close(cache.kmax[0, pages[1]], before)


@pytest.mark.parametrize("kv_cache_dtype", ["auto", "fp8_e4m3"])
def test_a_reallocated_page_that_held_nan_does_not_poison_its_next_owner(kv_cache_dtype):
    """A run that wrote NaN into its pages (a broken kernel) frees them; the next sequence gets
    a page and fills only part of it. Dense attention reads whole pages and masks the tail, so
    the tail must hold finite zeros again after reset_pages."""
    from kernels.attention.dense import dense_decode

    cache = _cache(kv_cache_dtype)
    g = torch.Generator().manual_seed(6)
    full = torch.randn(16, 3, 64, generator=g)
    cache.write(0, torch.arange(16), full, full)  # calibrates the fp8 scales on finite data
    cache.k.view(torch.uint8)[0, 0] = 0xFF  # NaN bits in every storage dtype (e4m3fn's NaN is 0x7F/0xFF)
    cache.v.view(torch.uint8)[0, 0] = 0xFF
    cache.reset_pages(torch.tensor([0]))
    cache.write(0, torch.arange(3), full[:3], full[:3])
    q = torch.randn(1, 9, 64, generator=g)
    out = dense_decode(q, cache, 0, torch.tensor([[0]], dtype=torch.int32), torch.tensor([3], dtype=torch.int32))
    assert torch.isfinite(out).all()
    assert (cache.k.view(torch.uint8)[0, 0, 3:] == 0).all() and (cache.v.view(torch.uint8)[0, 0, 3:] == 0).all()


def test_write_rejects_wrong_shapes():
    cache = _cache()
    with pytest.raises(ValueError, match=r"\(N, 3, 64\)"):
        cache.write(0, torch.tensor([0]), torch.zeros(1, 9, 64), torch.zeros(1, 9, 64))
    with pytest.raises(ValueError, match="slots"):
        cache.write(0, torch.tensor([0, 1]), torch.zeros(1, 3, 64), torch.zeros(1, 3, 64))


def test_reset_pages_rejects_ids_outside_the_pool():
    """torch indexing would wrap -1 to the last page and reset the wrong page (and leave its
    indexer sketch stale): the cache refuses instead, and changes nothing."""
    cache = PagedKVCache(num_layers=1, num_pages=4, page_size=2, n_kv_heads=1, head_dim=4, dtype=torch.float32)
    cache.write(0, torch.arange(8), torch.ones(8, 1, 4), torch.ones(8, 1, 4))
    before = cache.kbounds.clone()
    for bad in ([-1], [4], [0, 7]):
        with pytest.raises(ValueError, match="page ids must be in"):
            cache.reset_pages(torch.tensor(bad))
    assert torch.equal(cache.kbounds, before)


@pytest.mark.parametrize("kv_cache_dtype", ["auto", "fp8_e4m3"])
def test_copy_pages_copies_keys_values_bounds_and_sketches(kv_cache_dtype):
    """The engine copies a shared prompt's last, partly filled page into each sample's own page:
    the copy must read back the same keys and values, have the same bounds and sketch rows (the
    indexer reads those), and take later writes of its own."""
    cache = _cache(kv_cache_dtype)
    g = torch.Generator().manual_seed(8)
    for layer in range(2):
        k, v = torch.randn(21, 3, 64, generator=g), torch.randn(21, 3, 64, generator=g)
        cache.write(layer, torch.arange(21), k, v)  # page 0 full, page 1 holds 5 tokens
    cache.reset_pages(torch.tensor([5]))
    cache.copy_pages(torch.tensor([1]), torch.tensor([5]))
    assert torch.equal(cache.k[:, 5].view(torch.uint8), cache.k[:, 1].view(torch.uint8))
    assert torch.equal(cache.v[:, 5].view(torch.uint8), cache.v[:, 1].view(torch.uint8))
    assert torch.equal(cache.kbounds[:, :, 5], cache.kbounds[:, :, 1])
    if cache.ksketch is not None:
        assert torch.equal(cache.ksketch[:, :, 5], cache.ksketch[:, :, 1])
    # A later token written to the copy changes the copy only.
    before = cache.kbounds[:, :, 1].clone()
    big = torch.full((1, 3, 64), 3.0)
    cache.write(0, torch.tensor([5 * 16 + 5]), big, big)
    assert torch.equal(cache.kbounds[:, :, 1], before)
    assert (cache.kmax[0, 5] >= cache.kmax[0, 1]).all() and not torch.equal(cache.kmax[0, 5], cache.kmax[0, 1])


def test_copy_pages_rejects_bad_page_lists():
    cache = _cache()
    for src, dst, match in (([0], [1, 2], "as many"), ([0], [8], "page ids must be in"), ([-1], [2], "page ids"),
                            ([0, 1], [1, 2], "distinct"), ([0, 1], [2, 2], "distinct")):
        with pytest.raises(ValueError, match=match):
            cache.copy_pages(torch.tensor(src), torch.tensor(dst))


@pytest.mark.parametrize("kv_cache_dtype,dtype,page_sketches", [
    ("auto", torch.float32, None),     # float32 bounds: sketched where the native kernels build
    ("auto", torch.bfloat16, True),    # bf16 bounds, sketched on request
    ("auto", torch.bfloat16, False),   # no sketches
    ("fp8_e4m3", torch.float32, None),
], ids=["fp32", "bf16-sketched", "bf16-unsketched", "fp8"])
def test_restore_bounds_gives_back_the_snapshot_pages_exact_bounds_and_sketches(kv_cache_dtype, dtype, page_sketches):
    """The engine's teacher-forced divergence runs one decode pass per setting over the same
    pages; each must start from the bounds and sketches the prefill left, bit for bit (bounds
    only grow as keys are written). Pages outside the snapshot keep what was written since."""
    cache = _cache(kv_cache_dtype, dtype=dtype, page_sketches=page_sketches)
    g = torch.Generator().manual_seed(9)
    for layer in range(2):  # pages 0 and 1 full, page 2 holds 8 tokens, page 3 empty
        cache.write(layer, torch.arange(40), torch.randn(40, 3, 64, generator=g), torch.randn(40, 3, 64, generator=g))
    pages = torch.tensor([2, 3])
    snap = cache.snapshot_bounds(pages)
    bounds = cache.kbounds[:, :, pages].clone()
    sketch = None if cache.ksketch is None else cache.ksketch[:, :, pages].clone()

    def widen():  # larger keys on pages 2, 3 and 0
        slots = torch.tensor([2 * 16 + 9, 3 * 16, 5])
        for layer in range(2):
            cache.write(layer, slots, 5 * torch.randn(3, 3, 64, generator=g), torch.randn(3, 3, 64, generator=g))

    widen()
    assert not torch.equal(cache.kbounds[:, :, pages], bounds)  # (the writes did change them)
    if sketch is not None:
        assert not torch.equal(cache.ksketch[:, :, pages], sketch)
    for _ in range(2):  # the snapshot is a copy: it restores as often as asked
        page0 = cache.kbounds[:, :, 0].clone()
        cache.restore_bounds(snap)
        assert torch.equal(cache.kbounds[:, :, pages], bounds)
        if sketch is not None:
            assert torch.equal(cache.ksketch[:, :, pages], sketch)
        assert torch.equal(cache.kbounds[:, :, 0], page0)
        widen()


def test_restore_bounds_refuses_a_snapshot_of_another_layout():
    snap = _cache(head_dim=32).snapshot_bounds(torch.tensor([1]))
    with pytest.raises(ValueError, match="another layout"):
        _cache().restore_bounds(snap)
    with pytest.raises(ValueError, match="page ids must be in"):
        _cache().snapshot_bounds(torch.tensor([8]))
