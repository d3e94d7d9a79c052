"""The native indexer's page-bound sketches (kernels/cpu/indexer.c, "page-bound sketches").

The first pass of kernels.cpu.select_pages reads an 8-bit sketch of every page's [kmin | kmax]
row and scores exactly only the pages it cannot rule out. That is only right if (1) every
sketch row bounds its bounds row, (2) the interval it puts around a page's score contains the
exact float32 score, (3) every writer of the bounds keeps the sketches current, and (4) the
selection is then exactly the exact indexer's. Each is tested here, (4) against the torch
reference on ties, NaN / inf keys and adversarial rounding."""

from __future__ import annotations

import pytest
import torch

from kernels import cpu
from kernels.indexer.reference import select_pages as reference_select
from kernels.kv_cache import PagedKVCache

from .helpers import draw_queries, layer_weights, make_batch

pytestmark = pytest.mark.usefixtures("native_kernels")  # (skips without them, fails under REQUIRE_SERVICES=1)


def _decode_rows(sketch: torch.Tensor, D: int):
    """(..., R) uint8 rows -> codes (..., 2D) float64, and lo, step, err (..., 2) float64."""
    cb = (2 * D + 15) // 16 * 16
    codes = sketch[..., : 2 * D].double()
    prm = sketch[..., cb: cb + 32].contiguous().view(torch.float32).double()
    return codes, prm[..., [0, 3]], prm[..., [1, 4]], prm[..., [2, 5]]


def _exact_select(q, cache: PagedKVCache, table, seq_lens, **kw) -> torch.Tensor:
    """The native selection with the sketches set aside: every page scored exactly."""
    sketches, cache.ksketch = cache.ksketch, None
    try:
        return cpu.select_pages(q, cache, 0, table, seq_lens, **kw)
    finally:
        cache.ksketch = sketches


