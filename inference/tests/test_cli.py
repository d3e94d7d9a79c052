"""`python -m inference generate`, run as a user would run it from a shell."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def generate(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "inference", "generate", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_generate_json_samples_with_seed_plus_index():
    result = generate("--prompt", "What is the capital of France?", "--n", "2", "--temperature", "0",
                      "--seed", "7", "--max-tokens", "8", "--dtype", "fp32", "--threads", "1", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["model"].startswith("SmolLM2-135M-Instruct")
    assert out["kernel"]["attention"] == "dense" and out["prompt_tokens"] > 10
    assert [s["seed"] for s in out["samples"]] == [7, 8]
    for sample in out["samples"]:
        assert "Paris" in sample["text"]
        assert 1 <= sample["completion_tokens"] <= 8 and sample["finish_reason"] in ("stop", "length")


@pytest.mark.parametrize("kernel, expected", [
    ('{"page_size": 3}', "kernel.page_size"),
    ('{"attention": "dense"', "not JSON"),
    ('{"bogus": 1}', "kernel.bogus"),
], ids=["invalid-value", "not-json", "unknown-key"])
def test_generate_rejects_bad_kernel_settings_before_loading(kernel, expected):
    result = generate("--prompt", "hi", "--kernel", kernel, timeout=60)
    assert result.returncode == 2
    assert expected in result.stderr and "--kernel" in result.stderr
    assert result.stdout == ""
