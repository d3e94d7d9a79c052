"""Property-based fuzzing of POST /api/v1/transcripts: whatever arrives, never a 500, and
every refusal is a JSON error that names what was wrong."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from triage.tests.ingest_fixtures import (  # noqa: F401 - fixtures
    _clear_rate_limit_cache,
    post_json,
    router,
    transcript_payload,
)

pytestmark = pytest.mark.django_db

FUZZ = hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                         HealthCheck.too_slow])
DOCUMENTED = {200, 201, 207, 400, 409, 413, 415}

scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30))
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
FIELDS = ["request_id", "model", "created_at", "messages", "response", "sampling", "kernel", "kernel_profile",
          "usage", "timings", "route", "logprobs", "metadata"]


def check(response):
    assert response.status_code in DOCUMENTED, (response.status_code, response.content[:500])
    body = response.json()
    assert "could not be validated" not in response.content.decode("utf-8", "replace")  # a validator crash
    if response.status_code >= 400:
        assert body["error"]["message"]
    if response.status_code == 207:
        for result in body["results"]:
            assert result["status"] in ("created", "duplicate", "conflict", "invalid")
            assert (result["status"] == "invalid") == bool(result["errors"]) or result["status"] == "conflict"


@given(field=st.sampled_from(FIELDS), value=json_values, nested=st.booleans(), seq=st.integers(0, 10**9))
@FUZZ
def test_any_field_replaced_by_any_json(router, field, value, nested, seq):
    payload = transcript_payload(f"fz-{seq}")
    if nested and isinstance(payload.get(field), dict) and payload[field]:
        payload[field][next(iter(payload[field]))] = value
    elif nested and field == "messages":
        payload["messages"][0]["content"] = value
    else:
        payload[field] = value
    check(post_json(router, payload))


@given(body=json_values)
@FUZZ
def test_any_json_document(router, body):
    check(post_json(router, body))


@given(items=st.lists(json_values | st.builds(lambda i: transcript_payload(f"fzb-{i}"), st.integers(0, 50)), max_size=6))
@FUZZ
def test_any_batch(router, items):
    check(post_json(router, {"transcripts": items}))


@given(raw=st.binary(max_size=200) | st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
       content_type=st.sampled_from(["application/json", "application/x-ndjson", "text/plain", "application/json; charset=utf-16"]))
@FUZZ
def test_any_bytes_any_content_type(router, raw, content_type):
    check(router.generic("POST", "/api/v1/transcripts", raw, content_type=content_type))


@given(text=st.text(max_size=60), position=st.integers(0, 2000))
@FUZZ
def test_strings_spliced_into_valid_json_text(router, text, position):
    """Splice arbitrary text (escapes, quotes, surrogates as \\u escapes) into a valid body."""
    body = json.dumps(transcript_payload("splice"))
    position %= len(body)
    check(post_json(router, body[:position] + json.dumps(text)[1:-1] + body[position:]))
