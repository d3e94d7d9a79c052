"""GET list/detail/export, scopes, flags (keys and browser sessions with CSRF), schema."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone
from rest_framework.test import APIClient

from triage.models import Flag, KernelProfile, Transcript
from triage.roles import OPS, ensure_groups
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


@pytest.fixture
def corpus(router):
    KernelProfile.objects.create(name="sparse", settings={"attention": "sparse"})
    items = [
        transcript_payload("c-healthy", model="m-a"),
        transcript_payload("c-loop", model="m-a", sampling={"temperature": 0},
                           response={"content": LOOP_RESPONSE, "finish_reason": "length"}),
        transcript_payload("c-sparse", model="m-b", kernel_profile="sparse", sampling={"temperature": 1.0},
                           response={"content": "Paris is the capital of France.", "finish_reason": "stop"}),
    ]
    del items[2]["kernel"]
    response = post_json(router, {"transcripts": items})
    assert [r["status"] for r in response.json()["results"]] == ["created"] * 3
    return {r["request_id"]: r["id"] for r in response.json()["results"]}


def _ids(response):
    assert response.status_code == 200, response.content
    return [item["request_id"] for item in response.json()["results"]]


def test_list_filters(router, corpus):
    assert _ids(router.get("/api/v1/transcripts")) == ["c-sparse", "c-loop", "c-healthy"]  # newest first (id breaks ties)
    assert _ids(router.get("/api/v1/transcripts?degenerate=true")) == ["c-loop"]
    assert _ids(router.get("/api/v1/transcripts?flagged=false")) == ["c-sparse", "c-healthy"]
    assert _ids(router.get("/api/v1/transcripts?flag_status=new")) == ["c-loop"]
    assert _ids(router.get("/api/v1/transcripts?flag_status=resolved")) == []
    assert _ids(router.get("/api/v1/transcripts?model=m-b")) == ["c-sparse"]
    assert _ids(router.get("/api/v1/transcripts?kernel_profile=sparse")) == ["c-sparse"]
    assert _ids(router.get("/api/v1/transcripts?temperature_min=0.5&temperature_max=0.7")) == ["c-healthy"]
    assert _ids(router.get("/api/v1/transcripts?temperature_max=0")) == ["c-loop"]
    assert _ids(router.get("/api/v1/transcripts?q=capital of FRANCE")) == ["c-sparse"]
    future = (timezone.now() + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    assert _ids(router.get("/api/v1/transcripts", {"received_after": future})) == []
    assert len(_ids(router.get("/api/v1/transcripts", {"received_before": future}))) == 3
    item = router.get("/api/v1/transcripts?model=m-b").json()["results"][0]
    assert item["kernel_profile"] == "sparse" and item["response_preview"] == "Paris is the capital of France."
    assert "messages" not in item


def test_bad_filters_are_400_with_the_field(router, corpus):
    response = router.get("/api/v1/transcripts?temperature_min=warm&flag_status=open")
    assert response.status_code == 400
    assert set(response.json()["error"]["fields"]) == {"temperature_min", "flag_status"}
    assert router.get("/api/v1/transcripts?cursor=garbage").status_code == 400


def test_cursor_pagination_walks_everything_once(router):
    post_json(router, {"transcripts": [transcript_payload(f"pg-{i:02d}") for i in range(25)]})
    seen, url, pages = [], "/api/v1/transcripts?limit=10", 0
    while url:
        page = router.get(url).json()
        seen += [item["request_id"] for item in page["results"]]
        url, pages = page["next"], pages + 1
    assert pages == 3 and sorted(seen) == [f"pg-{i:02d}" for i in range(25)] and len(set(seen)) == 25


def test_list_does_not_query_per_row(router, corpus, django_assert_max_num_queries):
    post_json(router, {"transcripts": [transcript_payload(f"nq-{i}", kernel_profile="sparse") for i in range(20)]})
    with django_assert_max_num_queries(4):  # key lookup, (last_used), page
        assert router.get("/api/v1/transcripts?limit=100").status_code == 200


def test_detail_returns_everything_with_flags(router, corpus):
    response = router.get(f"/api/v1/transcripts/{corpus['c-loop']}")
    assert response.status_code == 200
    body = response.json()
    assert body["messages"] == transcript_payload()["messages"]
    assert body["response"] == LOOP_RESPONSE and body["finish_reason"] == "length"
    assert body["degenerate"] is True and body["flags"][0]["reason"] == "auto"
    assert body["metrics"] and body["content_hash"]
    missing = router.get("/api/v1/transcripts/999999")
    assert missing.status_code == 404 and missing.json()["error"]["status"] == 404


def test_ingest_only_key_cannot_read(ingest_only, corpus):
    for url in ("/api/v1/transcripts", f"/api/v1/transcripts/{corpus['c-loop']}", "/api/v1/transcripts/export"):
        response = ingest_only.get(url)
        assert response.status_code == 403, url
        assert "lacks the 'read' scope" in response.json()["error"]["message"]


def test_export_jsonl_and_csv(router, corpus):
    response = router.get("/api/v1/transcripts/export?format=jsonl&degenerate=false")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/x-ndjson")
    records = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert [r["request_id"] for r in records] == ["c-sparse", "c-healthy"]
    assert records[1]["messages"] == transcript_payload()["messages"]

    response = router.get("/api/v1/transcripts/export", {"format": "csv"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["request_id"] for r in rows] == ["c-sparse", "c-loop", "c-healthy"]
    assert rows[1]["degenerate"] == "True" and "tail loop" in rows[1]["reasons"]
    assert router.get("/api/v1/transcripts/export?format=xml").status_code == 400


def test_csv_export_neutralizes_spreadsheet_formulas(router):
    post_json(router, transcript_payload("f-1", response={"content": "=HYPERLINK(\"http://x\")", "finish_reason": "stop"}))
    rows = list(csv.DictReader(io.StringIO(b"".join(router.get("/api/v1/transcripts/export?format=csv").streaming_content).decode())))
    assert rows[0]["response"] == "'=HYPERLINK(\"http://x\")"


def test_key_with_flag_scope_flags_and_moves_the_status_forward(router, corpus):
    tid = corpus["c-healthy"]
    response = router.post(f"/api/v1/transcripts/{tid}/flags", {"reason": "confabulation", "note": "invented a user turn"}, format="json")
    assert response.status_code == 201, response.content
    flag = response.json()
    assert flag["reason"] == "confabulation" and flag["status"] == "new" and flag["source"] == "api-key:router-main"
    assert Transcript.objects.get(pk=tid).flagged is True
    url = f"/api/v1/transcripts/{tid}/flags/{flag['id']}"
    for new_status in ("investigating", "diagnosed", "resolved"):
        moved = router.patch(url, {"status": new_status}, format="json")
        assert moved.status_code == 200 and moved.json()["status"] == new_status
    back = router.patch(url, {"status": "new"}, format="json")
    assert back.status_code == 409 and "cannot go back" in back.json()["error"]["message"]
    assert router.patch(url, {"status": "closed"}, format="json").json()["error"]["fields"]["status"][0].startswith('"closed" is not a flag status')
    assert router.patch(f"/api/v1/transcripts/{corpus['c-loop']}/flags/{flag['id']}", {"status": "resolved"}, format="json").status_code == 404


def test_flag_input_errors(router, corpus):
    url = f"/api/v1/transcripts/{corpus['c-healthy']}/flags"
    response = router.post(url, {"reason": "auto"}, format="json")  # auto is the system's, not a choice for ops
    assert response.status_code == 400 and "repetition, incoherent, confabulation, format, truncated, other" in response.json()["error"]["fields"]["reason"][0]
    assert router.post(url, "[1]", content_type="application/json").status_code == 400
    assert router.post(url, "{bad", content_type="application/json").status_code == 400
    assert router.post("/api/v1/transcripts/999999/flags", {"reason": "other"}, format="json").status_code == 404


def test_flagging_needs_the_flag_scope(corpus, db):
    reader = make_key_client(["read", "ingest"])
    response = reader.post(f"/api/v1/transcripts/{corpus['c-healthy']}/flags", {"reason": "other"}, format="json")
    assert response.status_code == 403 and "lacks the 'flag' scope" in response.json()["error"]["message"]


def test_ops_user_flags_through_the_session_with_csrf(corpus, db):
    ensure_groups()
    user = get_user_model().objects.create_user("olga", password="pw-olga-123")
    user.groups.add(Group.objects.get(name=OPS))
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(user)
    url = f"/api/v1/transcripts/{corpus['c-healthy']}/flags"
    refused = browser.post(url, {"reason": "format"}, format="json")
    assert refused.status_code == 403 and "CSRF" in refused.json()["error"]["message"]
    page = browser.get("/api/v1/transcripts")  # reading is fine for any logged-in user
    assert page.status_code == 200
    token = browser.get("/accounts/login/").cookies["csrftoken"].value
    created = browser.post(url, {"reason": "format", "note": "broken table"}, format="json", HTTP_X_CSRFTOKEN=token)
    assert created.status_code == 201, created.content
    assert created.json()["user"] == "olga" and Flag.objects.get(pk=created.json()["id"]).user == user


def test_logged_in_user_without_ops_role_cannot_flag(corpus, db):
    user = get_user_model().objects.create_user("visitor", password="pw-visitor-123")
    browser = APIClient()
    browser.force_login(user)
    response = browser.post(f"/api/v1/transcripts/{corpus['c-healthy']}/flags", {"reason": "other"}, format="json")
    assert response.status_code == 403


def test_openapi_schema_lists_the_operations(router):
    response = router.get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = json.loads(response.content)
    paths = schema["paths"]
    assert set(paths["/api/v1/transcripts"]) >= {"get", "post"}
    assert "application/x-ndjson" in paths["/api/v1/transcripts"]["post"]["requestBody"]["content"]
    assert "patch" in paths["/api/v1/transcripts/{transcript_id}/flags/{flag_id}"]
    assert "/api/v1/transcripts/export" in paths
    assert APIClient().get("/api/schema/").status_code == 401


def test_docs_page_needs_a_login(db):
    assert APIClient().get("/api/docs/").status_code == 302
    user = get_user_model().objects.create_user("reader", password="pw-reader-123")
    browser = APIClient()
    browser.force_login(user)
    page = browser.get("/api/docs/")
    assert page.status_code == 200
    if importlib.util.find_spec("drf_spectacular_sidecar"):  # served locally: works offline
        assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in page.content.decode()
