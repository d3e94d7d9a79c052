"""Experiments end to end on the bundled backend (real SmolLM2 on the CPU, one server per
session): regeneration, statistics, teacher-forced divergence and the diagnosis. Small N and
short max_tokens keep them quick; the chunks run in this process (the worker tests are in
test_experiments_worker.py)."""

from __future__ import annotations

import pytest

from triage.experiments import selectors, services
from triage.models import Backend, Divergence, Experiment, Sample

pytestmark = pytest.mark.slow


def _run(**kwargs) -> Experiment:
    experiment = services.experiment_start(dispatch=False, **kwargs)
    return services.experiment_run_inline(experiment=experiment)


def _samples(experiment: Experiment, arm: str) -> dict[int, Sample]:
    return {s.index: s for s in Sample.objects.filter(arm__experiment=experiment, arm__name=arm)}


def test_weak_sparse_profile_on_a_long_conversation_is_diagnosed_kernel_naming_sparse_budget(
        bundled_backend, demo_transcripts, settings):
    settings.EXPERIMENT_DIVERGENCE_MAX_CHARS = 600  # ~150 teacher-forced tokens keep the test quick
    settings.EXPERIMENT_DECODE_CHECK_SAMPLES = 0  # decode vs prefill: tested on a short conversation below
    transcript = demo_transcripts["demo-0028"]  # a 2,260-token conversation
    assert transcript.usage["prompt_tokens"] >= 2000
    experiment = _run(transcripts=[transcript.pk], samples=4, max_tokens=24, ablate=True,
                      arms=[{"profile": "stock"}, {"name": "sparse-64", "profile": "sparse", "kernel": {"sparse_budget": 64}}])
    detail = selectors.experiment_detail(experiment=experiment)
    assert detail["status"] == "done", detail["error"]
    arms = {a["name"]: a for a in detail["arms"]}
    assert set(arms) == {"stock", "sparse-64", "ablate attention=sparse"}
    assert arms["sparse-64"]["component"] == "sparse_budget"
    assert arms["ablate attention=sparse"]["kernel"]["sparse_budget"] == 512
    kl = {d["arm"]: d["summary"]["mean"] for d in detail["divergence"] if d["kind"] in ("kernel", "noise_floor")}
    assert kl["stock"] == 0.0  # the measured noise floor: the bundled engine is deterministic
    assert kl["sparse-64"] > 0.1 and kl["ablate attention=sparse"] < 0.1  # 0.67 vs 0.08 measured
    assert kl["sparse-64"] > 5 * kl["ablate attention=sparse"]
    assert experiment.verdict == "kernel"
    main = experiment.diagnosis["findings"][0]
    assert main["code"] == "kernel" and main["details"]["component"] == "sparse_budget"
    assert main["details"]["first_divergent_position"] is not None and main["details"]["token"] is not None
    assert "sparse_budget" in experiment.diagnosis["summary"]
    for arm in detail["arms"]:  # what really ran is recorded
        runtime = arm["runtime"]
        assert runtime["backend"]["kind"] == "bundled" and runtime["model"] and runtime["dtype"] in ("bf16", "fp32")
        assert runtime["kernel"] == arm["kernel"] and runtime["implementation"]["attention_backend"] == arm["kernel"]["attention"]


def test_sparse_with_a_budget_over_the_context_is_token_identical_and_not_kernel(bundled_backend, demo_transcripts):
    transcript = demo_transcripts["demo-0024"]  # short, healthy, T=0.6
    experiment = _run(transcripts=[transcript.pk], samples=4, max_tokens=32,
                      arms=[{"profile": "stock"}, {"name": "sparse-8192", "profile": "sparse", "kernel": {"sparse_budget": 8192}}])
    stock, sparse = _samples(experiment, "stock"), _samples(experiment, "sparse-8192")
    assert len(stock) == len(sparse) == 4
    for index in stock:
        assert stock[index].seed == sparse[index].seed == index  # paired: seed base + i on every arm
        assert stock[index].token_ids == sparse[index].token_ids
    assert experiment.verdict != "kernel"
    divergence = Divergence.objects.get(experiment=experiment, arm__name="sparse-8192", kind="kernel")
    assert divergence.summary["mean"] < 1e-3
    for arm in ("stock", "sparse-8192"):  # each arm's decode against a re-score of the same token ids
        decode = Divergence.objects.get(experiment=experiment, arm__name=arm, kind="decode_prefill", sample_index=0)
        assert decode.method == "exact" and decode.summary["n"] == len(stock[0].token_ids)
        assert decode.summary["mean_abs_diff"] < 0.05


