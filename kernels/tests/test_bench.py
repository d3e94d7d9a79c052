"""`python -m kernels.bench` runs end to end and prints the documented JSON shape."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernels import cpu

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # (the benchmark as a subprocess)


def test_bench_prints_the_documented_json():
    result = subprocess.run(
        [sys.executable, "-m", "kernels.bench", "--contexts", "256,1024", "--budget", "128", "--batch", "2",
         "--repeats", "2", "--warmup", "1", "--threads", "1", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads(result.stdout)["results"]
    assert [r["context"] for r in rows] == [256, 1024]
    for row in rows:
        assert row["batch"] == 2
        for key in ("dense_ms", "sparse_ms", "indexer_ms", "ratio_dense_over_sparse"):
            assert row[key] > 0, key
        assert abs(row["ratio_dense_over_sparse"] - row["dense_ms"] / row["sparse_ms"]) < 1e-9
        if cpu.available():  # a sketched cache: the exact indexer is timed beside it
            assert row["indexer_exact_ms"] > 0


def test_bench_rejects_bad_arguments_clearly():
    result = subprocess.run([sys.executable, "-m", "kernels.bench", "--contexts", "abc"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr[-1500:]
