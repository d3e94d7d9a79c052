"""Hostile content is stored byte-exact and comes back exactly, never as markup."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from hypothesis import given, settings as hsettings, strategies as st
from rest_framework.test import APIClient

from triage import content_codec
from triage.models import Transcript
from triage.tests.ingest_fixtures import (  # noqa: F401 - fixtures
    _clear_rate_limit_cache,
    post_json,
    router,
    transcript_payload,
)

SCRIPT = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'
HOSTILE = {
    "script": SCRIPT + " and '\"quotes\"' & ampersands",
    "div_flood": "</div>" * 50_000,
    "nul_bytes": "before\x00middle\x00\x00after \u2400 literal escape char \u24000 and \u2400\u2400",
    "megabyte_line": "A" * (1024 * 1024),
    "rtl_override": "user\u202egnp.exe\u202c \u200f\u200e\u2066isolate\u2069 \ufeffbom \U0001F600",
}


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_response_round_trips_byte_exact(router, name):
    text = HOSTILE[name]
    payload = transcript_payload(f"hostile-{name}", response={"content": text, "finish_reason": "stop"})
    payload["messages"][1]["content"] = text if len(text) < 100_000 else text[:1000]
    payload["metadata"] = {f"key-{name}\x00" if name == "nul_bytes" else f"key-{name}": text[:200]}
    body = json.dumps(payload).encode()
    created = post_json(router, body)
    assert created.status_code == 201, created.content[:500]
    assert post_json(router, body).status_code == 200  # a replay of hostile content is still a replay

    detail = router.get(f"/api/v1/transcripts/{created.json()['id']}")
    assert detail["Content-Type"] == "application/json"
    assert detail["X-Content-Type-Options"] == "nosniff"
    got = json.loads(detail.content)  # parse the bytes: the API's own encoding, not the test client's
    assert got["response"] == text
    assert got["messages"] == payload["messages"]
    assert got["metadata"] == payload["metadata"]
    if name == "div_flood":
        assert got["degenerate"] and got["flagged"]  # metrics ran on the real text

    exported = b"".join(router.get("/api/v1/transcripts/export?format=jsonl").streaming_content)
    assert json.loads(exported.decode("utf-8").splitlines()[0])["response"] == text


@pytest.mark.django_db
def test_nul_content_is_escaped_in_the_database_and_plain_content_is_not(router):
    post_json(router, transcript_payload("plain", response={"content": "no nul \u2400 here", "finish_reason": "stop"}))
    post_json(router, transcript_payload("nul", response={"content": "a\x00b", "finish_reason": "stop"}))
    plain, nul = Transcript.objects.get(request_id="plain"), Transcript.objects.get(request_id="nul")
    assert plain.content_encoding == "" and plain.response == "no nul \u2400 here"
    assert nul.content_encoding == content_codec.NUL_ESCAPED and nul.response == "a\u24000b"
    previews = {item["request_id"]: item["response_preview"] for item in router.get("/api/v1/transcripts").json()["results"]}
    assert previews == {"plain": "no nul \u2400 here", "nul": "a\x00b"}
    with connection.cursor() as cursor:  # what the database really holds has no NUL
        cursor.execute("SELECT response FROM triage_transcript WHERE request_id = %s", ["nul"])
        assert "\x00" not in cursor.fetchone()[0]


@pytest.mark.django_db
def test_html_views_of_the_api_escape_content(router):
    created = post_json(router, transcript_payload("html", response={"content": SCRIPT, "finish_reason": "stop"}))
    user = get_user_model().objects.create_user("eve", password="pw-eve-12345")
    browser = APIClient()
    browser.force_login(user)
    page = browser.get(f"/api/v1/transcripts/{created.json()['id']}", HTTP_ACCEPT="text/html")
    assert page["Content-Type"].startswith("text/html")
    html = page.content.decode()
    assert "<script>alert" not in html and "onerror=alert(1)>" not in html
    assert "&lt;script&gt;alert(" in html and "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in html


@given(st.text(alphabet=st.sampled_from(["\x00", "\u2400", "0", "a", "\u202e", "é"]), max_size=40) | st.text(max_size=40))
@hsettings(max_examples=300, deadline=None)
def test_content_codec_round_trip(text):
    escaped = content_codec.escape({text: [text, {"k": text}]})
    assert "\x00" not in json.dumps(escaped, ensure_ascii=False).replace("\\u0000", "")  # sanity
    assert "\x00" not in content_codec.escape_str(text)
    assert content_codec.unescape(escaped) == {text: [text, {"k": text}]}
