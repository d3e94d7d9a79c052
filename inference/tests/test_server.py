"""The OpenAI-compatible server, end to end: a real `python -m inference serve` subprocess with
the real SmolLM2 model, driven by the official `openai` client (and httpx for raw bodies).

One server process serves the whole module (loading the model costs seconds); generations stay
short. The replica-kill scenario lives in test_replicas.py with its own two-replica server.
"""

from __future__ import annotations

import json
import time

import httpx
import openai
import pytest

from inference.testing import spawn_server

pytestmark = pytest.mark.slow

FRANCE = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def server():
    # fp32, for the tight logprob checks below (a decode logprob against its teacher-forced
    # re-score: ~2e-5 apart in fp32). Seed pairing across batch compositions holds in bf16 too
    # (test_engine.test_same_seed_same_text_in_any_batch_composition pins both dtypes).
    with spawn_server("--devices", "cpu", "--dtype", "fp32", "--max-n", "8", "--threads-per-replica", "1",
                      "--max-cache-tokens", "8192", "--request-timeout", "120") as url:
        yield url


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=f"{server}/v1", api_key="unused", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def model(client):
    return client.models.list().data[0].id


def health(server: str) -> dict:
    return httpx.get(f"{server}/health", timeout=10).json()


def test_models_list_names_the_loaded_model(client, server):
    models = client.models.list().data
    assert len(models) == 1
    assert models[0].id == health(server)["model"]
    assert models[0].id.startswith("SmolLM2-135M-Instruct")
    assert models[0].model_extra["context_length"] == 8192
    assert models[0].model_extra["dtype"] == "fp32"


def test_chat_completion_answers_and_reports_usage(client, model):
    response = client.chat.completions.create(model=model, messages=FRANCE, temperature=0, max_tokens=12)
    choice = response.choices[0]
    assert "Paris" in choice.message.content
    assert choice.message.role == "assistant"
    assert choice.finish_reason in ("stop", "length")
    assert response.object == "chat.completion"
    assert response.usage.prompt_tokens > 10
    assert 1 <= response.usage.completion_tokens <= 12
    assert response.usage.total_tokens == response.usage.prompt_tokens + response.usage.completion_tokens
    assert response.model_extra["kernel"]["attention"] == "dense"  # the settings used, defaults filled in
    implementation = response.model_extra["kernel_implementation"]  # what the replica ran them as
    assert implementation["attention_backend"] == "dense" and implementation["attention"].startswith("DenseAttention(")
    assert implementation["device"] == "cpu" and implementation["dtype"] == "fp32"
    assert implementation["replicas"] == [0] and "by_replica" not in implementation


def test_stop_string_ends_the_answer_before_it(client, model):
    response = client.chat.completions.create(model=model, messages=FRANCE, temperature=0, max_tokens=12,
                                              stop=[" Paris", "never"])
    assert response.choices[0].finish_reason == "stop"
    assert response.choices[0].message.content == "The capital of France is"


def test_truncation_parameters_reach_the_sampler(client, model):
    """At T=1, top_k=1, a tiny top_p and min_p=1 each leave only the most likely token: every
    seed must then reproduce the greedy answer."""
    greedy = client.chat.completions.create(model=model, messages=FRANCE, temperature=0, max_tokens=4)
    expected = greedy.choices[0].message.content
    for extra in ({"top_p": 1e-6}, {"extra_body": {"top_k": 1}}, {"extra_body": {"min_p": 1.0}}):
        response = client.chat.completions.create(model=model, messages=FRANCE, temperature=1.0, max_tokens=4,
                                                  n=2, seed=11, **extra)
        assert [c.message.content for c in response.choices] == [expected, expected], extra


