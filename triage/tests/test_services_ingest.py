"""The ingestion and flag services (triage.services.ingest, .flags), called directly (as load_demo does)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from triage.services import flags, ingest
from triage.models import Flag, Transcript
from triage.tests.ingest_fixtures import LOOP_RESPONSE, transcript_payload

pytestmark = pytest.mark.django_db


def test_batch_results_have_the_documented_shape():
    bad = transcript_payload("svc-bad")
    bad["response"] = "a string, not an object"
    results = ingest.transcript_ingest_batch(source="demo", payloads=[transcript_payload("svc-1"), bad, None])
    assert [(r.status, r.request_id, r.index) for r in results] == [
        ("created", "svc-1", 0), ("invalid", "svc-bad", 1), ("invalid", None, 2)]
    assert results[0].id == Transcript.objects.get(request_id="svc-1").id and results[0].errors == {}
    assert results[1].id is None and list(results[1].errors) == ["response"]
    again = ingest.transcript_ingest(source="demo", payload=transcript_payload("svc-1"))
    assert (again.status, again.id) == ("duplicate", results[0].id)


def test_a_batch_costs_a_fixed_number_of_queries(django_assert_max_num_queries):
    payloads = [transcript_payload(f"q-{i}") for i in range(100)]
    payloads[7]["response"] = {"content": LOOP_RESPONSE, "finish_reason": "length"}
    # existing ids, savepoint, insert, auto flags, release
    with django_assert_max_num_queries(6):
        results = ingest.transcript_ingest_batch(source="demo", payloads=payloads)
    assert Counter_of(results) == {"created": 100}
    with django_assert_max_num_queries(2):  # a full replay: one read
        assert Counter_of(ingest.transcript_ingest_batch(source="demo", payloads=payloads)) == {"duplicate": 100}


def Counter_of(results):
    counts = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts


def test_a_row_created_by_a_concurrent_request_after_the_check_is_a_replay_or_conflict(monkeypatch):
    """The race the unique constraint settles: another request inserts between our read of
    the existing ids and our insert (ON CONFLICT DO NOTHING, then re-read)."""
    real_store = ingest._store

    def racing_store(*, source, rows):
        Transcript.objects.create(source=source, request_id="race-same", content_hash=rows_by_id(rows)["race-same"].content_hash)
        Transcript.objects.create(source=source, request_id="race-diff", content_hash="something else")
        return real_store(source=source, rows=rows)

    monkeypatch.setattr(ingest, "_store", racing_store)
    results = ingest.transcript_ingest_batch(
        source="demo", payloads=[transcript_payload("race-same"), transcript_payload("race-diff"), transcript_payload("race-new")])
    assert [r.status for r in results] == ["duplicate", "conflict", "created"]
    assert Transcript.objects.filter(source="demo").count() == 3


def rows_by_id(rows):
    return {row.request_id: row for row in rows}


def test_flag_services():
    transcript = ingest.transcript_ingest(source="demo", payload=transcript_payload("fl-1"))
    row = Transcript.objects.get(pk=transcript.id)
    user = get_user_model().objects.create_user("ops-user")
    flag = flags.flag_create(transcript=row, reason="repetition", note="loops at the end", user=user)
    assert flag.status == "new" and flag.user == user and Transcript.objects.get(pk=row.pk).flagged
    assert flags.flag_update_status(flag=flag, status="diagnosed").status == "diagnosed"
    with pytest.raises(flags.FlagTransitionError, match="cannot go back to 'investigating'"):
        flags.flag_update_status(flag=flag, status="investigating")
    with pytest.raises(ValueError):
        flags.flag_create(transcript=row, reason="bogus", note="")
    assert Flag.objects.get(pk=flag.pk).status == "diagnosed"


def test_ingest_result_dict_matches_the_documented_schema():
    from triage.serializers import IngestResultOutput

    result = ingest.IngestResult("invalid", None, errors={"body": ["x"]})
    assert set(result.to_dict()) == set(IngestResultOutput().fields)
    serializer = IngestResultOutput(data=result.to_dict())
    assert serializer.is_valid(), serializer.errors


def test_kernel_settings_without_a_profile_name_link_the_profile_with_those_settings():
    """A router that sends its kernel settings but not the profile's name: the transcript joins the
    profile whose settings are the same (defaults filled in), so it counts in the per-profile views."""
    from triage.models import KernelProfile

    sparse = KernelProfile.objects.create(name="sparse-x", settings={"attention": "sparse", "sparse_budget": 256})
    KernelProfile.objects.create(name="dense-x", settings={"attention": "dense"})
    same = transcript_payload("kp-1", kernel={"attention": "sparse", "sparse_budget": 256, "page_size": 16})
    other = transcript_payload("kp-2", kernel={"attention": "sparse", "sparse_budget": 128})
    named = transcript_payload("kp-3", kernel={"attention": "sparse", "sparse_budget": 256}, kernel_profile="dense-x")
    ingest.transcript_ingest_batch(source="demo", payloads=[same, other, named])
    rows = {t.request_id: t for t in Transcript.objects.filter(request_id__startswith="kp-")}
    assert rows["kp-1"].kernel_profile == sparse
    assert rows["kp-2"].kernel_profile is None          # no profile has those settings
    assert rows["kp-3"].kernel_profile.name == "dense-x"  # a name the router sends wins
