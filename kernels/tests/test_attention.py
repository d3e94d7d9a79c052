"""Attention: dense prefill/decode against a float64 reference (tolerance rule), sparse with a
budget covering the context equals dense, sparse over the selected pages equals attention
restricted to those tokens, Triton equals the torch reference, fp8 equals attention on the
dequantized cache, and teacher forcing equals token-by-token decoding."""

import pytest
import torch

from kernels.attention import reference as torch_sparse
from kernels.attention.dense import dense_decode, dense_prefill
from kernels.indexer import reference as torch_indexer
from kernels.kv_cache import PagedKVCache
from kernels.selector import select_attention
from kernels.settings import KernelSettings

from .helpers import draw_queries, make_batch, naive_attention, read_sequence, tolerance_check

HEADS = {"mha": (4, 4), "gqa": (9, 3)}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def _references(batch, q, *, visible=None):
    """Per query: float64 result and the same-precision (q.dtype) result on the dequantized
    cache. visible: optional per-query (Hkv, T) masks."""
    exact, same = [], []
    for i in range(q.shape[0]):
        k, v = read_sequence(batch, i)
        mask = None if visible is None else visible[i]
        exact.append(naive_attention(q[i].double().cpu(), k, v, visible=mask))
        same.append(naive_attention(q[i].cpu(), k, v, visible=mask, dtype=q.dtype if q.dtype != torch.float32 else torch.float32))
    return torch.stack(exact), torch.stack(same)


# ---------------------------------------------------------------------------- dense
@pytest.mark.parametrize("kv_cache_dtype", ["auto", "fp8_e4m3"], ids=["kv_auto", "kv_fp8"])
@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
@pytest.mark.parametrize("heads", list(HEADS), ids=str)
@pytest.mark.parametrize("page_size", [16, 64], ids=lambda s: f"page{s}")
@pytest.mark.parametrize("lens,head_dim", [
    pytest.param([1], 64, id="b1-len1"),
    pytest.param([63, 97], 63, id="b2-len63+97-d63"),
    pytest.param([1025, 1, 97], 64, id="b3-len1025+1+97"),
])
def test_dense_decode_matches_reference(lens, head_dim, page_size, heads, dtype, kv_cache_dtype):
    H, Hkv = HEADS[heads]
    dt = DTYPES[dtype]
    batch = make_batch(lens=lens, n_kv_heads=Hkv, head_dim=head_dim, page_size=page_size, dtype=dt,
                       kv_cache_dtype=kv_cache_dtype, seed=len(lens))
    q = draw_queries(len(lens), H, head_dim, seed=3).to(dt)
    out = dense_decode(q, batch.cache, 0, batch.block_table, batch.seq_lens)
    assert out.shape == q.shape and out.dtype == dt
    exact, same = _references(batch, q)
    tolerance_check(out, exact, same)


@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
@pytest.mark.parametrize("heads", list(HEADS), ids=str)
@pytest.mark.parametrize("lens,head_dim", [
    pytest.param([1], 64, id="b1-len1"), pytest.param([63], 40, id="b1-len63-d40"),
    pytest.param([97, 1, 63], 64, id="b3-len97+1+63"),
    pytest.param([600], 64, id="b1-len600-three-blocks"),
])
def test_dense_prefill_is_causal_per_sequence(lens, head_dim, heads, dtype):
    H, Hkv = HEADS[heads]
    dt = DTYPES[dtype]
    g = torch.Generator().manual_seed(sum(lens))
    T = sum(lens)
    q, k, v = (torch.randn(T, h, head_dim, generator=g) for h in (H, Hkv, Hkv))
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32)
    out = dense_prefill(q.to(dt), k.to(dt), v.to(dt), cu)
    exact, same = torch.empty(T, H, head_dim, dtype=torch.float64), torch.empty(T, H, head_dim)
    for s, e in zip(cu[:-1].tolist(), cu[1:].tolist()):
        for t in range(s, e):
            kk, vv = k[s:t + 1].to(dt), v[s:t + 1].to(dt)
            exact[t] = naive_attention(q[t].to(dt).double(), kk.double(), vv.double())
            same[t] = naive_attention(q[t].to(dt), kk, vv, dtype=dt if dt != torch.float32 else torch.float32).float()
    tolerance_check(out, exact, same)


