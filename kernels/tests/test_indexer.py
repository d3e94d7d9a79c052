"""Page indexer: the torch selection equals a literal brute-force Quest selection (ties to the
lower page), and the fused Triton kernel equals the torch selection exactly."""

import pytest
import torch

from kernels.indexer import reference as torch_indexer
from kernels.indexer.reference import num_selected_pages

from .helpers import draw_queries, make_batch, quest_selection_bruteforce

HEADS = {"mha": (4, 4), "gqa": (9, 3)}  # (query heads, KV heads); gqa = the SmolLM2 layout


def _expected(batch, q, *, budget, sink, local, layer=0):
    """Brute-force selection from the cache's bounds, as (N, Hkv, K) int32 padded with -1."""
    cache = batch.cache
    N, H, D = q.shape
    Hkv, S = cache.n_kv_heads, cache.page_size
    G = H // Hkv
    P = batch.block_table.shape[1]
    K = num_selected_pages(budget, S, P)
    out = torch.full((N, Hkv, K), -1, dtype=torch.int32)
    for n in range(N):
        n_pages = -(-int(batch.seq_lens[n]) // S)
        pages = batch.block_table[n, :n_pages].long().cpu()
        for h in range(Hkv):
            chosen = quest_selection_bruteforce(
                q[n, h * G:(h + 1) * G].double().cpu(), cache.kmin[layer, pages, h].cpu(),
                cache.kmax[layer, pages, h].cpu(), n_pages, k_total=K, sink=sink, local=local,
            )
            out[n, h, : len(chosen)] = torch.tensor(chosen, dtype=torch.int32)
    return out


CASES = [
    # (lens, page_size, budget, sink, local, head_dim)
    pytest.param([1], 16, 64, 1, 2, 64, id="len1-page16"),
    pytest.param([63], 16, 32, 0, 1, 64, id="len63-page16-nosink"),
    pytest.param([97, 1], 16, 48, 1, 2, 40, id="len97+1-page16-d40"),
    pytest.param([1025], 16, 128, 1, 2, 64, id="len1025-page16"),
    pytest.param([1025, 63], 64, 256, 1, 1, 64, id="len1025+63-page64"),
    pytest.param([97], 64, 4096, 1, 2, 64, id="len97-page64-budget-covers-all"),
]


# (kv_cache_dtype, compute dtype): a bf16 cache keeps bf16 bounds (kernels/kv_cache.py).
CACHES = [pytest.param("auto", torch.float32, id="kv_auto"), pytest.param("auto", torch.bfloat16, id="kv_bf16"),
          pytest.param("fp8_e4m3", torch.float32, id="kv_fp8")]


@pytest.mark.parametrize("scorer", ["torch", "native", "native-fused"])
@pytest.mark.parametrize("kv_cache_dtype,dtype", CACHES)
@pytest.mark.parametrize("heads", list(HEADS), ids=str)
@pytest.mark.parametrize("lens,page_size,budget,sink,local,head_dim", CASES)
def test_torch_selection_equals_bruteforce(lens, page_size, budget, sink, local, head_dim, heads, kv_cache_dtype,
                                           dtype, scorer, request):
    """`native`: the page scores and the top-k by kernels.cpu; `native-fused`: both in one call
    (kernels.cpu.select_pages), as the selector runs indexer=torch on the CPU."""
    from kernels import cpu

    if scorer != "torch":
        request.getfixturevalue("native_kernels")
    H, Hkv = HEADS[heads]
    # Discrete data: exact score sums, so many pages tie and the tie rule is exercised. A
    # power-of-two fp8 scale keeps the quarter-steps exactly representable.
    batch = make_batch(lens=lens, n_kv_heads=Hkv, head_dim=head_dim, page_size=page_size, dtype=dtype,
                       kv_cache_dtype=kv_cache_dtype, seed=len(lens) + head_dim, discrete=True,
                       scales=2.0**-5 if kv_cache_dtype == "fp8_e4m3" else None)
    q = draw_queries(len(lens), H, head_dim, seed=7, discrete=True).to(dtype)
    kw = {"scorer": cpu.page_scores, "chooser": cpu.select_from_scores} if scorer == "native" else {}
    select = cpu.select_pages if scorer == "native-fused" else torch_indexer.select_pages
    got = select(q, batch.cache, 0, batch.block_table, batch.seq_lens, budget=budget, sink_pages=sink,
                 local_pages=local, **kw)
    expected = _expected(batch, q, budget=budget, sink=sink, local=local)
    assert got.shape == expected.shape and got.dtype == torch.int32
    assert torch.equal(got, expected)


def test_ties_go_to_the_lower_page():
    # All middle pages identical: the selection must be the lowest-indexed ones.
    batch = make_batch(lens=[16 * 10], n_kv_heads=1, head_dim=16, page_size=16, seed=0)
    cache = batch.cache
    pages = batch.block_table[0, :10].long()
    cache.kmin[0, pages] = -1.0
    cache.kmax[0, pages] = 1.0
    q = torch.ones(1, 1, 16)
    got = torch_indexer.select_pages(q, cache, 0, batch.block_table, batch.seq_lens,
                                     budget=5 * 16, sink_pages=1, local_pages=1)
    assert got.tolist() == [[[0, 1, 2, 3, 9]]]


def test_gqa_heads_sum_their_bounds_not_their_queries():
    # Two query heads with opposite queries: summing q first would give 0 for every page; the
    # summed bounds still rank page 2 (widest range) first.
    batch = make_batch(lens=[16 * 6], n_kv_heads=1, head_dim=4, page_size=16, seed=0)
    cache = batch.cache
    pages = batch.block_table[0, :6].long()
    cache.kmin[0, pages] = 0.0
    cache.kmax[0, pages] = 0.0
    cache.kmin[0, pages[2]] = -3.0
    cache.kmax[0, pages[2]] = 3.0
    q = torch.stack([torch.ones(4), -torch.ones(4)]).view(1, 2, 4)
    got = torch_indexer.select_pages(q, cache, 0, batch.block_table, batch.seq_lens,
                                     budget=3 * 16, sink_pages=1, local_pages=1)
    assert got.tolist() == [[[0, 2, 5]]]


@pytest.mark.parametrize("kv_cache_dtype,dtype", CACHES)
@pytest.mark.parametrize("heads", list(HEADS), ids=str)
@pytest.mark.parametrize("lens,page_size,budget,sink,local,head_dim", [
    pytest.param([1, 63], 16, 32, 1, 1, 64, id="len1+63-page16"),
    pytest.param([97], 16, 48, 0, 2, 40, id="len97-page16-d40"),
    pytest.param([1025], 16, 256, 1, 2, 64, id="len1025-page16"),
    pytest.param([1025, 97], 64, 256, 1, 1, 64, id="len1025+97-page64"),
])
def test_triton_selection_equals_torch(lens, page_size, budget, sink, local, head_dim, heads, kv_cache_dtype, dtype,
                                      device):
    from kernels.indexer import triton as triton_indexer

    H, Hkv = HEADS[heads]
    batch = make_batch(lens=lens, n_kv_heads=Hkv, head_dim=head_dim, page_size=page_size, device=device, dtype=dtype,
                       kv_cache_dtype=kv_cache_dtype, seed=11, discrete=True,
                       scales=2.0**-5 if kv_cache_dtype == "fp8_e4m3" else None)
    q = draw_queries(len(lens), H, head_dim, seed=5, discrete=True, device=device).to(dtype)
    args = (q, batch.cache, 0, batch.block_table, batch.seq_lens)
    kw = dict(budget=budget, sink_pages=sink, local_pages=local)
    expected = torch_indexer.select_pages(*args, **kw)
    got = triton_indexer.select_pages(*args, **kw)
    assert torch.equal(got.cpu(), expected.cpu())


def test_triton_selection_on_continuous_data_matches_torch(device):
    from kernels.indexer import triton as triton_indexer

    batch = make_batch(lens=[700, 300, 5], n_kv_heads=3, head_dim=64, page_size=16, seed=21, device=device)
    q = draw_queries(3, 9, 64, seed=21, device=device)
    kw = dict(budget=128, sink_pages=1, local_pages=2)
    args = (q, batch.cache, 0, batch.block_table, batch.seq_lens)
    assert torch.equal(triton_indexer.select_pages(*args, **kw).cpu(), torch_indexer.select_pages(*args, **kw).cpu())


def test_selection_shape_is_static():
    batch = make_batch(lens=[5, 200], n_kv_heads=3, head_dim=64, page_size=16, seed=0)
    q = draw_queries(2, 9, 64, seed=0)
    kw = dict(budget=64, sink_pages=1, local_pages=2)
    a = torch_indexer.select_pages(q, batch.cache, 0, batch.block_table, batch.seq_lens, **kw)
    b = torch_indexer.select_pages(q, batch.cache, 0, batch.block_table, torch.tensor([1, 1]), **kw)
    assert a.shape == b.shape == (2, 3, 4)
    assert a[0, 0].tolist() == [0, -1, -1, -1]  # 1 page of data: the rest is padding