def test_same_seeds_give_the_same_samples_and_a_rerun_computes_afresh(bundled_backend, demo_transcripts, settings):
    settings.EXPERIMENT_DECODE_CHECK_SAMPLES = 0
    transcript = demo_transcripts["demo-0024"]
    arms = [{"profile": "stock"}, {"profile": "fp8-kv"}]
    first = _run(transcripts=[transcript.pk], samples=3, max_tokens=16, arms=arms)
    second = _run(transcripts=[transcript.pk], samples=3, max_tokens=16, arms=arms)
    for name in ("stock", "fp8-kv"):
        a, b = _samples(first, name), _samples(second, name)
        assert {i: s.text for i, s in a.items()} == {i: s.text for i, s in b.items()}
        assert not {s.pk for s in a.values()} & {s.pk for s in b.values()}  # new rows, nothing reused
    assert Divergence.objects.filter(experiment=second).count() == Divergence.objects.filter(experiment=first).count() > 0
    other_seed = _run(transcripts=[transcript.pk], samples=3, max_tokens=16, arms=arms, base_seed=500)
    assert [s.text for s in _samples(other_seed, "stock").values()] != [s.text for s in _samples(first, "stock").values()]


def test_a_stopped_backend_fails_the_experiment_with_its_error_instead_of_hanging(bundled_backend, demo_transcripts,
                                                                                 settings):
    from triage.net import free_port

    settings.BACKEND_ATTEMPTS, settings.BACKEND_BACKOFF = 2, 0.05
    down = Backend.objects.create(name="down", kind=Backend.Kind.BUNDLED, base_url=f"http://127.0.0.1:{free_port()}/v1")
    experiment = _run(transcripts=[demo_transcripts["demo-0024"].pk], samples=2, max_tokens=8,
                      arms=[{"profile": "stock", "backend": "down"}])
    assert experiment.status == "failed"
    assert "unreachable" in experiment.error and "down" in experiment.error and "after 2 attempts" in experiment.error
    arm = experiment.arms.get()
    assert arm.backend == down and "unreachable" in arm.error


def test_run_experiment_command_prints_the_verdict_and_the_api_json(bundled_backend, demo_transcripts, capsys):
    import json

    from django.core.management import call_command

    transcript = demo_transcripts["demo-0024"]
    call_command("run_experiment", "--transcript", str(transcript.pk), "--samples", "2", "--max-tokens", "8",
                 "--inline", "--json")
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "done" and out["verdict"] in ("sampling", "kernel", "model_or_prompt", "inconclusive")
    assert out["progress"]["done"] == out["progress"]["total"] == 2 * len(out["arms"])
    call_command("run_experiment", "--transcript", str(transcript.pk), "--samples", "2", "--max-tokens", "8", "--inline")
    table = capsys.readouterr().out
    assert "degenerate (95% CI)" in table and "stock" in table


def test_a_transcript_that_looped_at_temperature_0_is_diagnosed_sampling(bundled_backend, demo_transcripts):
    transcript = demo_transcripts["demo-0043"]  # greedy decoding looped; served at T=0, max_tokens 256
    assert transcript.temperature == 0 and transcript.degenerate
    experiment = _run(transcripts=[transcript.pk], samples=24)  # default arms
    detail = selectors.experiment_detail(experiment=experiment, positions=False)
    arms = {a["name"]: a for a in detail["arms"]}
    assert set(arms) == {"stock", "greedy-control"}  # served by stock kernels: no separate served arm
    assert arms["stock"]["sampling"] == {"temperature": 0.6, "top_p": 0.95}
    assert arms["greedy-control"]["sampling"]["temperature"] == 0.0
    assert detail["cases"][0]["max_tokens"] == 256  # the original request's limit
    assert arms["greedy-control"]["stats"]["rate"]["rate"] == 1.0  # the pathology, reproduced
    assert arms["stock"]["stats"]["rate"]["ci_high"] < 0.3
    assert experiment.verdict == "sampling", experiment.diagnosis
    assert any("T=0" in line for line in experiment.diagnosis["evidence"])
    # its automatic flag moved along: investigating while it ran, diagnosed by the verdict
    assert set(transcript.flags.values_list("status", flat=True)) == {"diagnosed"}
