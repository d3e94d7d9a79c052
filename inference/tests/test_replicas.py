"""Several engine replicas behind one server: `--devices cpu --replicas 2` runs the same code path
as `--devices cuda:0,cuda:1` (one spawned process per replica). Routing is prefix-affine: every
choice of one conversation, under any kernel settings, lands on one replica while different
conversations spread over the replicas, and a conversation spills to the other replica only
when its own is over --affinity-threshold (4 here) busier; a replica killed with SIGKILL is
reported dead, its in-flight requests fail at once with a 503, and the server keeps serving
from the survivor (the dead one's conversations included). The routing policy itself is tested
without processes in test_routing.py.

This is the only test module that starts a two-replica server (two model loads).
"""

from __future__ import annotations

import os
import signal
import threading
import time

import httpx
import openai
import pytest

from inference.testing import spawn_server

pytestmark = pytest.mark.slow

STORY = [{"role": "user", "content": "Write a long, detailed story about a dragon who learns to bake bread."}]
HELLO = [{"role": "user", "content": "Say hello."}]
# Short, so that the stuck-replica test is quick; every request here makes progress within a second or two.
REQUEST_TIMEOUT_S = 10
# A conversation keeps its replica until that replica is more than this many sequences busier than the other.
AFFINITY_THRESHOLD = 4
DENSE = {"attention": "dense"}
SPARSE = {"attention": "sparse", "sparse_budget": 64}


@pytest.fixture(scope="module")
def server():
    with spawn_server("--devices", "cpu", "--replicas", "2", "--max-cache-tokens", "4096", "--threads-per-replica", "1",
                      "--request-timeout", str(REQUEST_TIMEOUT_S), "--affinity-threshold", str(AFFINITY_THRESHOLD)) as url:
        yield url


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=f"{server}/v1", api_key="unused", max_retries=0, timeout=120)


def health(server: str) -> httpx.Response:
    return httpx.get(f"{server}/health", timeout=10)


