"""POST /api/v1/transcripts: answers, idempotency, batches, NDJSON, limits, auth, metrics."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from triage.models import Flag, KernelProfile, Transcript
from triage.services.ingest import GREEDY_WARNING
from triage.tests.ingest_fixtures import (  # noqa: F401 - fixtures
    LOOP_RESPONSE,
    _clear_rate_limit_cache,
    ingest_only,
    make_key_client,
    post_json,
    router,
    transcript_payload,
)

pytestmark = pytest.mark.django_db


def test_new_transcript_is_201_and_replay_is_200_with_same_id(router):
    payload = transcript_payload("r-1")
    first = post_json(router, payload)
    assert first.status_code == 201, first.content
    assert first.json()["status"] == "created"
    assert first["Location"] == f"/api/v1/transcripts/{first.json()['id']}"
    # The same content re-serialized differently (key order, spacing) is still a replay.
    replay = post_json(router, json.dumps(dict(reversed(list(payload.items()))), indent=2))
    assert replay.status_code == 200, replay.content
    assert replay.json()["id"] == first.json()["id"]
    assert replay.json()["status"] == "duplicate"
    assert Transcript.objects.count() == 1
    row = Transcript.objects.get()
    assert row.source == "router-main" and row.request_id == "r-1"
    assert row.temperature == 0.6 and row.finish_reason == "stop"
    assert row.kernel["attention"] == "dense" and row.kernel["page_size"] == 16  # defaults filled in
    assert row.metrics and row.degenerate is False and row.flagged is False


def test_same_request_id_with_different_content_is_409(router):
    assert post_json(router, transcript_payload("r-2")).status_code == 201
    changed = transcript_payload("r-2")
    changed["response"]["content"] += " (edited)"
    response = post_json(router, changed)
    assert response.status_code == 409
    error = response.json()["error"]
    assert "different content" in error["message"] and error["request_id"] == "r-2"
    assert error["id"] == Transcript.objects.get().id
    assert Transcript.objects.get().response == transcript_payload("r-2")["response"]["content"]


def test_request_id_is_namespaced_by_the_keys_source(router, db):
    other = make_key_client(["ingest"], name="router-other")
    assert post_json(router, transcript_payload("shared-id")).status_code == 201
    assert post_json(other, transcript_payload("shared-id")).status_code == 201
    assert sorted(Transcript.objects.values_list("source", flat=True)) == ["router-main", "router-other"]


def test_batch_commits_valid_items_and_reports_the_invalid_one_precisely(router):
    bad = transcript_payload("b-bad")
    bad["messages"][1]["role"] = "bot"
    bad["sampling"]["top_p"] = 1.5
    bad["kernel"] = {"attention": "sparse", "page_size": 17}
    body = {"transcripts": [transcript_payload("b-1"), bad, transcript_payload("b-2"), "not an object"]}
    response = post_json(router, body)
    assert response.status_code == 207
    results = response.json()["results"]
    assert [r["status"] for r in results] == ["created", "invalid", "created", "invalid"]
    assert [r["index"] for r in results] == [0, 1, 2, 3]
    errors = results[1]["errors"]
    assert results[1]["request_id"] == "b-bad"
    assert set(errors) == {"messages[1].role", "sampling.top_p", "kernel.page_size"}
    assert "use one of system, user, assistant" in errors["messages[1].role"][0]
    assert "must be ≤ 1" in errors["sampling.top_p"][0]
    assert "must be one of 8, 16, 32, 64, 128" in errors["kernel.page_size"][0]
    assert results[3]["errors"] == {"body": ["a transcript must be a JSON object, got str."]}
    assert response.json()["counts"] == {"created": 2, "duplicate": 0, "conflict": 0, "invalid": 2}
    assert set(Transcript.objects.values_list("request_id", flat=True)) == {"b-1", "b-2"}


def test_batch_with_replays_conflicts_and_repeats_inside_the_batch(router):
    assert post_json(router, transcript_payload("k-1")).status_code == 201
    changed = transcript_payload("k-1")
    changed["model"] = "another-model"
    body = [transcript_payload("k-1"), changed, transcript_payload("k-2"), transcript_payload("k-2"),
            transcript_payload("k-3", model="x"), transcript_payload("k-3", model="y")]
    response = post_json(router, body)  # a bare array is a batch too
    assert response.status_code == 207
    statuses = [(r["request_id"], r["status"]) for r in response.json()["results"]]
    assert statuses == [("k-1", "duplicate"), ("k-1", "conflict"), ("k-2", "created"), ("k-2", "duplicate"),
                        ("k-3", "created"), ("k-3", "conflict")]
    ids = [r["id"] for r in response.json()["results"]]
    assert ids[2] == ids[3] and ids[4] == ids[5] and ids[0] == ids[1]
    assert Transcript.objects.count() == 3


def test_ndjson_lines_are_a_batch_and_a_bad_line_is_reported_with_its_position(router):
    lines = [json.dumps(transcript_payload("n-1")), "", '{"request_id": "n-2", oops}', json.dumps(transcript_payload("n-3"))]
    response = router.generic("POST", "/api/v1/transcripts", "\n".join(lines) + "\n", content_type="application/x-ndjson")
    assert response.status_code == 207
    results = response.json()["results"]
    assert [r["status"] for r in results] == ["created", "invalid", "created"]
    assert results[1]["errors"]["body"][0].startswith("line 3: Malformed JSON at line 3, column 23")
    assert set(Transcript.objects.values_list("request_id", flat=True)) == {"n-1", "n-3"}


def test_malformed_json_is_400_with_the_position(router):
    response = post_json(router, '{"request_id": "x",\n  "model": }')
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["position"] == {"line": 2, "column": 12, "offset": 31}
    assert "line 2, column 12" in error["message"]


@pytest.mark.parametrize("body, fragment", [
    ('{"request_id": "x", "messages": [], "response": {"content": "a"}, "metadata": {"v": NaN}}', "NaN is not valid JSON"),
    ('{"request_id": "x", "messages": [], "response": {"content": "a"}, "metadata": {"v": 1e999}}', "out of range"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('"just a string"', "Expected a transcript object"),
    ("   ", "Empty body"),
])
def test_json_that_cannot_be_stored_is_a_clear_400(router, body, fragment):
    response = post_json(router, body)
    assert response.status_code == 400, response.content
    assert fragment in response.json()["error"]["message"]


def test_invalid_utf8_body_is_400_with_the_byte_offset(router):
    response = post_json(router, b'{"request_id": "\xff"}')
    assert response.status_code == 400
    assert response.json()["error"]["position"] == {"offset": 16}


def test_lone_surrogate_is_invalid_with_its_field_path(router):
    payload = json.dumps(transcript_payload("s-1")).replace("KV cache is", "KV \\ud800 cache is")
    response = post_json(router, payload)
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["messages[1].content"]


def test_missing_and_mistyped_fields_are_reported_with_paths(router):
    response = post_json(router, {"messages": "hi", "response": {"content": 5}, "sampling": {"seed": True},
                                  "created_at": "yesterday", "timings": {"ttft_ms": -1}})
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert set(fields) >= {"request_id", "messages", "response.content", "sampling.seed", "created_at", "timings.ttft_ms"}
    assert "This field is required." in fields["request_id"]
    assert "ISO 8601" in fields["created_at"][0]


def test_unknown_top_level_fields_are_kept_in_metadata(router):
    payload = transcript_payload("m-1", metadata={"tenant": "acme", "router_version": "mine"},
                                 router_version="2.3.1", tenant_tier="gold")
    payload["sampling"]["repetition_penalty"] = 1.1
    payload["sampling"]["logit_bias"] = {"50256": -100}
    payload["usage"]["prompt_tokens_details"] = {"cached_tokens": 8}
    assert post_json(router, payload).status_code == 201
    row = Transcript.objects.get()
    assert row.metadata == {"tenant": "acme", "router_version": "mine", "tenant_tier": "gold",
                            "unknown_fields": {"router_version": "2.3.1"}}
    assert row.sampling["logit_bias"] == {"50256": -100} and row.sampling["repetition_penalty"] == 1.1
    assert row.usage["prompt_tokens_details"] == {"cached_tokens": 8}


def test_kernel_profile_by_name_and_unknown_name(router):
    KernelProfile.objects.create(name="sparse", settings={"attention": "sparse"})
    payload = transcript_payload("p-1")
    del payload["kernel"]
    payload["kernel_profile"] = "sparse"
    assert post_json(router, payload).status_code == 201
    row = Transcript.objects.get()
    assert row.kernel_profile.name == "sparse" and row.kernel == {"attention": "sparse"}
    payload["request_id"], payload["kernel_profile"] = "p-2", "nope"
    response = post_json(router, payload)
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"kernel_profile": ["unknown kernel profile 'nope'; known profiles: sparse."]}


def test_epoch_created_at_and_content_parts_are_accepted(router):
    payload = transcript_payload("e-1", created_at=1738324800)
    payload["messages"][1]["content"] = [{"type": "text", "text": "part one"}, {"type": "image_url", "image_url": {"url": "x"}}]
    assert post_json(router, payload).status_code == 201
    assert Transcript.objects.get().created_at.isoformat() == "2025-01-31T12:00:00+00:00"


def test_greedy_transcript_gets_the_warning_and_a_loop_is_auto_flagged(router):
    greedy_loop = transcript_payload("g-1", sampling={"temperature": 0, "seed": 1},
                                     response={"content": LOOP_RESPONSE, "finish_reason": "length"})
    healthy = transcript_payload("g-2")
    response = post_json(router, {"transcripts": [greedy_loop, healthy]})
    looped, fine = response.json()["results"]
    assert looped["warnings"] == [GREEDY_WARNING]
    assert GREEDY_WARNING == ("greedy decoding: known cause of repetition loops; regenerate at the production "
                              "temperature before suspecting kernels")
    assert looped["degenerate"] and looped["flagged"]
    assert not fine["degenerate"] and fine["warnings"] == []
    row = Transcript.objects.get(request_id="g-1")
    assert row.degenerate and row.flagged and row.severity > 0.5 and row.warnings == [GREEDY_WARNING]
    flag = Flag.objects.get()
    assert flag.transcript_id == row.id and flag.reason == "auto" and flag.status == "new" and flag.source == "auto"
    assert flag.details == row.reasons and any("loop" in str(reason) for reason in flag.details)
    # a replay does not flag twice
    post_json(router, greedy_loop)
    assert Flag.objects.count() == 1


def test_metrics_failure_never_loses_the_transcript(router, monkeypatch):
    from triage.services import metrics

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(metrics, "_analyzer", lambda: (broken, lambda name: True))
    response = post_json(router, transcript_payload("mf-1"))
    assert response.status_code == 201
    row = Transcript.objects.get()
    assert row.metrics == {"error": "metrics failed: RuntimeError: boom"} and row.warnings == [row.metrics["error"]]


@override_settings(INGEST_MAX_BYTES=2000)
def test_body_over_the_size_limit_is_413(router):
    payload = transcript_payload("big-1", response={"content": "x" * 3000, "finish_reason": "stop"})
    response = post_json(router, payload)
    assert response.status_code == 413
    assert "2000 byte limit" in response.json()["error"]["message"]
    assert Transcript.objects.count() == 0


@override_settings(INGEST_MAX_BATCH=3)
def test_batch_over_the_item_limit_is_413(router):
    response = post_json(router, {"transcripts": [transcript_payload() for _ in range(4)]})
    assert response.status_code == 413
    assert "limit of 3" in response.json()["error"]["message"]


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "", "application/json; charset=latin-1"])
def test_unsupported_content_type_is_415(router, content_type):
    response = router.generic("POST", "/api/v1/transcripts", json.dumps(transcript_payload()), content_type=content_type)
    assert response.status_code == 415
    assert "application/json" in response.json()["error"]["message"] or "UTF-8" in response.json()["error"]["message"]


def test_without_a_valid_key_it_is_401_json_not_a_login_redirect(db):
    from rest_framework.test import APIClient

    anonymous = APIClient()
    response = post_json(anonymous, transcript_payload())
    assert response.status_code == 401
    assert "Bearer" in response.json()["error"]["message"] and response["WWW-Authenticate"].startswith("Bearer")
    anonymous.credentials(HTTP_AUTHORIZATION="Bearer tt_not-a-real-key")
    assert post_json(anonymous, transcript_payload()).status_code == 401
    assert anonymous.get("/api/v1/transcripts").status_code == 401


def test_revoked_key_is_401(router):
    from triage.services.keys import api_key_revoke

    api_key_revoke(key=router.api_key)
    assert post_json(router, transcript_payload()).status_code == 401


def test_key_without_ingest_scope_is_403(db):
    reader = make_key_client(["read"])
    response = post_json(reader, transcript_payload())
    assert response.status_code == 403
    assert "lacks the 'ingest' scope" in response.json()["error"]["message"]


@override_settings(INGEST_RATE_LIMIT="3/min")
def test_rate_limit_per_key_is_429_with_retry_after(router, db):
    for _ in range(3):
        assert post_json(router, transcript_payload()).status_code == 201
    limited = post_json(router, transcript_payload())
    assert limited.status_code == 429
    assert 1 <= int(limited["Retry-After"]) <= 60
    other = make_key_client(["ingest"])  # another key has its own budget
    assert post_json(other, transcript_payload()).status_code == 201


def test_other_methods_on_the_collection_are_405(router):
    response = router.delete("/api/v1/transcripts")
    assert response.status_code == 405 and response["Allow"] == "GET, POST"