def test_dense_prefill_blocks_shrink_for_long_prompts(monkeypatch):
    """On the CPU a long prompt is attended in blocks of fewer query rows (scores kept under
    _MAX_SCORE_ELEMENTS); the result is the same attention."""
    from kernels.attention import dense

    g = torch.Generator().manual_seed(8)
    L, H, Hkv, D = 300, 9, 3, 64
    q, k, v = (torch.randn(L, h, D, generator=g) for h in (H, Hkv, Hkv))
    cu = torch.tensor([0, L], dtype=torch.int32)
    full = dense_prefill(q, k, v, cu)
    monkeypatch.setattr(dense, "_MAX_SCORE_ELEMENTS", H * L * 40)  # 40 rows per block
    small = dense_prefill(q, k, v, cu)
    torch.testing.assert_close(small, full, rtol=1e-5, atol=1e-6)
    exact = naive_attention(q[L - 1].double(), k.double(), v.double())
    torch.testing.assert_close(small[L - 1].double(), exact, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_dense_prefill_native_and_torch_gemms_agree(dtype, monkeypatch, native_kernels):
    """The CPU prefill's GEMMs in kernels.cpu against the same blocks in torch (the path taken
    without the native kernels), both against float64."""
    from kernels.attention import dense

    g = torch.Generator().manual_seed(9)
    L, H, Hkv, D = 300, 9, 3, 64
    q, k, v = ((torch.randn(L, h, D, generator=g)).to(dtype) for h in (H, Hkv, Hkv))
    cu = torch.tensor([0, L], dtype=torch.int32)
    native = dense_prefill(q, k, v, cu)
    monkeypatch.setattr(dense.kernels_cpu, "available", lambda: False)
    torch_path = dense_prefill(q, k, v, cu)
    exact = torch.stack([naive_attention(q[t].double(), k[: t + 1].double(), v[: t + 1].double()) for t in range(L)])
    for out in (native, torch_path):
        assert out.dtype == dtype
    tol = 2e-6 if dtype == torch.float32 else 0.0
    err_native, err_torch = ((o.double() - exact).abs().max() for o in (native, torch_path))
    assert err_native <= max(2 * err_torch, tol) + 1e-6


def test_dense_decode_groups_queries_sharing_a_table():
    batch = make_batch(lens=[97, 63], n_kv_heads=3, head_dim=64, page_size=16, seed=5)
    rows = torch.tensor([0, 0, 1, 0, 1])
    q = draw_queries(5, 9, 64, seed=5)
    table, lens = batch.block_table[rows], torch.tensor([90, 97, 63, 1, 20], dtype=torch.int32)
    together = dense_decode(q, batch.cache, 0, table, lens)
    one_by_one = torch.cat([dense_decode(q[i:i + 1], batch.cache, 0, table[i:i + 1], lens[i:i + 1]) for i in range(5)])
    torch.testing.assert_close(together, one_by_one, rtol=1e-6, atol=1e-6)



@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_dense_decode_in_slices_is_bit_identical(dtype, monkeypatch):
    """A large decode batch is gathered and attended in slices of sequences (cache-sized): the
    output must be bit-identical to one slice, and each query's to decoding it alone."""
    from kernels.attention import dense

    lens = [300, 1, 97, 513, 256, 40, 257]
    batch = make_batch(lens=lens, n_kv_heads=3, head_dim=64, page_size=16, dtype=dtype, seed=11)
    q = draw_queries(len(lens), 9, 64, seed=11).to(dtype)
    whole = dense_decode(q, batch.cache, 0, batch.block_table, batch.seq_lens)
    for slice_bytes in (1, 3 * 2 * 768 * 3 * 64 * q.element_size()):   # slices of 1, then of 3
        monkeypatch.setattr(dense, "_SLICE_BYTES", slice_bytes)
        sliced = dense_decode(q, batch.cache, 0, batch.block_table, batch.seq_lens)
        assert torch.equal(sliced, whole)
    for i in range(len(lens)):
        alone = dense_decode(q[i:i + 1], batch.cache, 0, batch.block_table[i:i + 1], batch.seq_lens[i:i + 1])
        assert torch.equal(alone, whole[i:i + 1])

# ---------------------------------------------------------------------------- sparse (torch)
@pytest.mark.parametrize("kv_cache_dtype", ["auto", "fp8_e4m3"], ids=["kv_auto", "kv_fp8"])
@pytest.mark.parametrize("heads", list(HEADS), ids=str)
@pytest.mark.parametrize("page_size", [16, 64], ids=lambda s: f"page{s}")
@pytest.mark.parametrize("lens,head_dim", [
    pytest.param([1], 64, id="b1-len1"),
    pytest.param([63, 97], 63, id="b2-len63+97-d63"),
    pytest.param([1025, 1, 97], 64, id="b3-len1025+1+97"),
])
def test_sparse_with_budget_covering_context_equals_dense(lens, head_dim, page_size, heads, kv_cache_dtype):
    H, Hkv = HEADS[heads]
    batch = make_batch(lens=lens, n_kv_heads=Hkv, head_dim=head_dim, page_size=page_size,
                       kv_cache_dtype=kv_cache_dtype, seed=9)
    q = draw_queries(len(lens), H, head_dim, seed=9)
    args = (q, batch.cache, 0, batch.block_table, batch.seq_lens)
    dense = select_attention(KernelSettings(kv_cache_dtype=kv_cache_dtype)).decode(*args)
    sparse = select_attention(KernelSettings(attention="sparse", sparse_budget=max(lens) + 3 * page_size,
                                             page_size=page_size, kv_cache_dtype=kv_cache_dtype)).decode(*args)
    torch.testing.assert_close(sparse, dense, rtol=1e-5, atol=1e-6)


def _selected_token_masks(batch, selected):
    """(N, Hkv, T_n) visibility masks of the tokens on the selected pages."""
    S = batch.cache.page_size
    masks = []
    for n in range(selected.shape[0]):
        T = int(batch.seq_lens[n])
        page_of = torch.arange(T) // S
        masks.append(torch.stack([torch.isin(page_of, sel[sel >= 0].long()) for sel in selected[n].cpu()]))
    return masks


@pytest.mark.parametrize("kv_cache_dtype", ["auto", "fp8_e4m3"], ids=["kv_auto", "kv_fp8"])
@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
@pytest.mark.parametrize("heads", list(HEADS), ids=str)
@pytest.mark.parametrize("lens,page_size,budget", [
    pytest.param([97, 63], 16, 48, id="b2-len97+63-page16-budget48"),
    pytest.param([1025, 1], 16, 128, id="b2-len1025+1-page16-budget128"),
    pytest.param([1025], 64, 256, id="b1-len1025-page64-budget256"),
])
def test_sparse_decode_attends_to_selected_tokens_only(lens, page_size, budget, heads, dtype, kv_cache_dtype):
    H, Hkv = HEADS[heads]
    dt = DTYPES[dtype]
    batch = make_batch(lens=lens, n_kv_heads=Hkv, head_dim=64, page_size=page_size, dtype=dt,
                       kv_cache_dtype=kv_cache_dtype, seed=13)
    q = draw_queries(len(lens), H, 64, seed=13).to(dt)
    args = (q, batch.cache, 0, batch.block_table, batch.seq_lens)
    selected = torch_indexer.select_pages(*args, budget=budget, sink_pages=1, local_pages=1)
    out = torch_sparse.sparse_decode(*args, selected)
    exact, same = _references(batch, q, visible=_selected_token_masks(batch, selected))
    tolerance_check(out, exact, same)
    dense = dense_decode(*args)
    if max(lens) > budget:  # the selection really dropped tokens
        assert (out.float() - dense.float()).abs().max() > 1e-3


# ---------------------------------------------------------------------------- sparse (triton)
@pytest.mark.parametrize("kv_cache_dtype", ["auto", "fp8_e4m3"], ids=["kv_auto", "kv_fp8"])
@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
@pytest.mark.parametrize("heads", list(HEADS), ids=str)
@pytest.mark.parametrize("lens,page_size,budget,head_dim", [
    pytest.param([1, 63], 16, 48, 64, id="b2-len1+63-page16"),
    pytest.param([97], 16, 64, 40, id="b1-len97-page16-d40"),
    pytest.param([1025], 64, 256, 64, id="b1-len1025-page64"),
])
def test_triton_sparse_decode_matches_torch_reference(lens, page_size, budget, head_dim, heads, dtype, kv_cache_dtype, device):
    from kernels.attention import triton as triton_sparse

    H, Hkv = HEADS[heads]
    dt = DTYPES[dtype]
    batch = make_batch(lens=lens, n_kv_heads=Hkv, head_dim=head_dim, page_size=page_size, dtype=dt,
                       kv_cache_dtype=kv_cache_dtype, seed=17, device=device)
    q = draw_queries(len(lens), H, head_dim, seed=17, device=device).to(dt)
    args = (q, batch.cache, 0, batch.block_table, batch.seq_lens)
    selected = torch_indexer.select_pages(*args, budget=budget, sink_pages=1, local_pages=2)
    out = triton_sparse.sparse_decode(*args, selected)
    assert out.shape == q.shape and out.dtype == dt
    exact, same = _references(batch, q.cpu(), visible=_selected_token_masks(batch, selected))
    tolerance_check(out, exact, same)


@pytest.mark.parametrize("page_size", [8, 16, 64], ids=lambda s: f"page{s}")
def test_triton_sparse_with_budget_covering_context_equals_dense(page_size, device):
    batch = make_batch(lens=[97, 1, 63], n_kv_heads=3, head_dim=64, page_size=page_size, seed=19, device=device)
    q = draw_queries(3, 9, 64, seed=19, device=device)
    args = (q, batch.cache, 0, batch.block_table, batch.seq_lens)
    dense = select_attention(KernelSettings(), device).decode(*args)
    sparse = select_attention(KernelSettings(attention="sparse", decode_kernel="triton", indexer="triton",
                                             page_size=page_size, sparse_budget=4 * 64), device).decode(*args)
    torch.testing.assert_close(sparse, dense, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- fp8 vs dequantized
@pytest.mark.parametrize("attention,decode_kernel", [
    ("dense", "torch"), ("sparse", "torch"), ("sparse", "triton"),
], ids=["dense", "sparse-torch", "sparse-triton"])
def test_fp8_cache_equals_attention_on_the_dequantized_cache(attention, decode_kernel, device):
    fp8 = make_batch(lens=[300, 97], n_kv_heads=3, head_dim=64, page_size=16, kv_cache_dtype="fp8_e4m3",
                     seed=23, device=device)
    # The same pages, dequantized into an fp32 cache (bounds recomputed from the dequantized keys).
    deq = PagedKVCache(num_layers=1, num_pages=fp8.cache.num_pages, page_size=16, n_kv_heads=3, head_dim=64,
                       dtype=torch.float32, device=device)
    k, v = fp8.cache.dequantized(0)
    all_pages = torch.arange(fp8.cache.num_pages, device=device)
    deq.reset_pages(all_pages)
    for i in range(2):
        n = int(fp8.seq_lens[i])
        pages = fp8.block_table[i, : -(-n // 16)].long()
        slots = (pages[:, None] * 16 + torch.arange(16, device=device)).reshape(-1)[:n]
        deq.write(0, slots, k.reshape(-1, 3, 64)[slots], v.reshape(-1, 3, 64)[slots])
    torch.testing.assert_close(deq.kbounds[0][:, pages], fp8.cache.kbounds[0][:, pages], rtol=0, atol=0)
    settings = KernelSettings(attention=attention, decode_kernel=decode_kernel, indexer="torch", sparse_budget=128)
    q = draw_queries(2, 9, 64, seed=23, device=device)
    backend = select_attention(settings, device)
    out_fp8 = backend.decode(q, fp8.cache, 0, fp8.block_table, fp8.seq_lens)
    out_deq = backend.decode(q, deq, 0, fp8.block_table, fp8.seq_lens)
    torch.testing.assert_close(out_fp8, out_deq, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- teacher forcing
@pytest.mark.parametrize("kernel", [
    pytest.param(dict(attention="dense"), id="dense"),
    pytest.param(dict(attention="sparse", sparse_budget=64), id="sparse-torch"),
    pytest.param(dict(attention="sparse", sparse_budget=64, indexer="triton", decode_kernel="triton"), id="sparse-triton"),
])
def test_teacher_forcing_in_one_call_equals_token_by_token(kernel, device):
    settings = KernelSettings(**kernel)
    backend = select_attention(settings, device)
    prompt, cont = 150, 12
    g = torch.Generator().manual_seed(29)
    T = prompt + cont
    k, v = torch.randn(T, 3, 64, generator=g), torch.randn(T, 3, 64, generator=g)
    q = torch.randn(cont, 9, 64, generator=g)
    pages = torch.randperm(20, generator=g)[: -(-T // 16)]
    table = pages.to(torch.int32)[None]
    slots = (pages[:, None] * 16 + torch.arange(16)).reshape(-1)[:T]

    def fresh():
        c = PagedKVCache(num_layers=1, num_pages=20, page_size=16, n_kv_heads=3, head_dim=64, dtype=torch.float32, device=device)
        c.reset_pages(pages)
        c.write(0, slots[:prompt], k[:prompt], v[:prompt])
        return c

    stepwise = fresh()
    outs = []
    for i in range(cont):
        stepwise.write(0, slots[prompt + i: prompt + i + 1], k[prompt + i: prompt + i + 1], v[prompt + i: prompt + i + 1])
        outs.append(backend.decode(q[i:i + 1].to(device), stepwise, 0, table.to(device),
                                   torch.tensor([prompt + i + 1], dtype=torch.int32, device=device)))
    forced = fresh()
    forced.write(0, slots[prompt:], k[prompt:], v[prompt:])
    lens = torch.arange(prompt + 1, T + 1, dtype=torch.int32, device=device)
    together = backend.decode(q.to(device), forced, 0, table.expand(cont, -1).to(device), lens)
    torch.testing.assert_close(together, torch.cat(outs), rtol=1e-5, atol=1e-6)