def wait_for(predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def chat_body(model: str, messages: list[dict], **overrides) -> dict:
    return {"model": model, "messages": messages, "max_tokens": 2, "temperature": 1.0, "seed": 3, **overrides}


def replicas_of(response: httpx.Response) -> list[int]:
    assert response.status_code == 200, response.text
    return [int(i) for i in response.headers["x-inference-replicas"].split(",")]


def test_one_conversation_under_several_kernel_settings_lands_on_one_replica(client, server):
    """What the triage worker sends: one request per kernel setting, concurrently, each with n
    samples of the same conversation. All of them go to one replica (which prefills the
    conversation once), whatever the load-balancing would have said."""
    model = client.models.list().data[0].id
    conversation = [{"role": "user", "content": "Name a colour."}]
    responses: dict[str, httpx.Response] = {}

    def arm(name: str, kernel: dict) -> None:
        responses[name] = httpx.post(f"{server}/v1/chat/completions", timeout=120,
                                     json=chat_body(model, conversation, n=2, kernel=kernel))

    threads = [threading.Thread(target=arm, args=item) for item in (("dense", DENSE), ("sparse", SPARSE))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    (replica,) = {i for r in responses.values() for i in replicas_of(r)}  # 4 sequences, one replica
    for name, response in responses.items():
        implementation = response.json()["kernel_implementation"]
        assert implementation["attention_backend"] == name and implementation["replicas"] == [replica, replica]
        assert implementation["device"] == "cpu" and implementation["dtype"] in ("bf16", "fp32")
    # The same conversation later (and its divergence job) still goes there.
    assert replicas_of(httpx.post(f"{server}/v1/chat/completions", json=chat_body(model, conversation),
                                  timeout=120)) == [replica]
    report = health(server).json()
    assert report["status"] == "ok" and report["alive"] == 2 and report["busy"] == 0
    assert report["routing"]["affinity_threshold"] == AFFINITY_THRESHOLD
    assert len({r["pid"] for r in report["replicas"]}) == 2 and os.getpid() not in {r["pid"] for r in report["replicas"]}


def test_different_conversations_under_load_go_to_different_replicas(client, server):
    model = client.models.list().data[0].id
    body = chat_body(model, [{"role": "user", "content": "Tell me about rivers."}], max_tokens=300, stream=True)
    with httpx.stream("POST", f"{server}/v1/chat/completions", json=body, timeout=60) as stream:
        (busy,) = replicas_of(stream)
        next(stream.iter_lines())  # admitted, decoding
        other = httpx.post(f"{server}/v1/chat/completions", timeout=120,
                           json=chat_body(model, [{"role": "user", "content": "Tell me about mountains."}], n=2))
        assert replicas_of(other) == [1 - busy] * 2
    wait_for(lambda: health(server).json()["busy"] == 0)


def test_a_conversation_spills_to_the_other_replica_when_its_own_is_over_the_threshold(client, server):
    model = client.models.list().data[0].id
    conversation = [{"role": "user", "content": "Describe a forest."}]
    # AFFINITY_THRESHOLD + 1 sequences of it: they stay together (the last sees a difference of 4, not over 4)...
    body = chat_body(model, conversation, n=AFFINITY_THRESHOLD + 1, max_tokens=300, stream=True)
    with httpx.stream("POST", f"{server}/v1/chat/completions", json=body, timeout=60) as stream:
        replicas = replicas_of(stream)
        (affine,) = set(replicas)
        assert len(replicas) == AFFINITY_THRESHOLD + 1
        next(stream.iter_lines())
        # ...and now that replica is 5 sequences busier than the idle one: the next arm goes there.
        spilled = httpx.post(f"{server}/v1/chat/completions", timeout=120,
                             json=chat_body(model, conversation, kernel=SPARSE))
        assert replicas_of(spilled) == [1 - affine]
    wait_for(lambda: health(server).json()["busy"] == 0)


def test_a_divergence_job_goes_to_its_conversations_replica(client, server):
    model = client.models.list().data[0].id
    conversation = [{"role": "user", "content": "Name a fruit."}]
    (replica,) = set(replicas_of(httpx.post(f"{server}/v1/chat/completions", timeout=120,
                                            json=chat_body(model, conversation))))
    before = [r["assigned"] for r in health(server).json()["replicas"]]
    response = httpx.post(f"{server}/v1/divergence", timeout=120, json={
        "messages": conversation, "continuation": "An apple.", "candidate": SPARSE, "top_k": 0})
    assert response.status_code == 200, response.text
    after = [r["assigned"] for r in health(server).json()["replicas"]]
    assert after[replica] == before[replica] + 1 and after[1 - replica] == before[1 - replica]


@pytest.mark.parametrize("words, max_tokens, param", [(4200, None, "messages"), (3000, 2000, "max_tokens")],
                         ids=["prompt-over-cache", "prompt-plus-max-tokens-over-cache"])
def test_sequence_larger_than_the_kv_cache_is_refused_up_front(client, server, words, max_tokens, param):
    """This server's replicas hold 4,096 KV tokens (context 8,192): a sequence that cannot fit is
    refused at admission with a 400 rather than dropped by the engine halfway through."""
    body = {"model": client.models.list().data[0].id, "messages": [{"role": "user", "content": "hello " * words}]}
    if max_tokens:
        body["max_tokens"] = max_tokens
    response = httpx.post(f"{server}/v1/chat/completions", json=body, timeout=30)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == param and "--max-cache-tokens" in error["message"]


def test_stuck_replica_times_out_its_request_instead_of_hanging_it(client, server):
    """A replica that is alive but makes no progress (SIGSTOP stands in for a hung GPU) fails its
    in-flight request with a 504 after --request-timeout seconds; once it runs again it aborts
    that request and keeps serving."""
    model = client.models.list().data[0].id
    stream = client.chat.completions.with_raw_response.create(
        model=model, messages=STORY, max_tokens=500, temperature=1.0, seed=1, stream=True)
    (stuck,) = map(int, stream.headers["x-inference-replicas"].split(","))
    replica = health(server).json()["replicas"][stuck]
    chunks = stream.parse()
    next(iter(chunks))
    os.kill(replica["pid"], signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(openai.APIError) as excinfo:
            for _ in chunks:
                pass
        elapsed = time.monotonic() - started
        assert "no progress" in excinfo.value.message and excinfo.value.code == "timeout"
        assert REQUEST_TIMEOUT_S - 1 < elapsed < REQUEST_TIMEOUT_S + 15
        assert health(server).json()["replicas"][stuck]["silent_s"] >= REQUEST_TIMEOUT_S - 1
    finally:
        os.kill(replica["pid"], signal.SIGCONT)
    wait_for(lambda: health(server).json()["replicas"][stuck]["aborted"] == replica["aborted"] + 1)
    report = health(server).json()
    assert report["busy"] == 0 and report["alive"] == 2


def test_killed_replica_fails_its_requests_and_the_others_keep_serving(client, server):
    model = client.models.list().data[0].id
    pids = {r["index"]: r["pid"] for r in health(server).json()["replicas"]}

    # 1. A streaming request is running on some replica; kill that replica mid-stream.
    stream = client.chat.completions.with_raw_response.create(
        model=model, messages=STORY, max_tokens=500, temperature=1.0, seed=1, stream=True)
    (victim,) = map(int, stream.headers["x-inference-replicas"].split(","))
    survivor = 1 - victim
    chunks = stream.parse()
    next(iter(chunks))  # admitted; generation under way
    os.kill(pids[victim], signal.SIGKILL)
    started = time.monotonic()
    with pytest.raises(openai.APIError) as excinfo:
        for _ in chunks:
            pass
    assert time.monotonic() - started < 15, "an in-flight request must fail fast, not hang"
    assert "died" in excinfo.value.message and f"replica {victim}" in excinfo.value.message

    # 2. /health reports it dead, and why.
    report = health(server).json()
    assert report["status"] == "degraded" and report["alive"] == 1 and report["dead"] == [victim]
    dead = report["replicas"][victim]
    assert not dead["alive"] and dead["state"] == "dead" and "SIGKILL" in dead["error"] and dead["busy"] == 0
    assert report["replicas"][survivor]["alive"]

    # 3. New requests go to the survivor and succeed, both choices of an n=2 included, and so does the
    #    conversation whose affine replica was the dead one.
    raw = client.chat.completions.with_raw_response.create(model=model, messages=HELLO, n=2, max_tokens=2, seed=5)
    assert raw.headers["x-inference-replicas"] == f"{survivor},{survivor}"
    assert all(c.message.content for c in raw.parse().choices)
    raw = client.chat.completions.with_raw_response.create(model=model, messages=STORY, max_tokens=2, seed=5)
    assert raw.headers["x-inference-replicas"] == f"{survivor}"

    # 4. A non-streaming request in flight on the last replica gets a 503 when it dies...
    outcome: dict = {}

    def slow_request() -> None:
        try:
            client.chat.completions.create(model=model, messages=STORY, max_tokens=500, temperature=1.0, seed=2)
        except openai.APIStatusError as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=slow_request)
    thread.start()
    wait_for(lambda: health(server).json()["busy"] == 1)
    os.kill(pids[survivor], signal.SIGKILL)
    thread.join(15)
    assert not thread.is_alive(), "the in-flight request hung after its replica died"
    error = outcome["error"]
    assert error.status_code == 503 and error.body["code"] == "replica_died"
    assert error.body["type"] == "service_unavailable"

    # 5. ...and with no replica left, requests fail fast with a 503 and /health says so.
    started = time.monotonic()
    with pytest.raises(openai.APIStatusError) as excinfo:
        client.chat.completions.create(model=model, messages=HELLO, max_tokens=2)
    assert time.monotonic() - started < 5
    assert excinfo.value.status_code == 503 and excinfo.value.body["code"] == "no_replica_available"
    response = health(server)
    assert response.status_code == 503 and response.json()["status"] == "unavailable"
    divergence = httpx.post(f"{server}/v1/divergence", json={"prompt": "a", "continuation": "b", "candidate": {}}, timeout=10)
    assert divergence.status_code == 503
