"""8 concurrent clients post the same 2,000 transcripts in different orders, with retries,
against a live server on PostgreSQL: exactly 2,000 rows, each created exactly once."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import httpx
import pytest

from triage.models import Flag, Transcript
from triage.services.keys import api_key_create
from triage.tests.ingest_fixtures import LOOP_RESPONSE, transcript_payload

CLIENTS = 8
TRANSCRIPTS = 2000
BATCH = 50
SINGLES = 100


def _corpus() -> list[dict]:
    items = []
    for i in range(TRANSCRIPTS):
        payload = transcript_payload(f"conc-{i:05d}")
        payload["response"]["content"] = f"Answer number {i}: the capital of France is Paris."
        if i % 100 == 0:
            payload["response"] = {"content": LOOP_RESPONSE, "finish_reason": "length"}
        items.append(payload)
    return items


def _post_with_retries(client: httpx.Client, body: dict, attempts: int = 8) -> httpx.Response:
    for attempt in range(attempts):
        try:
            response = client.post("/api/v1/transcripts", json=body)
        except httpx.TransportError:
            time.sleep(0.1 * (attempt + 1))
            continue
        if response.status_code == 429:
            time.sleep(float(response.headers.get("Retry-After", "1")))
            continue
        return response
    raise AssertionError("no answer after retries")


@pytest.mark.services
@pytest.mark.slow
def test_concurrent_clients_never_duplicate_or_lose(postgres_transactional_db, live_server):
    _, raw_key = api_key_create(name="router-concurrency", scopes=["ingest"])
    corpus = _corpus()
    created, statuses, failures = Counter(), Counter(), []
    lock = threading.Lock()
    start = threading.Barrier(CLIENTS)

    def client_run(seed: int) -> None:
        rng = random.Random(seed)
        order = corpus[:]
        rng.shuffle(order)
        # The first SINGLES go one by one (the single-post path races too), the rest in batches.
        singles, rest = order[:SINGLES], order[SINGLES:]
        batches = [rest[i : i + BATCH] for i in range(0, len(rest), BATCH)]
        # retries: a router whose answer got lost re-sends the same batch
        batches += rng.sample(batches, 4)
        headers = {"Authorization": f"Bearer {raw_key}"}
        with httpx.Client(base_url=live_server.url, headers=headers, timeout=60) as client:
            start.wait()
            for payload in singles:
                response = _post_with_retries(client, payload)
                with lock:
                    if response.status_code not in (200, 201):
                        failures.append((response.status_code, response.text[:300]))
                        continue
                    result = response.json()
                    statuses[result["status"]] += 1
                    if result["status"] == "created":
                        created[result["request_id"]] += 1
            for batch in batches:
                response = _post_with_retries(client, {"transcripts": batch})
                with lock:
                    if response.status_code != 207:
                        failures.append((response.status_code, response.text[:300]))
                        continue
                    for result in response.json()["results"]:
                        statuses[result["status"]] += 1
                        if result["status"] == "created":
                            created[result["request_id"]] += 1
                        elif result["status"] != "duplicate":
                            failures.append(result)

    threads = [threading.Thread(target=client_run, args=(seed,)) for seed in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    assert not any(thread.is_alive() for thread in threads), "a client hung"
    assert failures == []
    assert Transcript.objects.filter(source="router-concurrency").count() == TRANSCRIPTS
    assert len(created) == TRANSCRIPTS and set(created.values()) == {1}  # each created exactly once
    assert statuses["created"] + statuses["duplicate"] == CLIENTS * (TRANSCRIPTS + 4 * BATCH)
    assert Flag.objects.filter(reason="auto").count() == TRANSCRIPTS // 100  # one auto flag each, no doubles


@pytest.mark.services
def test_a_repeated_id_whose_first_copy_lost_the_insert_race_is_a_replay(postgres_transactional_db, monkeypatch):
    """One batch holds request_id X twice; another client inserts X between this batch's replay
    lookup and its insert. The first copy loses the race (a replay of the other client's row), and
    the second copy must be judged against that row too — not a false "was being deleted" conflict."""
    from triage.services import ingest

    payload = transcript_payload("race-x")
    real_store = ingest._store_with_retries
    raced = []

    def other_client_first(*, source, rows):
        if raced:  # (the other client's own insert, and any later one, go straight through)
            return real_store(source=source, rows=rows)
        raced.append(True)

        def insert():  # another client, on its own connection, wins the insert
            from django.db import connection
            try:
                ingest.transcript_ingest(source=source, payload=transcript_payload("race-x"))
            finally:
                connection.close()
        thread = threading.Thread(target=insert)
        thread.start()
        thread.join()
        return real_store(source=source, rows=rows)

    monkeypatch.setattr(ingest, "_store_with_retries", other_client_first)
    first, second = ingest.transcript_ingest_batch(source="router-a", payloads=[payload, dict(payload)])
    assert Transcript.objects.filter(source="router-a", request_id="race-x").count() == 1
    row = Transcript.objects.get(source="router-a", request_id="race-x")
    assert (first.status, first.id) == (ingest.DUPLICATE, row.pk), first
    assert (second.status, second.id) == (ingest.DUPLICATE, row.pk), second
