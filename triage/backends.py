"""The backend client: every HTTP call the worker makes to an inference server (httpx).

It speaks the OpenAI API, so an arm can run on the bundled engine (`python -m inference
serve`) or on any OpenAI-compatible server (vLLM, SGLang, llama.cpp). Only bundled backends
get the extensions: the `kernel` field, `return_token_ids` and `/v1/divergence`.

Retries (tenacity): connection errors, timeouts, 429 and 5xx are retried with exponential
backoff; any other 4xx is the request's fault and is raised at once. A server that ignores
`n`, or does not give choice i the seed `seed + i`, is driven one request per sample with
its own seed (`probe()` finds out once per backend; the result is cached on the Backend row).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

logger = logging.getLogger(__name__)

BUNDLED, OPENAI = "bundled", "openai"
N_SEED, PER_SAMPLE = "n_seed", "per_sample"
PROBE_PROMPT = [{"role": "user", "content": "Name three colours."}]


class BackendError(Exception):
    """A request that failed for good (after retries, or a 4xx). `status` is the HTTP
    status (None for a connection failure); the message names the backend and says why."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.status = status
        self.retryable = retryable


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, BackendError) and exc.retryable


@dataclass
class Choice:
    """One generated sample as the server returned it."""

    index: int
    seed: int | None
    text: str
    finish_reason: str
    completion_tokens: int
    token_ids: list[int] | None = None
    logprobs: list[dict] | None = None  # [{"token", "logprob"}]
    latency_ms: float | None = None


@dataclass
class Generation:
    choices: list[Choice]
    kernel: dict | None = None  # the settings the server used (bundled: defaults filled in)
    implementation: dict | None = None  # what the bundled server resolved them to
    model: str = ""
    mode: str = N_SEED