def _fresh(cache: PagedKVCache) -> torch.Tensor:
    """The sketches rebuilt from the bounds as they are now."""
    fresh = torch.empty_like(cache.ksketch)
    for layer in range(cache.num_layers):  # (one layer at a time: the cache rebuilds all at once on reset)
        cpu.sketch_pages(cache.kbounds[layer], fresh[layer])
    return fresh


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("D", [64, 40, 37, 128, 129], ids=lambda d: f"d{d}")
def test_every_sketch_row_bounds_its_bounds_row(dtype, D):
    g = torch.Generator().manual_seed(D)
    Hkv, pages = 2, 40
    kb = torch.randn(Hkv, pages, 2, D, generator=g) * torch.rand(Hkv, pages, 1, 1, generator=g) * 10
    kb[0, 1] = 0.0  # constant halves: step 0
    kb[0, 2, 0] = -1.5
    kb[0, 3, 1, 5] = float("nan")  # non-finite, or too large to multiply safely: always scored exactly
    kb[0, 4, 0, 0] = float("inf")
    kb[0, 5, 1, 3] = -float("inf")
    kb[0, 6] *= 1e20
    kb[1, 0] = torch.randn(2, D, generator=g) * 1e-30  # subnormal-ish in float32, flushed or not in bf16
    kb[1, 1] = torch.randn(2, D, generator=g) * 1e6
    kb[1, 2, :, : D // 2] = 3.0  # outliers far from the rest of the half
    kb[1, 2, :, 0] = -300.0
    kb = kb.to(dtype)
    sketch = torch.empty(Hkv, pages, cpu.sketch_row_bytes(D), dtype=torch.uint8)
    cpu.sketch_pages(kb, sketch)
    assert cpu.sketch_row_bytes(D) % 16 == 0 and cpu.sketch_row_bytes(D) >= -(-2 * D // 16) * 16 + 32
    codes, lo, step, err = _decode_rows(sketch, D)
    x = kb.double().view(Hkv, pages, 2, D)
    finite = (x.abs() <= 1e18).all(-1)  # per half
    if D > 128:  # past SKETCH_MAX_D: no sketch (the indexer scores such heads exactly)
        assert torch.isinf(err).all()
        return
    assert torch.equal(torch.isinf(err), ~finite)
    decoded = lo[..., None] + codes.view(Hkv, pages, 2, D) * step[..., None]
    gap = (x - decoded).abs().amax(-1)
    assert (gap[finite] <= err[finite]).all()
    # and tight: half a step (and the float32 rounding of the code) plus the slack for the
    # rounding of the scores (4e-5 of the largest magnitude)
    m = x.abs().amax(-1)
    assert (err[finite] <= step[finite] * 0.5001 + 4.1e-5 * m[finite] + 1e-30).all()
    assert ((codes >= 0) & (codes <= 255)).all()


@pytest.mark.parametrize("kv,dtype", [("auto", torch.float32), ("auto", torch.bfloat16), ("fp8_e4m3", torch.bfloat16)],
                         ids=["fp32", "bf16", "fp8"])
@pytest.mark.parametrize("heads,hkv,d", [(9, 3, 64), (4, 4, 64), (6, 2, 40)], ids=["gqa3-d64", "mha-d64", "gqa3-d40"])
def test_sketch_intervals_contain_the_exact_scores(kv, dtype, heads, hkv, d):
    """lo <= exact <= hi for every page, the exact score being what kernels.cpu.page_scores
    computes (the float32 value the selection ranks), and the interval narrow: well under the
    spread of the scores, or the sketch would rule nothing out."""
    batch = make_batch(lens=[1275, 643], n_kv_heads=hkv, head_dim=d, page_size=16, dtype=dtype, kv_cache_dtype=kv,
                       seed=3, scales=0.02 if kv == "fp8_e4m3" else None, page_sketches=True)
    cache, table, seq_lens = batch.cache, batch.block_table, batch.seq_lens
    table = table.clamp_min(0)
    for seed, scale in [(0, 1.0), (1, 1e-3), (2, 50.0)]:
        q = (draw_queries(2, heads, d, seed=seed) * scale).to(dtype)
        q[0, 0, : d // 2] = 0.0  # zero weights: 0 * err terms
        exact = cpu.page_scores(q, cache.kbounds[0], table).double()
        lo, hi = cpu.sketch_intervals(q, cache, 0, table)
        n_valid = (seq_lens.long() + 15) // 16
        valid = torch.arange(table.shape[1])[None, None, :] < n_valid[:, None, None]
        valid = valid.expand_as(exact)
        assert (lo[valid] <= exact[valid]).all() and (exact[valid] <= hi[valid]).all()
        width = (hi - lo)[valid]
        spread = exact[valid].std()
        assert torch.isfinite(width).all() and width.median() < 0.2 * spread, (width.median(), spread)


def test_sketch_intervals_hold_at_code_midpoints():
    """Bounds placed exactly halfway between two codes (the quantizer's worst case), every sign
    of the query weight against every sign of the rounding error: still inside."""
    D, Hkv, pages = 64, 1, 96
    cache = PagedKVCache(num_layers=1, num_pages=pages, page_size=1, n_kv_heads=Hkv, head_dim=D, dtype=torch.float32)
    g = torch.Generator().manual_seed(7)
    lo, step = -2.0, 4.0 / 255
    codes = torch.randint(0, 255, (pages, D), generator=g).double()
    keys = (lo + (codes + 0.5) * step).float()  # each key is a page of one token: kmin = kmax = key
    keys[:, 0], keys[:, 1] = lo, lo + 255 * step  # pin the range
    cache.reset_pages(torch.arange(pages))
    cache.write(0, torch.arange(pages), keys[:, None, :], keys[:, None, :])
    table = torch.arange(pages, dtype=torch.int32)[None]
    for s in range(8):
        q = torch.randn(1, 1, D, generator=torch.Generator().manual_seed(100 + s)).sign() * (1 + s)
        exact = cpu.page_scores(q, cache.kbounds[0], table).double()
        lo_, hi_ = cpu.sketch_intervals(q, cache, 0, table)
        assert (lo_ <= exact).all() and (exact <= hi_).all()


def _underflow_cases(dtype):
    """(keys (pages, D), query (1, 1, D)): page 0 must be chosen; the others score below it."""
    D, pages = 64, 64
    a, u = 2.0 ** -75, 2.0 ** -149
    keys = torch.zeros(pages, D, dtype=torch.float64)
    keys[0, :] = (0.5 + 2.0 ** -8) * u / a  # 64 products of 0.504 units: each rounds up, 64 units
    keys[1:, 0] = 40 * u / a  # one exact product of 40 units
    yield keys.to(dtype), torch.full((1, 1, D), a).to(dtype)
    if dtype == torch.float32:  # a query below 2^-100 (its int16 scale would flush to zero in float32)
        keys = torch.full((pages, D), 1e15)
        keys[0] = 0.0
        keys[0, 0] = 1e18
        q = torch.zeros(1, 1, D)
        q[0, 0, 0] = 1e-42
        yield keys, q


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_sketches_hold_where_products_underflow(dtype):
    """Scores in float32's subnormal range, where rounding is absolute (up to 2^-150 an
    operation), not relative, and a float32 query too small for the int16 scale: the intervals
    hold the exact scores and the selection is the exact pass's. (Found by review: the error
    bound was relative only, and the scale could flush to zero.)"""
    D, pages = 64, 64
    table = torch.arange(pages, dtype=torch.int32)[None]
    lens = torch.tensor([pages], dtype=torch.int32)
    kw = dict(budget=8, sink_pages=0, local_pages=0)
    for keys, q in _underflow_cases(dtype):
        cache = PagedKVCache(num_layers=1, num_pages=pages, page_size=1, n_kv_heads=1, head_dim=D, dtype=dtype,
                             page_sketches=True)
        cache.write(0, torch.arange(pages), keys[:, None, :], keys[:, None, :])
        exact_scores = cpu.page_scores(q, cache.kbounds[0], table).double()
        lo, hi = cpu.sketch_intervals(q, cache, 0, table)
        assert ((lo <= exact_scores) & (exact_scores <= hi)).all()
        got = cpu.select_pages(q, cache, 0, table, lens, **kw)
        exact = _exact_select(q, cache, table, lens, **kw)
        assert torch.equal(got, exact) and 0 in got[0, 0].tolist()


SELECTION_CASES = [
    # (lens, page_size, budget, sink, local)
    ([2000, 1500, 1100, 600], 16, 64, 1, 2),
    ([2000, 1700], 16, 256, 1, 2),
    ([2000, 1100], 16, 128, 0, 0),
    ([2000, 1100], 16, 160, 3, 4),
    ([8000, 5000], 64, 512, 1, 2),
]


@pytest.mark.parametrize("kv,dtype", [("auto", torch.float32), ("auto", torch.bfloat16), ("fp8_e4m3", torch.bfloat16)],
                         ids=["fp32", "bf16", "fp8"])
@pytest.mark.parametrize("heads,hkv,d", [(9, 3, 64), (4, 4, 64), (6, 2, 40)], ids=["gqa3-d64", "mha-d64", "gqa3-d40"])
@pytest.mark.parametrize("discrete", [False, True], ids=["continuous", "ties"])
def test_sketched_selection_is_the_exact_selection(kv, dtype, heads, hkv, d, discrete):
    """The two-pass selection against the exact one (no sketches) and the torch reference, on
    long sequences (where the sketches apply) and short ones (where they do not), continuous
    keys and discrete ones (many exactly equal scores: ties go to the lower page)."""
    for case, (lens, page_size, budget, sink, local) in enumerate(SELECTION_CASES):
        if page_size == 64 and d == 40:
            continue  # (one large case per layout is enough)
        batch = make_batch(lens=lens + [37], n_kv_heads=hkv, head_dim=d, page_size=page_size, dtype=dtype,
                           kv_cache_dtype=kv, seed=case, discrete=discrete,
                           scales=0.25 if kv == "fp8_e4m3" else None, page_sketches=True)
        cache, table, seq_lens = batch.cache, batch.block_table, batch.seq_lens
        q = draw_queries(len(lens) + 1, heads, d, seed=case, discrete=discrete).to(dtype)
        kw = dict(budget=budget, sink_pages=sink, local_pages=local)
        expected = reference_select(q, cache, 0, table, seq_lens, **kw)
        got = cpu.select_pages(q, cache, 0, table, seq_lens, **kw)
        exact = _exact_select(q, cache, table, seq_lens, **kw)
        assert torch.equal(exact, expected), case
        assert torch.equal(got, expected), case


def test_sketched_selection_with_non_finite_keys_and_queries():
    """Pages holding NaN or inf keys are scored exactly (their sketches have no finite bound), so
    the NaN / inf handling of the exact selection carries over; a query with NaN, inf or huge
    weights goes to the exact pass altogether."""
    batch = make_batch(lens=[2000, 1800, 1200], n_kv_heads=3, head_dim=64, page_size=16, seed=11)
    cache, table, seq_lens = batch.cache, batch.block_table, batch.seq_lens
    for i, (page, value) in enumerate([(5, float("nan")), (9, float("inf")), (20, -float("inf")), (31, 1e30)]):
        slot = int(table[i % 3, page]) * 16 + 3
        key = torch.randn(1, 3, 64)
        key[0, i % 3, 7] = value
        cache.write(0, torch.tensor([slot]), key, key)
    q = draw_queries(3, 9, 64, seed=4)
    q[1, 0, 0] = float("nan")
    q[2, 3, 1] = 1e25
    kw = dict(budget=96, sink_pages=1, local_pages=2)
    expected = reference_select(q, cache, 0, table, seq_lens, **kw)
    assert torch.equal(cpu.select_pages(q, cache, 0, table, seq_lens, **kw), expected)
    assert torch.isinf(_decode_rows(cache.ksketch[0, 0, int(table[0, 31])], 64)[3]).any()  # the 1e30 key's page


def test_sketches_by_default_only_for_float32_bounds():
    made = {(dtype, kv): PagedKVCache(num_layers=1, num_pages=4, page_size=16, n_kv_heads=1, head_dim=8, dtype=dtype,
                                      kv_cache_dtype=kv).ksketch is not None
            for dtype, kv in [(torch.float32, "auto"), (torch.bfloat16, "auto"), (torch.bfloat16, "fp8_e4m3"),
                              (torch.float16, "auto")]}
    assert made == {(torch.float32, "auto"): True, (torch.bfloat16, "auto"): False,
                    (torch.bfloat16, "fp8_e4m3"): True, (torch.float16, "auto"): False}
    assert PagedKVCache(num_layers=1, num_pages=4, page_size=16, n_kv_heads=1, head_dim=8, dtype=torch.float16,
                        page_sketches=True).ksketch is None  # (float16 bounds: the native indexer does not read them)


def test_the_indexer_reads_the_sketches():
    """Sketches claiming the wrong bounds (zero error) change the selection: the first pass is
    live, which is why every writer must keep them current (next test)."""
    batch = make_batch(lens=[2000, 2000], n_kv_heads=3, head_dim=64, page_size=16, seed=5)
    cache, table, seq_lens = batch.cache, batch.block_table, batch.seq_lens
    q = draw_queries(2, 9, 64, seed=5)
    kw = dict(budget=64, sink_pages=1, local_pages=2)
    good = cpu.select_pages(q, cache, 0, table, seq_lens, **kw)
    cb = 128
    prm = cache.ksketch[0, :, :, cb: cb + 32].contiguous().view(torch.float32)
    prm[..., 2] = 0.0
    prm[..., 5] = 0.0
    cache.ksketch[0, :, :, cb: cb + 32] = prm.view(torch.uint8)
    cache.ksketch[0, :, :, :128] = torch.randint(0, 256, cache.ksketch[0, :, :, :128].shape, dtype=torch.uint8)
    assert not torch.equal(cpu.select_pages(q, cache, 0, table, seq_lens, **kw), good)


@pytest.mark.parametrize("kv,dtype", [("auto", torch.float32), ("auto", torch.bfloat16), ("fp8_e4m3", torch.bfloat16)],
                         ids=["fp32", "bf16", "fp8"])
def test_every_writer_keeps_the_sketches_current(kv, dtype):
    """After PagedKVCache.write (one token, a few, a prefill), reset_pages and the native
    rope_write (the path decode_layer takes), the sketches equal a rebuild from the bounds."""
    H, Hkv, D, page_size = 9, 3, 64, 16
    cache = PagedKVCache(num_layers=2, num_pages=40, page_size=page_size, n_kv_heads=Hkv, head_dim=D, dtype=dtype,
                         kv_cache_dtype=kv, page_sketches=True)
    assert cache.ksketch is not None and torch.equal(cache.ksketch, _fresh(cache))
    if kv == "fp8_e4m3":
        for layer in range(2):
            cache.set_scales(layer, torch.full((Hkv,), 0.01), torch.full((Hkv,), 0.01))
    g = torch.Generator().manual_seed(2)
    kv_ = lambda n: (torch.randn(n, Hkv, D, generator=g).to(dtype), torch.randn(n, Hkv, D, generator=g).to(dtype))
    cache.write(0, torch.arange(300), *kv_(300))  # a prefill (bounds reduced per page first)
    cache.write(0, torch.tensor([301]), *kv_(1))  # a decode token
    cache.write(1, torch.tensor([5, 70, 71, 400]), *kv_(4))
    assert torch.equal(cache.ksketch, _fresh(cache))
    cache.reset_pages(torch.tensor([1, 4, 4]))
    assert torch.equal(cache.ksketch, _fresh(cache))
    for T, slots in [(1, [302]), (3, [480, 17, 481]), (40, list(range(500, 540)))]:  # rope_write: the native writer
        qkv = torch.randn(T, H + 2 * Hkv, D, generator=g).to(dtype)
        angles = torch.rand(T, D, generator=g)
        cpu.rope_write(qkv, H, angles.cos(), angles.sin(), torch.tensor(slots), cache, 1)
        assert torch.equal(cache.ksketch, _fresh(cache)), slots


@pytest.mark.parametrize("kv", ["auto", "fp8_e4m3"])
def test_decode_layer_selects_the_reference_pages_on_long_sequences(kv):
    """A whole native decode layer (rope_write keeps the sketches, the indexer reads them) on
    sequences long enough for the two-pass selection, bf16 (sketched on request) and fp8
    (float32 bounds: sketched by default) caches: the pages it selects are the torch
    reference's on the cache it leaves."""
    g = torch.Generator().manual_seed(8)
    H, Hkv, D, dim, hidden, page_size = 9, 3, 64, 96, 160, 16
    bf = lambda *shape, s=1.0: (torch.randn(*shape, generator=g) * s).to(torch.bfloat16)
    w = layer_weights(g, H=H, Hkv=Hkv, D=D, dim=dim, hidden=hidden, layer=0)
    lens = [1500, 1210]
    batch = make_batch(lens=[n - 1 for n in lens], n_kv_heads=Hkv, head_dim=D, page_size=page_size,
                       dtype=torch.bfloat16, seed=9, extra_pages=8, kv_cache_dtype=kv,
                       scales=0.05 if kv == "fp8_e4m3" else None, page_sketches=True if kv == "auto" else None)
    cache, table = batch.cache, batch.block_table
    assert cache.ksketch is not None
    for i, n in enumerate(lens):  # the page of this step's token (a fresh one when the last is full)
        if table[i, (n - 1) // page_size] < 0:
            table[i, (n - 1) // page_size] = int(table.max()) + 1
    seq_lens = torch.tensor(lens, dtype=torch.int32)
    slots = torch.tensor([int(table[i, (n - 1) // page_size]) * page_size + (n - 1) % page_size
                          for i, n in enumerate(lens)])
    x = bf(len(lens), dim)
    angles = torch.rand(len(lens), D, generator=g) * 6
    sparse = dict(budget=64, sink_pages=1, local_pages=1)
    layout = cpu.SparseDecodeLayout(cache, table, seq_lens, **sparse)
    scratch = cpu.decode_layer_scratch(len(lens), dim, H, Hkv, D, hidden)
    x_in = x.clone()
    cpu.decode_layer(x, w, angles.cos().to(torch.bfloat16), angles.sin().to(torch.bfloat16), slots, cache, layout,
                     scratch)
    assert torch.equal(cache.ksketch, _fresh(cache))
    # the layer's queries, recomputed: rms_norm, qkv, rope (rope_write into a copy of the cache)
    copy = PagedKVCache(num_layers=1, num_pages=cache.num_pages, page_size=page_size, n_kv_heads=Hkv, head_dim=D,
                        dtype=torch.bfloat16, page_sketches=False)
    qkv = cpu.linear(cpu.rms_norm(x_in, w.attention_norm, w.eps), w.wqkv).view(len(lens), H + 2 * Hkv, D)
    q = cpu.rope_write(qkv, H, angles.cos().to(torch.bfloat16), angles.sin().to(torch.bfloat16), slots, copy, 0)
    expected = reference_select(q, cache, 0, table, seq_lens, **sparse)
    assert torch.equal(layout.selected, expected)
