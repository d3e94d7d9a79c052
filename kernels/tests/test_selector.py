"""select_attention: every setting is selectable, impossible ones fail with the remedy, the
choice is logged, and Triton is imported only when asked for."""

import logging
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernels.selector import DenseAttention, KernelUnavailableError, SparseAttention, select_attention
from kernels.settings import PROFILES, KernelSettings, KernelSettingsError


@pytest.mark.parametrize("profile", list(PROFILES))
def test_every_profile_is_selectable_and_runs(profile, device):
    from .helpers import draw_queries, make_batch

    settings = PROFILES[profile]
    backend = select_attention(settings, device)
    assert isinstance(backend, SparseAttention if settings.attention == "sparse" else DenseAttention)
    batch = make_batch(lens=[40], n_kv_heads=3, head_dim=64, page_size=settings.page_size,
                       kv_cache_dtype=settings.kv_cache_dtype, seed=0, device=device)
    out = backend.decode(draw_queries(1, 9, 64, seed=0, device=device), batch.cache, 0, batch.block_table, batch.seq_lens)
    assert out.shape == (1, 9, 64) and torch.isfinite(out).all()


def test_accepts_a_dict_and_validates_it():
    assert isinstance(select_attention({"attention": "sparse", "sparse_budget": 256}), SparseAttention)
    with pytest.raises(KernelSettingsError) as err:
        select_attention({"attention": "fancy"})
    assert "kernel.attention" in err.value.errors


@pytest.mark.parametrize("field", ["indexer", "decode_kernel"])
def test_triton_on_cpu_without_interpreter_names_both_remedies(field, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    settings = KernelSettings(attention="sparse", **{field: "triton"})
    with pytest.raises(KernelUnavailableError) as err:
        select_attention(settings, "cpu")
    message = str(err.value)
    assert "CUDA" in message and "TRITON_INTERPRET=1" in message and f"{field}='torch'" in message


def test_dense_ignores_triton_fields_even_without_a_gpu(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    backend = select_attention(KernelSettings(decode_kernel="triton", indexer="triton"), "cpu")
    assert isinstance(backend, DenseAttention)


def test_logs_the_chosen_backend(caplog):
    settings = KernelSettings(attention="sparse", sparse_budget=320)  # unused elsewhere: not cached yet
    with caplog.at_level(logging.INFO, logger="kernels.selector"):
        select_attention(settings, "cpu")
    assert any("SparseAttention(budget=320" in r.getMessage() for r in caplog.records)


def test_triton_is_imported_lazily():
    code = (
        "import sys, torch\n"
        "from kernels.selector import select_attention\n"
        "from kernels.settings import KernelSettings\n"
        "select_attention(KernelSettings(attention='sparse'), 'cpu')\n"
        "print('triton' in sys.modules)\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_rows_sharing_a_prompts_pages_still_run_the_native_decode_step():
    """Samples of one prompt share its full pages and write their own last page: an ordinary
    decode step (native where available), each row as it would be alone. Rows whose tokens land
    on one page (teacher forcing) take the per-op path."""
    from kernels import cpu as kernels_cpu
    from kernels.kv_cache import PagedKVCache
    from kernels.selector import _rows_own_pages

    shared = torch.tensor([[3, 7, 1], [3, 7, 4]], dtype=torch.int32)  # pages 3, 7 shared, last pages 1 and 4
    assert _rows_own_pages(shared, torch.tensor([40, 40]), 16)
    assert not _rows_own_pages(torch.tensor([[3, 7, 1], [3, 7, 1]], dtype=torch.int32), torch.tensor([39, 40]), 16)
    # One sequence's row for two queries (teacher forcing), even when they write two pages:
    assert not _rows_own_pages(torch.tensor([[3, 7, 1], [3, 7, 1]], dtype=torch.int32), torch.tensor([30, 40]), 16)
    cache = PagedKVCache(num_layers=1, num_pages=8, page_size=16, n_kv_heads=3, head_dim=64, dtype=torch.float32)
    g = torch.Generator().manual_seed(3)
    for page in (3, 7, 1, 4):
        k = torch.randn(16, 3, 64, generator=g)
        cache.write(0, torch.arange(page * 16, page * 16 + 16), k, k + 1)
    q = torch.randn(2, 9, 64, generator=g)
    dense = select_attention(KernelSettings(), "cpu")
    seq_lens = torch.tensor([40, 37], dtype=torch.int32)
    if kernels_cpu.available():
        assert isinstance(dense.plan_decode(cache, shared, seq_lens), kernels_cpu.DecodeLayout)
    from kernels.attention.dense import plan_decode

    assert plan_decode(cache, shared, seq_lens).order is None  # the torch path: one query per group, no sort
    both = dense.decode(q, cache, 0, shared, seq_lens)
    for i in range(2):
        alone = dense.decode(q[i:i + 1], cache, 0, shared[i:i + 1], seq_lens[i:i + 1])
        assert torch.equal(both[i], alone[0])