class BackendClient:
    def __init__(self, *, name: str, kind: str, base_url: str, api_key: str = "", model: str = "",
                 timeout: float = 600.0, connect_timeout: float = 5.0, attempts: int = 3, backoff: float = 0.5,
                 capabilities: dict | None = None):
        self.name = name
        self.kind = kind
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.attempts = max(1, attempts)
        self.backoff = backoff
        self.capabilities = dict(capabilities or {})
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(timeout=httpx.Timeout(timeout, connect=connect_timeout), headers=headers)

    @classmethod
    def for_backend(cls, backend, **options) -> "BackendClient":
        return cls(name=backend.name, kind=backend.kind, base_url=backend.base_url, api_key=backend.api_key,
                   model=backend.model_name, capabilities=backend.capabilities, **options)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "BackendClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def bundled(self) -> bool:
        return self.kind == BUNDLED

    # -- transport ---------------------------------------------------------------------------

    def _send(self, method: str, path: str, body: dict | None = None) -> dict:
        url = f"{self.base_url}{path}"
        try:
            response = self._http.request(method, url, json=body)
        except httpx.TimeoutException as exc:
            raise BackendError(f"backend '{self.name}' ({url}) timed out: {exc.__class__.__name__}",
                               retryable=True) from None
        except httpx.TransportError as exc:
            raise BackendError(f"backend '{self.name}' ({url}) is unreachable: {exc.__class__.__name__}: {exc}",
                               retryable=True) from None
        if response.status_code >= 400:
            raise BackendError(f"backend '{self.name}' answered {response.status_code} on {path}: "
                               f"{_error_message(response)}", status=response.status_code,
                               retryable=response.status_code == 429 or response.status_code >= 500)
        try:
            return response.json()
        except ValueError:
            raise BackendError(f"backend '{self.name}' answered {path} with a body that is not JSON: "
                               f"{response.text[:200]!r}", status=response.status_code) from None

    def request(self, method: str, path: str, body: dict | None = None) -> dict:
        """One call with retries; raises BackendError (after the last attempt, its message
        says how many were made)."""
        def log_retry(state: RetryCallState) -> None:
            logger.warning("backend %s %s attempt %d failed: %s", self.name, path, state.attempt_number,
                           state.outcome.exception())

        retrying = Retrying(stop=stop_after_attempt(self.attempts), retry=retry_if_exception(_retryable),
                            wait=wait_exponential(multiplier=self.backoff, max=10), before_sleep=log_retry,
                            reraise=True)
        try:
            return retrying(self._send, method, path, body)
        except BackendError as exc:
            if exc.retryable and self.attempts > 1:
                raise BackendError(f"{exc} (after {self.attempts} attempts)", status=exc.status) from None
            raise

    # -- endpoints ---------------------------------------------------------------------------

    def model_id(self) -> str:
        """The configured model, else the first one the server lists."""
        if not self.model:
            data = self.request("GET", "/models").get("data") or []
            if not data:
                raise BackendError(f"backend '{self.name}' lists no model at {self.base_url}/models")
            self.model = data[0]["id"]
        return self.model

    def health(self) -> dict:
        """GET /health at the server root (bundled: replicas and their state); {"status":
        "unreachable", "error"} when it does not answer. Never raises."""
        root = self.base_url.removesuffix("/v1")
        try:
            response = self._http.get(f"{root}/health", timeout=5)
            try:
                body = response.json()
            except ValueError:
                body = {}
            if not isinstance(body, dict):
                body = {}
            body.setdefault("status", "ok" if response.status_code == 200 else f"http {response.status_code}")
            return body
        except httpx.HTTPError as exc:
            return {"status": "unreachable", "error": f"{exc.__class__.__name__}: {exc}"}

    def divergence(self, body: dict) -> dict:
        if not self.bundled:
            raise BackendError(f"backend '{self.name}' is not bundled: /v1/divergence is an extension of ours")
        return self.request("POST", "/divergence", {"model": self.model_id(), **body})

    def completions(self, body: dict) -> dict:
        return self.request("POST", "/completions", {"model": self.model_id(), **body})

    # -- generation --------------------------------------------------------------------------

    def probe(self) -> dict:
        """Does the server honour `n`, and give choice i the seed `seed + i`, with seeds
        reproducible? Bundled backends do by contract. Cached in self.capabilities."""
        if self.bundled:
            self.capabilities.setdefault("mode", N_SEED)
            return self.capabilities
        if "mode" in self.capabilities:
            return self.capabilities
        base = {"messages": PROBE_PROMPT, "temperature": 1.0, "max_tokens": 12, "top_k": 0, "min_p": 0.0}
        two = self._chat({**base, "n": 2, "seed": 1234})
        caps: dict[str, Any] = {"n": len(two.get("choices") or []) == 2}
        again = self._chat({**base, "n": 1, "seed": 1234})
        first = _choice_text(two, 0)
        caps["seed_reproducible"] = first is not None and first == _choice_text(again, 0)
        if caps["n"]:
            next_seed = self._chat({**base, "n": 1, "seed": 1235})
            caps["seed_plus_i"] = _choice_text(two, 1) == _choice_text(next_seed, 0)
        else:
            caps["seed_plus_i"] = False
        caps["mode"] = N_SEED if caps["n"] and caps["seed_plus_i"] else PER_SAMPLE
        caps["probed_at"] = time.time()
        self.capabilities = caps
        return caps

    def _chat(self, body: dict) -> dict:
        return self.request("POST", "/chat/completions", {"model": self.model_id(), **body})

    def generate(self, *, messages: list[dict], n: int, seed: int, sampling: dict, kernel: dict | None,
                 logprobs: bool = True) -> Generation:
        """n samples with seeds seed .. seed+n-1 (choice i ↔ seed + i), in one request when the
        server honours n and seed + i, else one request per sample. Raises BackendError."""
        body: dict[str, Any] = {
            "messages": messages, "temperature": float(sampling.get("temperature", 1.0)),
            "top_p": float(sampling.get("top_p", 1.0)), "max_tokens": int(sampling["max_tokens"]),
        }
        if sampling.get("top_k"):
            body["top_k"] = int(sampling["top_k"])
        if sampling.get("min_p"):
            body["min_p"] = float(sampling["min_p"])
        if logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = 0  # llama.cpp returns no logprobs without it
        if not self.bundled:
            # Plain sampling, as the arm says: llama.cpp's server defaults to top_k 40, min_p 0.05
            # and a repeat penalty of 1.1 (even at T=0); vLLM and SGLang take the same names.
            body.setdefault("top_k", 0)
            body.setdefault("min_p", 0.0)
            body.update(repeat_penalty=1.0, repetition_penalty=1.0)
        if self.bundled:
            body["kernel"] = kernel or {}
            body["return_token_ids"] = True
        mode = self.probe()["mode"]
        started = time.monotonic()
        if mode == N_SEED:
            data = self._chat({**body, "n": n, "seed": seed})
            elapsed = (time.monotonic() - started) * 1000
            choices = [_parse_choice(c, seed + i, elapsed) for i, c in enumerate(_choices(data, n, self.name))]
            meta = [data]
        else:
            choices, meta = [], []
            for i in range(n):
                data = self._chat({**body, "n": 1, "seed": seed + i})
                elapsed = (time.monotonic() - started) * 1000
                choices.append(_parse_choice(_choices(data, 1, self.name)[0], seed + i, elapsed, index=i))
                meta.append(data)
        first = meta[0] if meta else {}
        return Generation(choices=choices, kernel=first.get("kernel"), implementation=first.get("kernel_implementation"),
                          model=first.get("model", ""), mode=mode)


def _choices(data: dict, n: int, name: str) -> list[dict]:
    choices = sorted(data.get("choices") or [], key=lambda c: c.get("index", 0))
    if len(choices) < n:
        raise BackendError(f"backend '{name}' returned {len(choices)} choices for n={n}")
    return choices[:n]


def _choice_text(data: dict, index: int) -> str | None:
    choices = data.get("choices") or []
    if index >= len(choices):
        return None
    return ((choices[index].get("message") or {}).get("content")) or ""


def _parse_choice(raw: dict, seed: int, latency_ms: float, *, index: int | None = None) -> Choice:
    message = raw.get("message") or {}
    content = (raw.get("logprobs") or {}).get("content") if isinstance(raw.get("logprobs"), dict) else None
    logprobs = None
    if isinstance(content, list):
        logprobs = [{"token": e.get("token", ""), "logprob": e.get("logprob")} for e in content if isinstance(e, dict)]
    token_ids = raw.get("token_ids")
    completion = len(token_ids) if isinstance(token_ids, list) else (len(logprobs) if logprobs else 0)
    return Choice(index=raw.get("index", 0) if index is None else index, seed=seed,
                  text=message.get("content") or "", finish_reason=raw.get("finish_reason") or "",
                  completion_tokens=completion, token_ids=token_ids if isinstance(token_ids, list) else None,
                  logprobs=logprobs, latency_ms=latency_ms)


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error)[:500]
    if isinstance(body, dict) and "detail" in body:
        return str(body["detail"])[:500]
    return str(body)[:300]
