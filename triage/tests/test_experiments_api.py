"""Experiments: arm planning, the paired-seed chunk plan, the REST API, export and summary stats.

Nothing here reaches a broker or a backend: the `db` fixture runs each test in a transaction
that never commits, so experiment_start's on-commit dispatch never fires (asserted below with
django_capture_on_commit_callbacks(execute=False)); samples are inserted with sample_record.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from triage.backends import Choice
from triage.experiments import analysis, arms as arm_planning, selectors, services
from triage.management.commands.bootstrap import profiles_ensure
from triage.models import Arm, Backend, Experiment, ExperimentCase, ExperimentChunk, Sample, Transcript
from triage.roles import ENGINEERS, OPS, ensure_groups
from triage.services.ingest import transcript_ingest
from triage.tests.ingest_fixtures import _clear_rate_limit_cache, make_key_client, transcript_payload  # noqa: F401

pytestmark = pytest.mark.django_db

URL = "/api/v1/experiments"
HEALTHY = ("A KV cache stores the attention keys and values of past tokens so that each decode step only "
           "computes the new token's projections.")
DEGENERATE = "</div>" * 300


@pytest.fixture(autouse=True)
def _profiles(db, settings):
    settings.EXPERIMENT_CHUNK_SIZE = 0  # derive it from the backend's max_concurrency
    profiles_ensure()
    ensure_groups()


def ingest(request_id: str | None = None, **overrides) -> int:
    result = transcript_ingest(source="test", payload=transcript_payload(request_id, **overrides))
    assert result.status == "created", result.errors
    return result.id


@pytest.fixture
def greedy_sparse():
    """Served at T=0 by the sparse kernels (given as settings, not a profile name)."""
    return ingest("greedy-sparse", sampling={"temperature": 0, "top_p": 1.0, "max_tokens": 700},
                  kernel={"attention": "sparse", "sparse_budget": 512},
                  response={"content": "<div>\n" + "</div>\n" * 200, "finish_reason": "length"})


@pytest.fixture
def stock_served():
    return ingest("stock-served")


def user_client(group: str | None, username: str) -> APIClient:
    user = get_user_model().objects.create_user(username)  # no password: force_login, and no slow hashing
    if group:
        user.groups.add(Group.objects.get(name=group))
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture
def engineer():
    return user_client(ENGINEERS, "erik")


def post(client, body):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return client.generic("POST", URL, data, content_type="application/json")


def arm_by_name(plans, name):
    return next(p for p in plans if p.name == name)


# --- default arms ----------------------------------------------------------------------


def test_default_arms_for_a_greedy_sparse_transcript(greedy_sparse):
    experiment = services.experiment_start(transcripts=[greedy_sparse], dispatch=False)
    arms = list(Arm.objects.filter(experiment=experiment).select_related("kernel_profile").order_by("position"))
    assert [(a.name, a.role) for a in arms] == [("stock", "stock"), ("sparse", "candidate"),
                                                ("greedy-control (sparse)", "control")]
    stock, sparse, control = arms
    assert stock.sampling == {"temperature": 0.6, "top_p": 0.95}
    assert stock.kernel["attention"] == "dense" and stock.kernel_profile.name == "stock"
    assert sparse.sampling == stock.sampling
    assert sparse.kernel_profile.name == "sparse"
    assert sparse.kernel == {**stock.kernel, "attention": "sparse", "sparse_budget": 512}
    assert control.sampling["temperature"] == 0.0
    assert control.kernel == sparse.kernel  # the served kernels
    case = ExperimentCase.objects.get(experiment=experiment)
    assert case.max_tokens == 700  # the original request's max_tokens


def test_default_arms_for_a_stock_served_production_transcript_is_stock_alone(stock_served):
    """Nothing differs from stock and it was not greedy: the one arm is stock (its rate is the result)."""
    experiment = services.experiment_start(transcripts=[stock_served], dispatch=False)
    assert list(Arm.objects.filter(experiment=experiment).values_list("name", "role")) == [("stock", "stock")]
    assert ExperimentCase.objects.get(experiment=experiment).max_tokens == 512


def test_default_arms_name_the_served_profile_by_name(db):
    tid = ingest("fp8-served", kernel_profile="fp8-kv", kernel={"kv_cache_dtype": "fp8_e4m3"})
    plans = arm_planning.default_arms([Transcript.objects.get(pk=tid)],
                                      fallback=arm_planning.default_backend())
    assert [(p.name, p.role) for p in plans] == [("stock", "stock"), ("fp8-kv", "candidate")]


def test_case_max_tokens_falls_back_to_the_response_length_capped(settings):
    settings.EXPERIMENT_MAX_TOKENS_CAP = 1024
    no_limit = ingest("no-limit", sampling={"temperature": 0.6}, usage={"completion_tokens": 31})
    long_one = ingest("long", sampling={"temperature": 0.6}, usage={"completion_tokens": 5000})
    over_cap = ingest("over-cap", sampling={"temperature": 0.6, "max_tokens": 4096})
    t = {tr.pk: tr for tr in Transcript.objects.filter(pk__in=[no_limit, long_one, over_cap])}
    assert services.case_max_tokens(t[no_limit]) == 47  # ceil(1.5 × 31)
    assert services.case_max_tokens(t[long_one]) == 1024
    assert services.case_max_tokens(t[over_cap]) == 1024


# --- paired-seed plan ------------------------------------------------------------------


def test_chunks_cover_every_seed_once_and_respect_backend_concurrency(greedy_sparse, stock_served):
    Backend.objects.filter(name="bundled").update(max_concurrency=10)
    experiment = services.experiment_start(transcripts=[greedy_sparse, stock_served], samples=16, dispatch=False)
    n_arms = Arm.objects.filter(experiment=experiment).count()
    assert n_arms == 3
    assert experiment.chunk_size == 10 // n_arms == 3
    for case in ExperimentCase.objects.filter(experiment=experiment):
        chunks = list(ExperimentChunk.objects.filter(case=case).order_by("start").values_list("start", "stop"))
        assert chunks[0][0] == 0 and chunks[-1][1] == 16
        assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))  # contiguous, no overlap
        assert all(0 < stop - start <= experiment.chunk_size for start, stop in chunks)
        assert sorted(i for s, e in chunks for i in range(s, e)) == list(range(16))


def test_chunk_size_is_at_least_one_and_at_most_the_samples(greedy_sparse):
    Backend.objects.filter(name="bundled").update(max_concurrency=1)
    small = services.experiment_start(transcripts=[greedy_sparse], samples=4, dispatch=False)
    assert small.chunk_size == 1 and ExperimentChunk.objects.filter(experiment=small).count() == 4
    Backend.objects.filter(name="bundled").update(max_concurrency=640)
    big = services.experiment_start(transcripts=[greedy_sparse], samples=4, dispatch=False)
    assert big.chunk_size == 4 and ExperimentChunk.objects.filter(experiment=big).count() == 1


def test_start_schedules_dispatch_on_commit(greedy_sparse, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.experiment_start(transcripts=[greedy_sparse])
    assert len(callbacks) == 1
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.experiment_start(transcripts=[greedy_sparse], dispatch=False)
    assert callbacks == []


# --- ablation --------------------------------------------------------------------------


def test_ablation_adds_one_switch_per_component_without_duplicates(greedy_sparse):
    experiment = services.experiment_start(
        transcripts=[greedy_sparse], ablate=True, dispatch=False,
        arms=[{"profile": "stock"}, {"name": "sparse-64", "profile": "sparse", "kernel": {"sparse_budget": 64}}])
    arms = {a.name: a for a in Arm.objects.filter(experiment=experiment)}
    assert set(arms) == {"stock", "sparse-64", "ablate attention=sparse"}
    ablate = arms["ablate attention=sparse"]
    assert ablate.role == "ablation" and ablate.component == "attention"
    assert ablate.kernel == {**arms["stock"].kernel, "attention": "sparse", "sparse_budget": 512}
    assert ablate.sampling == arms["sparse-64"].sampling
    candidate = arms["sparse-64"]
    assert candidate.role == "candidate" and candidate.component == "sparse_budget"
    assert candidate.kernel["sparse_budget"] == 64 and candidate.kernel["attention"] == "sparse"
    settings_seen = [(json.dumps(a.kernel, sort_keys=True), json.dumps(a.sampling, sort_keys=True)) for a in arms.values()]
    assert len(settings_seen) == len(set(settings_seen))


def test_ablation_of_a_single_component_candidate_marks_it():
    plans = arm_planning.explicit_arms([{"profile": "stock"}, {"profile": "fp8-kv"}],
                                       fallback=arm_planning.default_backend())
    out = arm_planning.ablation_arms(plans)
    assert [p.name for p in out] == ["stock", "fp8-kv"]
    assert arm_by_name(out, "fp8-kv").component == "kv_cache_dtype"


# --- API: permissions ------------------------------------------------------------------


def test_engineer_starts_an_experiment(engineer, greedy_sparse):
    response = post(engineer, {"transcript": greedy_sparse, "samples": 8})
    assert response.status_code == 201, response.content
    body = response.json()
    assert response["Location"] == f"{URL}/{body['id']}"
    assert body["status"] == "pending"
    assert body["progress"]["done"] == 0
    assert body["progress"]["total"] == len(body["arms"]) * 8 == 24
    assert body["created_by"] == "erik"
    assert [c["transcript_id"] for c in body["cases"]] == [greedy_sparse]
    assert not Sample.objects.exists()
    assert engineer.get(response["Location"]).json()["id"] == body["id"]


def test_ops_and_viewers_may_not_start_one(greedy_sparse):
    for client in (user_client(OPS, "olga"), user_client(None, "vera")):
        response = post(client, {"transcript": greedy_sparse})
        assert response.status_code == 403, response.content
        assert "add_experiment" in response.json()["error"]["message"]
        assert client.get(URL).status_code == 200  # reading is fine
    assert not Experiment.objects.exists()


def test_keys_need_the_experiment_scope_to_start(greedy_sparse):
    key = make_key_client(["experiment"])
    response = post(key, {"transcript": greedy_sparse})
    assert response.status_code == 201, response.content
    assert response.json()["created_by"] == f"api-key:{key.api_key.name}"
    reader = make_key_client(["read"])
    denied = post(reader, {"transcript": greedy_sparse})
    assert denied.status_code == 403
    assert "experiment" in denied.json()["error"]["message"]
    assert reader.get(URL).status_code == 200
    assert reader.get(response["Location"]).status_code == 200
    assert reader.post(f"{response['Location']}/cancel").status_code == 403
    assert make_key_client(["ingest"]).get(URL).status_code == 403


def test_unauthenticated_is_401(greedy_sparse):
    anonymous = APIClient()
    assert post(anonymous, {"transcript": greedy_sparse}).status_code == 401
    assert anonymous.get(URL).status_code == 401


# --- API: bad input is a 400 naming the field ------------------------------------------


def bad(client, body, field):
    response = post(client, body)
    assert response.status_code == 400, (body, response.status_code, response.content)
    error = response.json()["error"]
    assert field in error.get("fields", {}), (field, error)
    return error


def test_bad_input_names_the_field(engineer, greedy_sparse, settings):
    settings.EXPERIMENT_MAX_SAMPLES = 256
    t = greedy_sparse
    bad(engineer, {"transcript": 999999}, "transcripts[0]")
    bad(engineer, {"transcripts": [t, 999999]}, "transcripts[1]")
    bad(engineer, {"transcript": t, "arms": [{"profile": "stock"}, {"profile": "no-such"}]}, "arms[1].profile")
    bad(engineer, {"transcript": t, "arms": [{"profile": "stock", "temperature": 3}]}, "arms[0].temperature")
    bad(engineer, {"transcript": t, "arms": [{"profile": "stock", "temperature": "hot"}]}, "arms[0].temperature")
    bad(engineer, {"transcript": t, "arms": [{"profile": "stock", "kernel": {"colour": "blue"}}]}, "arms[0].kernel.colour")
    bad(engineer, {"transcript": t, "arms": [{"profile": "stock", "flavour": 1}]}, "arms[0].flavour")
    bad(engineer, {"transcript": t, "arms": [{"profile": "sparse", "kernel": {"sparse_budget": 8}}]},
        "arms[0].kernel.sparse_budget")
    error = bad(engineer, {"transcript": t, "samples": 257}, "samples")
    assert "256" in error["message"]
    bad(engineer, {"transcript": t, "samples": "16"}, "samples")
    bad(engineer, {"transcript": t, "samples": 0}, "samples")
    bad(engineer, {"transcript": t, "max_tokens": 10**6}, "max_tokens")
    bad(engineer, {"transcript": t, "transcripts": [t]}, "transcripts")
    bad(engineer, {}, "transcripts")
    bad(engineer, {"selection": {"model": "no-such-model"}}, "selection")
    bad(engineer, [{"transcript": t}], "body")
    bad(engineer, "not json", "body")
    bad(engineer, {"transcript": t, "arms": []}, "arms")
    bad(engineer, {"transcript": t, "arms": [{"name": "a", "profile": "stock"}, {"name": "a", "profile": "sparse"}]},
        "arms")
    assert not Experiment.objects.exists()


MORE_BAD_INPUT = [
    ({"arms": [1]}, "arms[0]"),
    ({"arms": [{"profile": "stock", "kernel": "sparse"}]}, "arms[0].kernel"),
    ({"arms": [{"profile": "stock", "top_p": 0}]}, "arms[0].top_p"),
    ({"arms": [{"profile": "stock", "top_k": 1.5}]}, "arms[0].top_k"),
    ({"arms": [{"profile": "stock", "max_tokens": 10**6}]}, "arms[0].max_tokens"),
    ({"arms": [{"profile": "stock", "temperature": True}]}, "arms[0].temperature"),
    ({"arms": [{"profile": "stock", "name": 5}]}, "arms[0].name"),
    ({"arms": "stock"}, "arms"),
    ({"base_seed": -1}, "base_seed"),
    ({"ablate": "maybe"}, "ablate"),
]


def test_more_bad_input_is_400_not_500(engineer, greedy_sparse):
    for body, field in MORE_BAD_INPUT:
        bad(engineer, {"transcript": greedy_sparse, **body}, field)
    assert not Experiment.objects.exists()


def test_bad_transcript_lists_are_400(engineer):
    bad(engineer, {"transcripts": []}, "transcripts")
    bad(engineer, {"transcripts": ["1"]}, "transcripts[0]")
    bad(engineer, {"transcript": True}, "transcript")
    bad(engineer, {"selection": "degenerate"}, "selection")


def test_greedy_only_arms_are_refused_unless_allowed(engineer, greedy_sparse):
    body = {"transcript": greedy_sparse, "arms": [{"name": "greedy", "profile": "stock", "temperature": 0}]}
    error = bad(engineer, body, "arms")
    assert "greedy decoding degenerates by itself" in error["message"]
    assert "allow_greedy_only" in error["message"]
    response = post(engineer, {**body, "allow_greedy_only": True})
    assert response.status_code == 201, response.content
    arms = [(a["name"], a["role"], a["sampling"]["temperature"]) for a in response.json()["arms"]]
    assert arms == [("stock", "stock", 0.6), ("greedy", "control", 0.0)]  # a stock reference is always added


def test_unnamed_greedy_stock_arm_gets_the_greedy_only_answer(engineer, greedy_sparse):
    """The plain request [{"profile": "stock", "temperature": 0}]: the arm is labelled 'stock'
    (its profile's name), which collides with the stock reference explicit_arms adds, so it is
    refused with 'an arm is named stock ... rename it' instead of the greedy-only explanation,
    and allow_greedy_only cannot start it either."""
    body = {"transcript": greedy_sparse, "arms": [{"profile": "stock", "temperature": 0}]}
    error = bad(engineer, body, "arms")
    assert "greedy decoding degenerates by itself" in error["message"]
    response = post(engineer, {**body, "allow_greedy_only": True})
    assert response.status_code == 201, response.content


def test_selection_builds_a_suite(engineer, greedy_sparse, stock_served):
    response = post(engineer, {"selection": {"temperature_max": 0}, "samples": 4})
    assert response.status_code == 201, response.content
    assert [c["transcript_id"] for c in response.json()["cases"]] == [greedy_sparse]


def test_default_names_say_which_transcript_and_count_arms_grammatically(greedy_sparse, stock_served):
    one = services.experiment_start(transcripts=[stock_served], arms=[{"profile": "stock"}], dispatch=False)
    assert one.name == "stock-served × 1 arm"
    two = services.experiment_start(transcripts=[greedy_sparse, stock_served], arms=[{"profile": "stock"}],
                                    dispatch=False)
    assert two.name == "2 transcripts × 1 arm"
    default = services.experiment_start(transcripts=[greedy_sparse], dispatch=False)
    assert default.name == "greedy-sparse × 3 arms"
    assert services.experiment_start(transcripts=[stock_served], name="mine", dispatch=False).name == "mine"
    long_id = Transcript.objects.get(pk=stock_served)
    long_id.request_id = "r" * 200
    assert services.default_name(cases=[long_id], arm_count=2) == "r" * 79 + "… × 2 arms"


# --- API: list, detail, cancel ---------------------------------------------------------


def test_list_detail_and_cancel(engineer, greedy_sparse, stock_served):
    first = post(engineer, {"transcript": greedy_sparse, "samples": 4}).json()
    second = post(engineer, {"transcript": stock_served, "samples": 4}).json()
    listed = engineer.get(URL).json()["results"]
    assert [e["id"] for e in listed] == [second["id"], first["id"]]
    assert listed[1]["arm_count"] == 3 and listed[1]["case_count"] == 1 and listed[1]["status"] == "pending"
    assert [e["id"] for e in engineer.get(URL, {"transcript": greedy_sparse}).json()["results"]] == [first["id"]]
    assert engineer.get(URL, {"status": "bogus"}).status_code == 400
    assert engineer.get(f"{URL}/999999").status_code == 404

    cancelled = engineer.post(f"{URL}/{first['id']}/cancel")
    assert cancelled.status_code == 200, cancelled.content
    assert cancelled.json()["status"] == "cancelled"
    assert not ExperimentChunk.objects.filter(experiment_id=first["id"]).exclude(status="cancelled").exists()
    again = engineer.post(f"{URL}/{first['id']}/cancel")
    assert again.status_code == 409
    assert engineer.get(f"{URL}/{first['id']}").json()["status"] == "cancelled"
    assert engineer.get(f"{URL}/{second['id']}").json()["status"] == "pending"
    assert engineer.post(f"{URL}/999999/cancel").status_code == 404


# --- samples, export, statistics -------------------------------------------------------


def choice(i: int, text: str, finish_reason: str = "stop") -> Choice:
    return Choice(index=i, seed=1000 + i, text=text, finish_reason=finish_reason, completion_tokens=3,
                  logprobs=[{"token": "a", "logprob": -0.1}, {"token": "b", "logprob": -0.2}, {"token": "c", "logprob": -0.3}])


def record(arm, case, indices, text, finish_reason="stop") -> int:
    return services.sample_record(arm=arm, case=case, messages=selectors.conversation(case=case),
                                  choices=[(i, choice(i, text, finish_reason)) for i in indices])


def read_stream(response) -> bytes:
    return b"".join(response.streaming_content)


def test_export_is_byte_exact_and_samples_are_unique(engineer, stock_served):
    experiment = services.experiment_start(transcripts=[stock_served], samples=2,
                                           arms=[{"profile": "stock"}, {"profile": "sparse"}], dispatch=False)
    stock, sparse = Arm.objects.filter(experiment=experiment).order_by("position")
    case = ExperimentCase.objects.get(experiment=experiment)
    nul_text = "before\x00after =SUM(A1)"
    assert record(stock, case, [0], nul_text) == 1
    assert record(stock, case, [0], "something else") == 0  # the same index again: kept as it was
    assert record(stock, case, [1], HEALTHY) == 1
    assert record(sparse, case, [0, 1], "=cmd|' /C calc'!A0") == 2
    assert Sample.objects.filter(arm=stock, case=case, index=0).count() == 1

    response = engineer.get(f"{URL}/{experiment.pk}/export", {"format": "json"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    body = json.loads(read_stream(response))
    assert body["experiment"]["id"] == experiment.pk
    assert body["experiment"]["progress"]["done"] == 4 == body["experiment"]["progress"]["total"]
    samples = body["samples"]
    assert [(s["arm"], s["index"]) for s in samples] == [("stock", 0), ("stock", 1), ("sparse", 0), ("sparse", 1)]
    assert samples[0]["text"] == nul_text  # byte-exact, NUL included
    assert samples[0]["seed"] == 1000 and samples[0]["logprobs"][0] == {"token": "a", "logprob": -0.1}

    response = engineer.get(f"{URL}/{experiment.pk}/export", {"format": "csv"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(read_stream(response).decode())))
    assert len(rows) == 4
    assert rows[0]["text"] == "before\u2400after =SUM(A1)"
    assert rows[2]["text"].startswith("'=")  # no formula injection
    assert engineer.get(f"{URL}/{experiment.pk}/export", {"format": "xml"}).status_code == 400
    assert engineer.get(f"{URL}/999999/export").status_code == 404


def test_summarize_paired_rates_and_mcnemar(stock_served):
    n = 16
    experiment = services.experiment_start(transcripts=[stock_served], samples=n,
                                           arms=[{"profile": "stock"}, {"name": "sparse-64", "profile": "sparse",
                                                                        "kernel": {"sparse_budget": 64}}],
                                           dispatch=False)
    stock, candidate = Arm.objects.filter(experiment=experiment).order_by("position")
    case = ExperimentCase.objects.get(experiment=experiment)
    record(stock, case, range(n), HEALTHY)
    record(candidate, case, range(n), DEGENERATE, finish_reason="length")
    assert not Sample.objects.filter(arm=stock).filter(degenerate=True).exists()
    assert Sample.objects.filter(arm=candidate, degenerate=True).count() == n

    results = analysis.summarize(experiment)
    stock.refresh_from_db()
    candidate.refresh_from_db()
    assert stock.stats["rate"]["rate"] == 0.0 and stock.stats["rate"]["n"] == n
    assert candidate.stats["rate"]["rate"] == 1.0 and candidate.stats["rate"]["k"] == n
    (test,) = results["tests"]
    assert test["arm_id"] == candidate.pk and test["against_id"] == stock.pk and test["pairs"] == n
    assert test["mcnemar"]["p_value"] < 0.05
    assert test["rate_difference"] == 1.0
    assert test["samples_needed"] is None  # significant: no more samples needed
    experiment.refresh_from_db()
    assert experiment.results["tests"][0]["mcnemar"]["p_value"] == test["mcnemar"]["p_value"]


# --- the experiment page and its report --------------------------------------------------

FENCED = "Here it is:\n```html\n<script>alert(1)</script>\n<p>hi</p>\n```\nDone."


def test_experiment_page_renders_sample_fences_as_code_blocks_escaped(engineer, stock_served):
    experiment = services.experiment_start(transcripts=[stock_served], samples=1,
                                           arms=[{"profile": "stock"}, {"profile": "sparse"}], dispatch=False)
    stock, sparse = Arm.objects.filter(experiment=experiment).order_by("position")
    case = ExperimentCase.objects.get(experiment=experiment)
    record(stock, case, [0], HEALTHY)
    record(sparse, case, [0], FENCED)
    sample = Sample.objects.get(arm=sparse)  # a highlight that crosses the closing fence: cut there, shown on both sides
    start = FENCED.index("<p>hi</p>")
    sample.metrics = {**(sample.metrics or {}), "highlights": [{"start": start, "end": len(FENCED), "kind": "loop",
                                                                "label": "period 3 ×2"}]}
    sample.save(update_fields=["metrics"])
    Experiment.objects.filter(pk=experiment.pk).update(status=Experiment.Status.DONE)  # (the samples show once it ended)

    page = engineer.get(f"/experiments/{experiment.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "stock-served × 2 arms" in html and "1 conversation × 2 arms × 1 paired seed\n" in html
    assert '<div class="codeblock"><div class="lang">html</div><pre><code class="language-html">' in html
    assert ('<span class="fence">```html\n</span>&lt;script&gt;alert(1)&lt;/script&gt;\n'
            '<mark class="hl-loop" title="loop period 3 ×2">&lt;p&gt;hi&lt;/p&gt;\n</mark>'
            '<mark class="hl-loop" title="loop period 3 ×2"><span class="fence">```\n</span></mark></code></pre>') in html
    assert '<pre class="text">\n<mark class="hl-loop" title="loop period 3 ×2">Done.</mark></pre>' in html
    assert "<script>alert(1)" not in html
    assert '<details><summary>diff against stock</summary><pre class="diff">' in html  # the diff stays plain text
    assert "<ins>Here it is:\n```html\n&lt;script&gt;alert(1)&lt;/script&gt;" in html

    report = engineer.get(f"/experiments/{experiment.pk}/report.html")
    assert report.status_code == 200 and report["Content-Disposition"].startswith("attachment")
    body = report.content.decode()
    assert '<pre><code class="language-html">' in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "<script>alert(1)" not in body


@pytest.mark.parametrize("verdict", ["sampling", "kernel", "model_or_prompt", "inconclusive"])
def test_experiment_page_says_the_verdict_in_words_and_what_to_do_next(engineer, stock_served, verdict):
    from triage.diagnosis import VERDICTS

    experiment = services.experiment_start(transcripts=[stock_served], samples=1, arms=[{"profile": "stock"}],
                                           dispatch=False)
    Experiment.objects.filter(pk=experiment.pk).update(
        status=Experiment.Status.DONE, verdict=verdict,
        diagnosis={"verdict": verdict, "summary": "the summary", "evidence": ["one fact"]})
    html = engineer.get(f"/experiments/{experiment.pk}/").content.decode()
    title, next_step = VERDICTS[verdict]
    assert f'Diagnosis: {title} <span class="verdict-code">{verdict}</span>' in html
    assert "What to do next:" in html and next_step.split(".")[0].replace("'", "&#x27;") in html


def test_the_kl_figure_says_why_it_is_flat_when_every_arm_runs_the_stock_kernels():
    from triage.views_experiments import _figures

    kernel = {"attention": "dense"}
    arms = [{"id": 1, "name": "stock", "role": "stock", "kernel": kernel, "stats": {}},
            {"id": 2, "name": "greedy-control", "role": "control", "kernel": kernel, "stats": {}}]
    divergence = [{"arm": "greedy-control", "arm_id": 2, "kind": "kernel", "summary": {"mean": 0.0},
                   "threshold": 0.1, "positions": [{"kl": 0.0, "token": "a"}, {"kl": 0.0, "token": "b"}]}]
    detail = {"arms": arms, "divergence": divergence, "cases": [{}]}
    (kl,) = [f for f in _figures(detail, []) if f["id"] == "fig-kl"]
    assert "flat by construction" in kl["note"]
    arms[1] = {**arms[1], "name": "sparse", "role": "candidate", "kernel": {"attention": "sparse"}}
    (kl,) = [f for f in _figures({**detail, "arms": arms}, []) if f["id"] == "fig-kl"]
    assert kl["note"] == ""


@pytest.mark.parametrize("value, shown", [(None, "—"), (0.0, "< 0.0001"), (3e-7, "< 0.0001"), (0.04912, "0.0491"),
                                          (1.0, "1.0000"), ("x", "—"), (float("nan"), "—")])
def test_p_values_never_print_as_zero(value, shown):
    from triage.templatetags.triage_format import pvalue

    assert pvalue(value) == shown


def test_starting_an_experiment_marks_open_flags_investigating_and_never_moves_one_back(stock_served):
    from triage.services.flags import flags_advance
    from triage.models import Flag

    new = Flag.objects.create(transcript_id=stock_served, reason=Flag.Reason.REPETITION, status=Flag.Status.NEW)
    done = Flag.objects.create(transcript_id=stock_served, reason=Flag.Reason.REPETITION, status=Flag.Status.RESOLVED)
    services.experiment_start(transcripts=[stock_served], samples=1, arms=[{"profile": "stock"}], dispatch=False)
    new.refresh_from_db()
    done.refresh_from_db()
    assert (new.status, done.status) == ("investigating", "resolved")
    assert flags_advance(transcript_ids=[stock_served], to=Flag.Status.DIAGNOSED) == 1
    assert flags_advance(transcript_ids=[stock_served], to=Flag.Status.INVESTIGATING) == 0  # never back
    new.refresh_from_db()
    assert new.status == "diagnosed"
