"""The command-line entry points of this half: dispatcher, bench, demo data."""

from __future__ import annotations

import random

import pytest

from inference import __main__ as cli
from inference import bench, demo_data
from inference.engine import SamplingParams
from kernels.settings import KernelSettings


def test_dispatcher_usage_and_unknown_command(capsys):
    assert cli.main([]) == 2
    assert "make-demo-data" in capsys.readouterr().out
    assert cli.main(["frobnicate"]) == 2
    assert "unknown command" in capsys.readouterr().err
    assert set(cli.COMMANDS) == {"serve", "generate", "bench", "make-demo-data"}


def test_bench_reports_the_documented_json_shape(engine):
    args = bench.parse_args(["--batch", "1,2", "--prompt-tokens", "12", "--new-tokens", "3", "--json"])
    report = bench.run(args, engine=engine)
    rows = report["results"]
    assert [r["batch"] for r in rows] == [1, 2]
    for r in rows:
        assert r["decode_tokens_per_s"] > 0 and r["prefill_tokens_per_s"] > 0 and r["peak_rss_mb"] > 0
    # the batch-1 peer measured in the same run: streaming the weights once
    assert report["weights_mb"] > 100 and report["bandwidth_limit_batch1_tokens_per_s"] > 0
    assert 0 < rows[0]["fraction_of_bandwidth_limit"] and "fraction_of_bandwidth_limit" not in rows[1]
    table = bench.format_table(report)
    assert "decode tok/s" in table and "ratio" not in table and "batch-1 decode bound" in table


def test_bench_same_prompt_times_shared_against_separate_prefill(engine):
    """--same-prompt: the samples of one conversation, with the engine's shared prefill and
    without it, in one run; the shared run really prefilled the prompt once."""
    args = bench.parse_args(["--batch", "3", "--prompt-tokens", "40", "--new-tokens", "3", "--same-prompt", "--json"])
    report = bench.run(args, engine=engine)
    (row,) = report["results"]
    assert report["same_prompt"] and row["batch"] == 3
    for key in ("prefill_tokens_per_s", "separate_prefill_tokens_per_s", "decode_tokens_per_s",
                "separate_decode_tokens_per_s", "prefill_speedup_from_sharing", "total_speedup_from_sharing"):
        assert row[key] > 0, key
    assert "prefill speedup" in bench.format_table(report) and "shared prefill vs separate" in bench.format_table(report)
    shared = engine.fork(share_prefill=True)
    bench.bench_engine(shared, bench.make_prompts(engine.tokenizer, 1, 40) * 3, 3, KernelSettings())
    assert shared.prefill_tokens == 40 and shared.shared_prefill_tokens == 80
    separate = engine.fork(share_prefill=False)
    bench.bench_engine(separate, bench.make_prompts(engine.tokenizer, 1, 40) * 3, 3, KernelSettings())
    assert separate.prefill_tokens == 120 and separate.shared_prefill_tokens == 0


def test_bench_rejects_bad_arguments():
    with pytest.raises(SystemExit):
        bench.parse_args(["--batch", "1,x"])
    with pytest.raises(SystemExit):
        bench.parse_args(["--new-tokens", "1"])
    with pytest.raises(SystemExit):
        bench.parse_args(["--same-prompt", "--compare", "transformers"])


def test_bench_prompts_have_exact_lengths(engine):
    prompts = bench.make_prompts(engine.tokenizer, 3, 100)
    assert [len(p) for p in prompts] == [100] * 3 and len({tuple(p) for p in prompts}) == 3


def test_demo_plan_covers_the_required_kinds(engine):
    plan = demo_data.build_plan(random.Random(1))
    assert 30 <= len(plan) <= 60
    temps = [p["sampling"]["temperature"] for p in plan]
    assert temps.count(0.6) > temps.count(0.0) >= 5
    lengths = [len(engine.apply_chat_template(p["messages"])) for p in plan]
    assert sum(n > 2000 for n in lengths) >= 3 and max(lengths) < engine.config.max_seq_len - 800
    assert any("HTML" in p["messages"][-1]["content"] for p in plan)
    for p in plan:
        SamplingParams(**p["sampling"])  # valid sampling
        KernelSettings.from_dict(demo_data.KERNELS[p["profile"]])


def test_demo_transcripts_have_the_router_shape(engine):
    plan = demo_data.build_plan(random.Random(1))[:2]
    for p in plan:
        p["sampling"]["max_tokens"] = 4
    from datetime import datetime, timezone
    out = demo_data.make_transcripts(engine, plan, start=datetime(2026, 1, 1, tzinfo=timezone.utc), progress=False)
    for t in out:
        assert set(t) == {"request_id", "model", "created_at", "messages", "response", "sampling", "kernel", "usage",
                          "timings", "route"}
        assert set(t["response"]) == {"content", "finish_reason"}
        assert set(t["sampling"]) == {"temperature", "top_p", "top_k", "min_p", "max_tokens", "seed"}
        assert t["usage"]["completion_tokens"] <= 4 and t["usage"]["prompt_tokens"] > 0
        assert set(t["route"]) == {"prefill", "decode"} and t["created_at"].endswith("Z")
        KernelSettings.from_dict(t["kernel"])
