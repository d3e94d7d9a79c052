"""Fixtures and payload builders shared by the API/ingestion tests (imported explicitly)."""

from __future__ import annotations

import copy
import itertools

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from triage.services.keys import api_key_create

_counter = itertools.count()


def transcript_payload(request_id: str | None = None, **overrides) -> dict:
    payload = {
        "request_id": request_id or f"req-{next(_counter)}",
        "model": "smollm2-135m-instruct",
        "created_at": "2025-01-31T12:00:00Z",
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Explain what a KV cache is, briefly."},
        ],
        "response": {
            "content": "A KV cache stores the attention keys and values of past tokens so that each "
                       "decode step only computes the new token's projections.",
            "finish_reason": "stop",
        },
        "sampling": {"temperature": 0.6, "top_p": 0.95, "top_k": 50, "min_p": 0.0, "max_tokens": 512, "seed": 7},
        "kernel": {"attention": "dense"},
        "usage": {"prompt_tokens": 24, "completion_tokens": 31, "total_tokens": 55},
        "timings": {"ttft_ms": 12.5, "latency_ms": 410.0},
        "route": {"prefill": "prefill-0", "decode": "decode-3"},
    }
    for key, value in overrides.items():
        payload[key] = value
    return copy.deepcopy(payload)


LOOP_RESPONSE = "<div>\n" + "</div>\n" * 400


@pytest.fixture(autouse=True)
def _clear_rate_limit_cache():
    cache.clear()
    yield


def make_key_client(scopes, name=None, source=None):
    key, raw = api_key_create(name=name or f"router-{next(_counter)}", scopes=scopes, source=source or "")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    client.api_key = key
    client.raw_key = raw
    return client


@pytest.fixture
def router(db):
    """A router key with every scope (source = its name)."""
    return make_key_client(["ingest", "read", "flag"], name="router-main")


@pytest.fixture
def ingest_only(db):
    return make_key_client(["ingest"], name="router-ingest-only")


def post_json(client, body, **extra):
    import json

    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return client.generic("POST", "/api/v1/transcripts", data, content_type="application/json", **extra)