def test_stream_yields_the_same_text_as_non_stream(client, model, server):
    whole = client.chat.completions.create(model=model, messages=FRANCE, temperature=0, max_tokens=6)
    chunks = list(client.chat.completions.create(model=model, messages=FRANCE, temperature=0, max_tokens=6,
                                                 stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == [whole.choices[0].finish_reason]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens

    # The wire format itself: server-sent events, every one JSON, ending with [DONE].
    body = {"model": model, "messages": FRANCE, "temperature": 0, "max_tokens": 1, "stream": True}
    with httpx.stream("POST", f"{server}/v1/chat/completions", json=body, timeout=60) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [line for line in response.iter_lines() if line]
    assert all(line.startswith("data: ") for line in events)
    assert events[-1] == "data: [DONE]"
    assert all(json.loads(line[6:])["object"] == "chat.completion.chunk" for line in events[:-1])


def test_n_samples_use_seed_plus_index(client, model):
    """Choice i of a request with seed s is the same sample as choice 0 of seed s + i, whatever else
    is in the batch: this is what lets the triage app pair samples across kernel settings."""
    params = dict(model=model, messages=FRANCE, temperature=1.0, max_tokens=4)
    three = client.chat.completions.create(n=3, seed=7, **params)
    assert [c.index for c in three.choices] == [0, 1, 2]
    assert [c.model_extra["seed"] for c in three.choices] == [7, 8, 9]
    texts = [c.message.content for c in three.choices]
    assert len(set(texts)) > 1, "different seeds at T=1 gave identical samples"
    assert 3 <= three.usage.completion_tokens <= 12
    two = client.chat.completions.create(n=2, seed=8, **params)
    assert [c.message.content for c in two.choices] == texts[1:]


def test_logprobs_and_top_logprobs_have_openai_shape(client, model):
    response = client.chat.completions.create(model=model, messages=FRANCE, temperature=0, max_tokens=3,
                                              logprobs=True, top_logprobs=3)
    entries = response.choices[0].logprobs.content
    assert len(entries) == response.usage.completion_tokens
    assert "".join(e.token for e in entries) == response.choices[0].message.content
    for entry in entries:
        assert entry.logprob <= 0
        assert bytes(entry.bytes) == entry.token.encode()
        assert len(entry.top_logprobs) == 3
        top = [t.logprob for t in entry.top_logprobs]
        assert top == sorted(top, reverse=True)
        assert entry.top_logprobs[0].token == entry.token  # greedy picks the top-1 token
        assert entry.top_logprobs[0].logprob == pytest.approx(entry.logprob, abs=1e-5)
    plain = client.chat.completions.create(model=model, messages=FRANCE, temperature=0, max_tokens=1)
    assert plain.choices[0].logprobs is None


def test_kernel_field_is_accepted_and_validated(client, model):
    response = client.chat.completions.create(
        model=model, messages=FRANCE, temperature=0, max_tokens=2,
        extra_body={"kernel": {"attention": "dense", "page_size": 32}})
    assert response.model_extra["kernel"]["page_size"] == 32
    assert response.choices[0].message.content

    with pytest.raises(openai.BadRequestError) as excinfo:
        client.chat.completions.create(model=model, messages=FRANCE, max_tokens=4,
                                       extra_body={"kernel": {"attention": "dense", "page_size": 3}})
    error = excinfo.value.body
    assert excinfo.value.status_code == 400
    assert error["param"] == "kernel.page_size"
    assert "kernel.page_size" in error["message"] and "8, 16, 32" in error["message"]

    with pytest.raises(openai.BadRequestError) as excinfo:
        client.chat.completions.create(model=model, messages=FRANCE, max_tokens=4, extra_body={"kernel": {"atention": "dense"}})
    assert excinfo.value.body["param"] == "kernel.atention"


def test_kernel_implementation_names_the_sparse_backend(client, model):
    response = client.chat.completions.create(
        model=model, messages=FRANCE, temperature=0, max_tokens=2, n=2,
        extra_body={"kernel": {"attention": "sparse", "sparse_budget": 64}})
    implementation = response.model_extra["kernel_implementation"]
    assert implementation["attention_backend"] == "sparse"
    assert implementation["attention"].startswith("SparseAttention(budget=64,")
    assert implementation["replicas"] == [0, 0] and implementation["dtype"] == "fp32"


def test_return_token_ids_gives_the_tokens_as_sampled(client, model, server):
    response = client.chat.completions.create(model=model, messages=FRANCE, temperature=0, max_tokens=40,
                                              extra_body={"return_token_ids": True})
    (choice,) = response.choices
    ids = choice.model_extra["token_ids"]
    assert len(ids) == response.usage.completion_tokens and all(isinstance(i, int) for i in ids)
    # Greedy, this answer ends on EOS: its id is the last one (SmolLM2's <|im_end|>, 2); it has no text.
    assert choice.finish_reason == "stop" and ids[-1] == 2 and choice.message.content == "The capital of France is Paris."
    plain = client.chat.completions.create(model=model, messages=FRANCE, temperature=0, max_tokens=2)
    assert "token_ids" not in plain.choices[0].model_extra

    # Streamed: each chunk's choice carries the ids of its own tokens.
    body = {"model": model, "messages": FRANCE, "temperature": 0, "max_tokens": 5, "stream": True,
            "return_token_ids": True}
    with httpx.stream("POST", f"{server}/v1/chat/completions", json=body, timeout=60) as stream:
        events = [json.loads(line[6:]) for line in stream.iter_lines() if line.startswith("data: {")]
    streamed = [i for e in events for c in e["choices"] for i in c.get("token_ids", [])]
    assert streamed == ids[:5]


def test_divergence_of_the_decoded_token_ids_matches_the_decode_logprobs(client, model, server):
    """Decode vs prefill: a seeded sample's own tokens, re-scored by teacher forcing under the same
    kernel, get the log-probabilities the decode reported for them (both are log_softmax of the
    raw logits, whatever the temperature)."""
    sample = client.chat.completions.create(model=model, messages=FRANCE, temperature=1.0, seed=5, max_tokens=12,
                                            logprobs=True, extra_body={"return_token_ids": True})
    (choice,) = sample.choices
    ids = choice.model_extra["token_ids"]
    decoded = [entry.logprob for entry in choice.logprobs.content]
    assert len(ids) == len(decoded) >= 2
    response = httpx.post(f"{server}/v1/divergence", timeout=120, json={
        "messages": FRANCE, "continuation_ids": ids, "reference": {}, "candidate": {}, "top_k": 0})
    assert response.status_code == 200, response.text
    positions = response.json()["positions"]
    assert [p["token_id"] for p in positions] == ids
    for p, logprob in zip(positions, decoded):
        assert p["reference_logprob"] == pytest.approx(logprob, abs=1e-4), p  # fp32: ~2e-5 measured
        assert p["kl"] < 1e-6
    assert response.json()["prompt_tokens"] == sample.usage.prompt_tokens


def _chat(model: str, **overrides) -> dict:
    return {"model": model, "messages": FRANCE, "max_tokens": 4, **overrides}


BAD_REQUESTS = {
    # id: (body builder, expected status, expected param)
    "malformed-json": (lambda m: b'{"model": "x", "messages": [', 400, None),
    "not-an-object": (lambda m: b"[1, 2, 3]", 400, None),
    "unknown-model": (lambda m: _chat("gpt-9000"), 404, "model"),
    "invalid-kernel": (lambda m: _chat(m, kernel={"attention": "sparse", "sparse_budget": 8}), 400, "kernel.sparse_budget"),
    "kernel-not-object": (lambda m: _chat(m, kernel="dense"), 400, "kernel"),
    "n-over-limit": (lambda m: _chat(m, n=9), 400, "n"),
    "n-zero": (lambda m: _chat(m, n=0), 400, "n"),
    "max-tokens-over-limit": (lambda m: _chat(m, max_tokens=10**6), 400, "max_tokens"),
    "prompt-over-context": (lambda m: _chat(m, messages=[{"role": "user", "content": "hello " * 9000}]), 400, "messages"),
    "prompt-plus-max-tokens-over-context": (
        lambda m: _chat(m, messages=[{"role": "user", "content": "hello " * 8000}], max_tokens=1000), 400, "messages"),
    "max-tokens-string": (lambda m: _chat(m, max_tokens="16"), 400, "max_tokens"),
    "temperature-string": (lambda m: _chat(m, temperature="hot"), 400, "temperature"),
    "temperature-out-of-range": (lambda m: _chat(m, temperature=5), 400, "temperature"),
    "messages-not-list": (lambda m: _chat(m, messages="hi"), 400, "messages"),
    "messages-empty": (lambda m: _chat(m, messages=[]), 400, "messages"),
    "bad-role": (lambda m: _chat(m, messages=[{"role": "robot", "content": "hi"}]), 400, "messages.0.role"),
    "content-number": (lambda m: _chat(m, messages=[{"role": "user", "content": 5}]), 400, "messages.0.content"),
    "missing-model": (lambda m: {"messages": FRANCE}, 400, "model"),
    "top-logprobs-without-logprobs": (lambda m: _chat(m, top_logprobs=2), 400, "top_logprobs"),
    "top-logprobs-over-limit": (lambda m: _chat(m, logprobs=True, top_logprobs=50), 400, "top_logprobs"),
    "seed-float": (lambda m: _chat(m, seed=1.5), 400, "seed"),
    "stream-not-bool": (lambda m: _chat(m, stream="yes"), 400, "stream"),
    "unsupported-penalty": (lambda m: _chat(m, frequency_penalty=0.5), 400, "frequency_penalty"),
}


@pytest.mark.parametrize("case", list(BAD_REQUESTS), ids=list(BAD_REQUESTS))
def test_bad_input_is_a_4xx_with_an_openai_error_body(server, model, case):
    build, status, param = BAD_REQUESTS[case]
    body = build(model)
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    started = time.monotonic()
    response = httpx.post(f"{server}/v1/chat/completions", content=content,
                          headers={"content-type": "application/json"}, timeout=30)
    assert time.monotonic() - started < 10, "a bad request must be refused at once, not generated"
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"] and error["type"] == "invalid_request_error"
    assert error["param"] == param, error


def test_openai_client_raises_typed_errors(client):
    with pytest.raises(openai.NotFoundError) as excinfo:
        client.chat.completions.create(model="gpt-9000", messages=FRANCE, max_tokens=2)
    assert excinfo.value.body["code"] == "model_not_found"
    assert "SmolLM2" in excinfo.value.body["message"]  # says which model is served


def test_unknown_route_has_an_openai_error_body(server):
    response = httpx.get(f"{server}/v1/completions-that-do-not-exist", timeout=10)
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"


CONTINUATION = "The capital of France is Paris."


def test_divergence_dense_vs_dense_is_zero(server, model):
    response = httpx.post(f"{server}/v1/divergence", timeout=120, json={
        "model": model, "messages": FRANCE, "continuation": CONTINUATION,
        "reference": {"attention": "dense"}, "candidate": {"attention": "dense", "page_size": 32},
        "kl_threshold": 0.01, "top_k": 3,
    })
    assert response.status_code == 200, response.text
    result = response.json()
    positions = result["positions"]
    assert result["continuation_tokens"] == len(positions) > 3
    assert "".join(p["token"] for p in positions) == CONTINUATION
    assert [p["position"] for p in positions] == list(range(len(positions)))
    assert all(p["kl"] < 1e-4 and p["top1_agree"] for p in positions)
    assert all(abs(p["reference_logprob"] - p["candidate_logprob"]) < 1e-3 for p in positions)
    assert all(len(p["reference_top"]) == 3 and len(p["candidate_top"]) == 3 for p in positions)
    summary = result["summary"]
    assert summary["first_over_threshold"] is None and summary["positions_over_threshold"] == 0
    assert summary["top1_agreement"] == 1.0 and summary["max_kl"] < 1e-4
    assert result["candidate"]["page_size"] == 32 and result["reference"]["page_size"] == 16
    # " Paris" after "The capital of France is" is what the model itself would say.
    paris = next(p for p in positions if p["token"].strip() == "Paris")
    assert paris["reference_top"][0]["token"].strip() == "Paris"


def test_divergence_measures_a_real_difference(server, model):
    """A candidate that changes the numbers (fp8 KV cache) shows KL > 0 at some position: the
    endpoint compares two runs rather than reporting zeros."""
    response = httpx.post(f"{server}/v1/divergence", timeout=120, json={
        "prompt": "The quick brown fox jumps over the lazy dog. " * 4, "continuation": "The quick brown fox jumps",
        "candidate": {"kv_cache_dtype": "fp8_e4m3"}, "kl_threshold": 1e-9, "top_k": 0,
    })
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["summary"]["max_kl"] > 0
    assert result["summary"]["first_over_threshold"] is not None
    assert result["positions"][0]["reference_top"] is None  # top_k 0: no top lists


@pytest.mark.parametrize("body, param", [
    ({"messages": FRANCE, "prompt": "x", "continuation": "y", "candidate": {}}, "messages"),
    ({"continuation": "y", "candidate": {}}, "messages"),
    ({"prompt": "x", "continuation": "y", "candidate": {"attention": "fast"}}, "candidate.attention"),
    ({"prompt": "x", "continuation": "y", "candidate": {}, "reference": {"page_size": 7}}, "reference.page_size"),
    ({"prompt": "x", "continuation": "", "candidate": {}}, "continuation"),
    ({"prompt": "x", "continuation": "y"}, "candidate"),
    ({"prompt": "hello " * 8200, "continuation": "y", "candidate": {}}, "continuation"),
    ({"prompt": "x", "candidate": {}}, "continuation"),
    ({"prompt": "x", "continuation": "y", "continuation_ids": [1], "candidate": {}}, "continuation"),
    ({"prompt": "x", "continuation_ids": [], "candidate": {}}, "continuation_ids"),
    ({"prompt": "x", "continuation_ids": [1, "2"], "candidate": {}}, "continuation_ids.1"),
    ({"prompt": "x", "continuation_ids": [1, 49152], "candidate": {}}, "continuation_ids"),
    ({"prompt": "x", "continuation_ids": [-1], "candidate": {}}, "continuation_ids"),
    ({"prompt": "hello " * 8000, "continuation_ids": [1] * 500, "candidate": {}}, "continuation_ids"),
], ids=["both-contexts", "no-context", "bad-candidate", "bad-reference", "empty-continuation", "no-candidate",
        "over-context", "no-continuation", "both-continuations", "empty-ids", "id-not-int", "id-over-vocabulary",
        "id-negative", "ids-over-context"])
def test_divergence_bad_input(server, body, param):
    response = httpx.post(f"{server}/v1/divergence", json=body, timeout=30)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param
    if "continuation_ids" in body and param == "continuation_ids" and body["continuation_ids"]:
        assert "vocabulary" in response.json()["error"]["message"] or "context" in response.json()["error"]["message"]


def _wait_for(predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


STORY = [{"role": "user", "content": "Write a long, detailed story about a dragon who learns to bake bread."}]


def test_client_disconnect_aborts_the_request(server, model):
    """A client that goes away frees its sequences: the replica confirms the abort instead of
    decoding the remaining 500 tokens for nobody."""
    aborted_before = health(server)["replicas"][0]["aborted"]
    body = _chat(model, messages=STORY, max_tokens=500, temperature=1.0, seed=1, stream=True)
    with httpx.stream("POST", f"{server}/v1/chat/completions", json=body, timeout=60) as response:
        assert response.status_code == 200
        next(response.iter_lines())  # admitted and started; now hang up
    _wait_for(lambda: health(server)["replicas"][0]["aborted"] == aborted_before + 1)
    _wait_for(lambda: health(server)["busy"] == 0)

    # The same for a non-streaming request whose client gives up waiting.
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{server}/v1/chat/completions", json=_chat(model, messages=STORY, max_tokens=500, temperature=1.0, seed=2),
                   timeout=httpx.Timeout(10, read=1.5))
    _wait_for(lambda: health(server)["replicas"][0]["aborted"] == aborted_before + 2)
    assert health(server)["busy"] == 0


def test_health_reports_the_replica(server):
    report = health(server)
    assert report["status"] == "ok" and report["alive"] == 1 and report["dead"] == []
    (replica,) = report["replicas"]
    assert replica["device"] == "cpu" and replica["alive"] and replica["pid"] > 0
    assert replica["completed"] > 0
