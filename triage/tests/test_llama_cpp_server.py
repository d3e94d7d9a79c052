"""llama.cpp's OpenAI-compatible server (llama-cpp-python[server]) as the external engine of an
experiment arm: the behaviours our OpenAI-compatible client relies on, measured on the bundled
SmolLM2-135M GGUF. One server for the module; short generations (about 30 s on 2 cores)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.slow

MESSAGES = [{"role": "user", "content": "Write a haiku about caches."}]
# What the GGUF's chat template renders for MESSAGES (it adds SmolLM's default system prompt).
CHATML = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
          "<|im_start|>user\nWrite a haiku about caches.<|im_end|>\n<|im_start|>assistant\n")
# llama-cpp-python's defaults are top_p 0.95, top_k 40, min_p 0.05, repeat_penalty 1.1: plain sampling needs these.
PLAIN = {"top_p": 1.0, "top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0}
SPECIAL = re.compile(r"<\|im_(?:start|end)\|>")


def service_missing(config: pytest.Config, reason: str) -> None:
    """The root conftest.py's skip-or-fail policy (REQUIRE_SERVICES=1 fails). Taken from pytest's
    loaded plugins: `from conftest import ...` is ambiguous in a whole-suite run, where the module
    name `conftest` is inference/tests/conftest.py (its folder is no package)."""
    root_conftest = Path(__file__).resolve().parents[2] / "conftest.py"
    for plugin in config.pluginmanager.get_plugins():
        if getattr(plugin, "__file__", None) and Path(plugin.__file__).resolve() == root_conftest:
            plugin.service_missing(reason)
    raise RuntimeError(f"{root_conftest} is not loaded as a conftest")


@pytest.fixture(scope="module")
def llama(pytestconfig):
    try:
        import llama_cpp  # noqa: F401
        import llama_cpp.server  # noqa: F401
    except ImportError as exc:
        service_missing(pytestconfig, f"needs llama-cpp-python[server] (pip install -e .[dev]): {exc}")
    from inference.gguf_loader import default_model_path

    from triage.tests.llama_cpp_server import llama_cpp_server

    model_path = str(default_model_path())
    with llama_cpp_server(model_path, n_ctx=2048) as base_url, httpx.Client(base_url=base_url, timeout=120) as client:
        client.model_path = model_path
        yield client


def chat(client: httpx.Client, **fields) -> dict:
    response = client.post("/chat/completions", json={"messages": MESSAGES, "max_tokens": 12, **fields})
    assert response.status_code == 200, response.text
    return response.json()


def text(body: dict) -> str:
    return body["choices"][0]["message"]["content"]


def fresh_cache(client: httpx.Client) -> None:
    """A request sharing no token prefix with MESSAGES, so the next one evaluates its prompt in full."""
    assert client.post("/completions", json={"prompt": "Hello there", "max_tokens": 1}).status_code == 200


def test_models_lists_the_model_path_and_n_is_ignored(llama):
    models = llama.get("/models").json()
    assert [m["id"] for m in models["data"]] == [llama.model_path]  # --model_alias would change it
    assert llama.get("/health").status_code == 404  # no health endpoint: /v1/models is the readiness probe
    body = chat(llama, n=3, temperature=0.6, seed=7, max_tokens=4)
    assert len(body["choices"]) == 1  # `n` is dropped: one request per sample


def test_seed_reproduces_a_sample_given_the_same_cache_history(llama):
    samples = {}
    for seed in (11, 11, 12, 13):
        fresh_cache(llama)
        samples.setdefault(seed, []).append(text(chat(llama, temperature=0.6, seed=seed, max_tokens=16, **PLAIN)))
    assert samples[11][0] == samples[11][1]
    assert len({samples[11][0], samples[12][0], samples[13][0]}) > 1


def test_plain_temperature_zero_is_greedy_and_logprobs_are_raw(llama):
    body = chat(llama, temperature=0, logprobs=True, top_logprobs=5, **PLAIN)
    choice = body["choices"][0]
    content = choice["logprobs"]["content"]
    assert len(content) == body["usage"]["completion_tokens"] == 12
    assert "".join(e["token"] for e in content) == choice["message"]["content"]
    for entry in content:
        assert set(entry) >= {"token", "logprob", "bytes", "top_logprobs"}
        tops = entry["top_logprobs"]
        assert 5 <= len(tops) <= 6  # the sampled token is appended when it is not in the top 5
        assert all(set(t) >= {"token", "logprob"} for t in tops)
        assert tops[0]["token"] == entry["token"]  # greedy with repeat_penalty 1
        assert [t["logprob"] for t in tops[:5]] == sorted((t["logprob"] for t in tops[:5]), reverse=True)
        assert entry["logprob"] <= 0
    # The same tokens' logprobs at another temperature: unscaled (raw softmax of the logits).
    fresh_cache(llama)
    warm = chat(llama, temperature=0, logprobs=True, top_logprobs=1, max_tokens=1, **PLAIN)
    fresh_cache(llama)
    hot = chat(llama, temperature=1.5, seed=1, logprobs=True, top_logprobs=1, max_tokens=1, **PLAIN)
    assert hot["choices"][0]["logprobs"]["content"][0]["top_logprobs"][0] == \
        warm["choices"][0]["logprobs"]["content"][0]["top_logprobs"][0]


def test_unknown_fields_max_tokens_finish_reason_usage(llama):
    body = chat(llama, temperature=0, max_tokens=8, kernel={"attention": "sparse", "sparse_budget": 256},
                **PLAIN)
    assert body["choices"][0]["finish_reason"] == "length"
    usage = body["usage"]
    assert usage["completion_tokens"] == 8
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    # The server applied the GGUF's ChatML template, default system prompt included.
    root = str(llama.base_url).rstrip("/").removesuffix("/v1")  # /extras/* lies beside /v1
    assert usage["prompt_tokens"] == len(llama.post(f"{root}/extras/tokenize", json={"input": CHATML}).json()["tokens"])
    stopped = chat(llama, temperature=0, max_tokens=32, stop=[","], **PLAIN)
    assert stopped["choices"][0]["finish_reason"] == "stop"
    assert "," not in text(stopped)


def test_echo_scores_a_given_answer_teacher_forced(llama):
    """/v1/completions with echo + logprobs: the per-token logprobs of prompt + answer, aligned by
    text_offset into the prompt with special-token markup removed."""
    sampled = chat(llama, temperature=0, logprobs=True, top_logprobs=5, **PLAIN)
    answer = text(sampled)
    response = llama.post("/completions", json={"prompt": CHATML + answer + "<|im_end|>", "echo": True,
                                                "logprobs": 5, "max_tokens": 1, "temperature": 0})
    assert response.status_code == 200, response.text
    body = response.json()
    choice = body["choices"][0]
    assert choice["text"].startswith(CHATML + answer + "<|im_end|>")  # echoed verbatim, markup included
    lp = choice["logprobs"]
    tokens, offsets, logprobs, tops = lp["tokens"], lp["text_offset"], lp["token_logprobs"], lp["top_logprobs"]
    assert len(tokens) == len(offsets) == len(logprobs) == len(tops)
    assert logprobs[0] is None and tops[0] is None
    # <|im_start|> is SmolLM2's BOS: every occurrence is left out; <|im_end|> stays, as token "".
    n_start = CHATML.count("<|im_start|>")
    usage = body["usage"]
    assert len(tokens) == usage["prompt_tokens"] - n_start + usage["completion_tokens"]
    stripped = "".join(tokens)
    assert all(stripped.startswith(t, o) for t, o in zip(tokens, offsets))
    assert offsets == sorted(offsets)

    base = len(SPECIAL.sub("", CHATML))
    idx = [i for i, o in enumerate(offsets) if base <= o < base + len(answer)]
    assert "".join(tokens[i] for i in idx) == answer
    for i in idx:
        assert isinstance(tops[i], dict) and 5 <= len(tops[i]) <= 6  # {token text: logprob}
        assert tops[i][tokens[i]] == logprobs[i]
    # The echo re-tokenizes the text canonically, which need not be the sampled token path: even
    # greedy SmolLM2 emits " c" + "ache" where the tokenizer makes " cache", and from there on
    # the two condition on different token histories. Up to the first difference they agree.
    content = sampled["choices"][0]["logprobs"]["content"]
    common = 0
    for i, entry in zip(idx, content):
        if tokens[i] != entry["token"]:
            break
        common += 1
        assert logprobs[i] == pytest.approx(entry["logprob"], abs=0.1)
        assert max(tops[i], key=tops[i].get) == entry["top_logprobs"][0]["token"]
    assert common >= 4
    end = idx[-1] + 1  # then <|im_end|> (""), with its own logprob: the end-of-turn probability
    assert tokens[end] == "" and logprobs[end] <= 0
