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
