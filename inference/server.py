"""OpenAI-compatible HTTP server for the bundled engine: `python -m inference serve`.

    python -m inference serve --host 127.0.0.1 --port 8001 --devices cpu [--replicas N]
                              [--model PATH] [--dtype bf16|fp32] [--affinity-threshold N]

One engine replica runs per device in its own process (`inference.replicas`); `--devices
cuda:0,cuda:1` starts two, `--devices cpu --replicas 2` two CPU processes (`--replicas` is per
device). Routing is prefix-affine: every choice of one prompt (the n samples of a request, and
the concurrent requests that differ only in `kernel` or sampling) goes to the replica recently
given that prompt, so the engine prefills it once, unless that replica is more than
--affinity-threshold sequences (default 32) and --affinity-ratio times (default 1.5) busier
than the least busy live one, or dead; a new prompt goes to the least busy live replica.
Divergence jobs follow their prompt the same way. Any OpenAI client works against
`http://HOST:PORT/v1`.

Endpoints
---------
GET  /v1/models            {"object": "list", "data": [{"id", "object": "model", "created", "owned_by",
                            "context_length", "dtype": "bf16" | "fp32"}]}
POST /v1/chat/completions  OpenAI's chat completion request: model, messages, n, seed, temperature,
                           top_p, top_k, min_p, max_tokens (or max_completion_tokens), stop,
                           logprobs, top_logprobs, stream, stream_options.include_usage, plus
                             kernel: the kernel settings object of docs/architecture.md (default: stock/dense);
                             return_token_ids (vLLM's): each choice gets `token_ids`, its tokens as
                             sampled, a final EOS included (streamed: each chunk's own).
                           Seeds: choice i uses seed + i, so choice i of two requests that differ
                           only in `kernel` sees the same dice (paired samples). Without a seed each
                           choice draws its own random seed.
                           The response is OpenAI's chat.completion (or chat.completion.chunk events
                           ending in `data: [DONE]`), with extension fields: top-level `kernel`
                           (the settings used, defaults filled in), top-level (not streamed)
                           `kernel_implementation` (what the replica resolved them to: {"attention":
                           the attention backend's repr, "attention_backend": its name, "device",
                           "dtype", "replicas": [replica of each choice], "by_replica" only when the
                           choices were split over replicas}) and per choice `seed`. The header
                           `X-Inference-Replicas` lists the replica that served each choice.
POST /v1/divergence        Teacher-forced comparison of two kernel settings on the same tokens.
                           Request: {"messages": [...] | "prompt": str, "continuation": str |
                           "continuation_ids": [int] (exactly one; ids within the vocabulary, e.g. a
                           chat completion's `token_ids`), "candidate": {kernel}, "reference": {kernel}
                           (default stock), "kl_threshold": 0.1, "top_k": 5, "model": optional}. `messages` are
                           rendered with the chat template and the assistant generation prompt (the
                           continuation is the assistant's answer); `prompt` is tokenized as is.
                           Response: {"object": "divergence", "model", "reference", "candidate",
                           "kl_threshold", "prompt_tokens", "continuation_tokens",
                           "positions": [{"position", "token", "token_id", "kl", "top1_agree",
                           "reference_logprob", "candidate_logprob", "reference_top", "candidate_top"}],
                           "summary": {"mean_kl", "max_kl", "max_kl_position", "top1_agreement",
                           "first_over_threshold", "positions_over_threshold"}}. kl is
                           KL(reference ‖ candidate) in nats of the next-token distributions at
                           each continuation position; *_top are the top_k tokens of each side.
GET  /health               {"status": "ok" | "degraded" | "unavailable", "model", "alive", "dead": [index],
                           "busy", "routing": {"affinity_threshold", "affinity_ratio", "affinity_keys",
                           "affinity_capacity"}, "replicas": [{"index", "device", "dtype", "pid",
                           "state", "alive", "busy", "assigned", "completed", "aborted", "failed",
                           "error", "silent_s"}]}; 503 when no replica is alive.

Errors are OpenAI's body {"error": {"message", "type", "param", "code"}}: 400 for invalid input
(param = the field path, e.g. `kernel.page_size`, `messages.0.role`), 404 for an unknown model,
503 when a replica died or none is alive, 504 when a replica makes no progress on a request for
--request-timeout seconds (a long generation that keeps producing tokens is never cut off).
A client that disconnects aborts its sequences in the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from inference.protocol import APIError, ChatCompletionRequest, DivergenceRequest
from inference.replicas import DEFAULT_AFFINITY_RATIO, DEFAULT_AFFINITY_THRESHOLD, ReplicaPool, Submission
from kernels.settings import KernelSettings, KernelSettingsError

log = logging.getLogger("inference.server")


@dataclass
class ServerConfig:
    devices: list[str] = field(default_factory=lambda: ["cpu"])  # one replica per entry
    model_path: str | None = None
    dtype: str | None = None  # None: the engine's default (bf16 where the CPU supports it)
    served_model_name: str | None = None  # default: the model's name from the GGUF
    max_n: int = 64
    max_tokens_limit: int | None = None  # default: the model's context length
    request_timeout: float = 600.0  # admission, divergence, and the longest wait for the next token
    startup_timeout: float = 900.0
    threads_per_replica: int | None = None
    max_cache_tokens: int | None = None  # KV cache capacity per replica (default: the engine's)
    affinity_threshold: int = DEFAULT_AFFINITY_THRESHOLD  # routing: see inference.replicas (negative: off)
    affinity_ratio: float = DEFAULT_AFFINITY_RATIO


# --------------------------------------------------------------------------------------------
# App
# --------------------------------------------------------------------------------------------


def create_app(config: ServerConfig) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine_options = {"max_cache_tokens": config.max_cache_tokens} if config.max_cache_tokens else {}
        pool = ReplicaPool(config.devices, model_path=config.model_path, dtype=config.dtype,
                           threads_per_replica=config.threads_per_replica, engine_options=engine_options,
                           affinity_threshold=config.affinity_threshold, affinity_ratio=config.affinity_ratio)
        app.state.pool = pool
        try:
            await pool.start(timeout=config.startup_timeout)
            info = pool.model_info
            app.state.model_name = config.served_model_name or info["model"]
            app.state.context_length = info["context_length"]
            app.state.dtype = info.get("dtype")
            app.state.created = int(time.time())
            log.info("serving %s on %d replica(s): %s", app.state.model_name, len(pool.ready_replicas()),
                     ", ".join(config.devices))
            yield
        finally:
            await pool.close()

    app = FastAPI(title="transcript-triage bundled inference backend", lifespan=lifespan,
                  description=__doc__.split("Endpoints", 1)[0])
    app.state.config = config

    @app.exception_handler(APIError)
    async def _api_error(request: Request, exc: APIError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(_validation_error(exc.errors()).body(), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        error = APIError(exc.status_code, f"{request.method} {request.url.path}: {exc.detail}", type=kind)
        return JSONResponse(error.body(), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s", request.url.path)
        error = APIError(500, f"internal server error: {type(exc).__name__}: {exc}", type="server_error")
        return JSONResponse(error.body(), status_code=500)

    @app.get("/health")
    async def health(request: Request) -> JSONResponse:
        report = request.app.state.pool.health()
        return JSONResponse(report, status_code=200 if report["alive"] else 503)

    @app.get("/v1/models")
    async def models(request: Request) -> dict:
        state = request.app.state
        return {"object": "list", "data": [{
            "id": state.model_name, "object": "model", "created": state.created, "owned_by": "inference",
            "context_length": state.context_length, "dtype": state.dtype,
        }]}

    @app.post("/v1/chat/completions")
    async def chat_completions(body: ChatCompletionRequest, request: Request) -> Response:
        return await _chat_completions(body, request)

    @app.post("/v1/divergence")
    async def divergence(body: DivergenceRequest, request: Request) -> dict:
        return await _divergence(body, request)

    return app


def _validation_error(errors: list[dict]) -> APIError:
    first = errors[0]
    if first["type"] == "json_invalid":
        detail = first.get("ctx", {}).get("error", "")
        return APIError(400, f"malformed JSON body: {detail}".rstrip(": "), code="invalid_json")
    # Union members add their type name to the location ("content", "list[TextPart]"); drop those tags.
    def path(error: dict) -> str:
        tags = {"str", "int", "float", "bool", "dict", "list", "none"}
        return ".".join(str(p) for p in error["loc"]
                        if p != "body" and not (isinstance(p, str) and (p in tags or "[" in p or p.istitle())))

    messages = []
    for error in errors[:5]:
        where = path(error)
        messages.append(f"{where}: {error['msg']}" if where else error["msg"])
    if first["type"] in ("model_attributes_type", "dict_type") and not path(first):
        messages = ["the request body must be a JSON object"]
    return APIError(400, "; ".join(messages), param=path(first) or None, code="invalid_value")


# --------------------------------------------------------------------------------------------
# Chat completions
# --------------------------------------------------------------------------------------------


def _check_model(request: Request, model: str | None) -> str:
    served = request.app.state.model_name
    if model is not None and model != served:
        raise APIError(404, f"The model `{model}` does not exist; this server serves `{served}` (GET /v1/models).",
                       param="model", code="model_not_found")
    return served


def _kernel(data: dict | None, *, path: str) -> KernelSettings:
    try:
        return KernelSettings.from_dict(data, path=path)
    except KernelSettingsError as exc:
        raise APIError(400, f"invalid kernel settings: {exc}", param=next(iter(exc.errors)),
                       code="invalid_kernel_settings") from None


def _validate_chat(body: ChatCompletionRequest, request: Request) -> tuple[dict, list[dict]]:
    """Checks that need the server's limits; returns the replica payload and per-choice sampling."""
    config: ServerConfig = request.app.state.config
    _check_model(request, body.model)
    if body.n > config.max_n:
        raise APIError(400, f"n must be at most {config.max_n}, got {body.n}", param="n", code="invalid_value")
    max_tokens = body.max_completion_tokens if body.max_completion_tokens is not None else body.max_tokens
    limit = min(config.max_tokens_limit or request.app.state.context_length, request.app.state.context_length)
    if max_tokens is not None and max_tokens > limit:
        which = "max_completion_tokens" if body.max_completion_tokens is not None else "max_tokens"
        raise APIError(400, f"{which} must be at most {limit}, got {max_tokens}", param=which, code="invalid_value")
    if body.top_logprobs and not body.logprobs:
        raise APIError(400, "top_logprobs needs logprobs: true", param="top_logprobs", code="invalid_value")
    for name in ("presence_penalty", "frequency_penalty"):
        if getattr(body, name):
            raise APIError(400, f"{name} is not supported by this engine", param=name, code="unsupported")
    if body.tools:
        raise APIError(400, "tools are not supported by this engine", param="tools", code="unsupported")
    kernel = _kernel(body.kernel, path="kernel")
    payload = {
        "messages": [m.as_template_message() for m in body.messages],
        "kernel": kernel.to_dict(),
        "max_tokens": max_tokens,
        "max_tokens_limit": limit,
    }
    samplings = [{
        "temperature": float(body.temperature), "top_p": float(body.top_p), "top_k": max(body.top_k, 0),
        "min_p": float(body.min_p), "seed": None if body.seed is None else body.seed + i,
        "stop": tuple(body.stop or ()), "logprobs": body.logprobs, "top_logprobs": body.top_logprobs or 0,
    } for i in range(body.n)]
    return payload, samplings


class _ClientGone(Exception):
    pass


async def _until_disconnect(request: Request, coro: Any) -> Any:
    """Await `coro`, cancelling it if the client disconnects first (raises _ClientGone)."""
    task = asyncio.ensure_future(coro)
    watcher = asyncio.ensure_future(_wait_disconnect(request))
    try:
        done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            return task.result()
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        raise _ClientGone
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()


async def _wait_disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


@dataclass
class _Choice:
    seed: int | None
    text: list[str] = field(default_factory=list)
    tokens: int = 0
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[dict] = field(default_factory=list)
    finish_reason: str | None = None


def _logprob_entry(event: Any, top_n: int) -> dict:
    token = event.token if event.token is not None else event.text
    top = [{"token": t, "logprob": lp, "bytes": list(t.encode("utf-8"))} for t, _, lp in (event.top_logprobs or [])]
    return {"token": token, "logprob": event.logprob, "bytes": list(token.encode("utf-8")), "top_logprobs": top[:top_n]}


async def _next_item(submission: Submission, stall_timeout: float) -> tuple:
    """The next event of any choice. A replica that makes no progress for `stall_timeout` seconds
    (hung device, stopped process) fails the request with a 504 instead of hanging it; a long
    generation that keeps producing tokens is never cut off."""
    try:
        return await asyncio.wait_for(submission.queue.get(), stall_timeout)
    except asyncio.TimeoutError:
        replicas = ",".join(sorted({str(i) for i in submission.replicas}))
        raise APIError(504, f"no progress from engine replica {replicas} for {stall_timeout:.0f}s (--request-timeout); "
                       f"the request was aborted", type="timeout", code="timeout") from None


async def _chat_completions(body: ChatCompletionRequest, request: Request) -> Response:
    config: ServerConfig = request.app.state.config
    payload, samplings = _validate_chat(body, request)
    pool: ReplicaPool = request.app.state.pool
    try:
        submission = await _until_disconnect(request, pool.submit(payload, samplings, timeout=config.request_timeout))
    except _ClientGone:
        return Response(status_code=499)
    meta = {
        "id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time()), "model": request.app.state.model_name,
    }
    choices = [_Choice(seed=s["seed"]) for s in samplings]
    headers = {"X-Inference-Replicas": ",".join(map(str, submission.replicas))}
    if body.stream:
        return StreamingResponse(
            _stream(submission, body, meta, choices, config.request_timeout), media_type="text/event-stream",
            headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    try:
        await _until_disconnect(request, _collect(submission, body, choices, config.request_timeout))
    except _ClientGone:
        return Response(status_code=499)
    finally:
        submission.abort()
    completion_tokens = sum(c.tokens for c in choices)

    def choice(i: int, c: _Choice) -> dict:
        out = {"index": i, "message": {"role": "assistant", "content": "".join(c.text)},
               "logprobs": {"content": c.logprobs} if body.logprobs else None,
               "finish_reason": c.finish_reason, "seed": c.seed}
        if body.return_token_ids:
            out["token_ids"] = c.token_ids
        return out

    return JSONResponse({
        **meta, "object": "chat.completion", "system_fingerprint": None,
        "choices": [choice(i, c) for i, c in enumerate(choices)],
        "usage": {"prompt_tokens": submission.prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": submission.prompt_tokens + completion_tokens},
        "kernel": payload["kernel"],
        "kernel_implementation": submission.implementation,
    }, headers=headers)


async def _collect(submission: Submission, body: ChatCompletionRequest, choices: list[_Choice],
                   stall_timeout: float) -> None:
    remaining = len(choices)
    while remaining:
        item = await _next_item(submission, stall_timeout)
        if item[0] == "error":
            raise item[1]
        _, index, event = item
        choice = choices[index]
        choice.text.append(event.text)
        choice.tokens += 1
        choice.token_ids.append(event.token_id)
        if body.logprobs:
            choice.logprobs.append(_logprob_entry(event, body.top_logprobs or 0))
        if event.finished:
            choice.finish_reason = event.finish_reason
            remaining -= 1


def _sse(data: Any) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


async def _stream(submission: Submission, body: ChatCompletionRequest, meta: dict, choices: list[_Choice],
                  stall_timeout: float) -> AsyncIterator[str]:
    include_usage = bool(body.stream_options and body.stream_options.include_usage)

    def chunk(index: int, delta: dict, *, finish_reason: str | None = None, logprobs: Any = None,
              token_ids: list[int] | None = None) -> str:
        data = {**meta, "object": "chat.completion.chunk", "system_fingerprint": None,
                "choices": [{"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish_reason}]}
        if token_ids is not None:
            data["choices"][0]["token_ids"] = token_ids
        if include_usage:
            data["usage"] = None
        return _sse(data)

    try:
        for index in range(len(choices)):
            yield chunk(index, {"role": "assistant", "content": ""})
        remaining = len(choices)
        while remaining:
            try:
                item = await _next_item(submission, stall_timeout)
                if item[0] == "error":
                    raise item[1]
            except APIError as exc:
                # The status line is long gone; OpenAI clients raise on an `error` event.
                yield _sse(exc.body())
                return
            _, index, event = item
            choice = choices[index]
            choice.tokens += 1
            logprobs = {"content": [_logprob_entry(event, body.top_logprobs or 0)]} if body.logprobs else None
            token_ids = [event.token_id] if body.return_token_ids else None
            if event.text or logprobs or token_ids:
                yield chunk(index, {"content": event.text}, logprobs=logprobs, token_ids=token_ids)
            if event.finished:
                remaining -= 1
                yield chunk(index, {}, finish_reason=event.finish_reason)
        if include_usage:
            completion_tokens = sum(c.tokens for c in choices)
            yield _sse({**meta, "object": "chat.completion.chunk", "system_fingerprint": None, "choices": [],
                        "usage": {"prompt_tokens": submission.prompt_tokens, "completion_tokens": completion_tokens,
                                  "total_tokens": submission.prompt_tokens + completion_tokens}})
        yield "data: [DONE]\n\n"
    finally:
        submission.abort()  # the client went away (or an error ended the stream): stop decoding for it


# --------------------------------------------------------------------------------------------
# Divergence
# --------------------------------------------------------------------------------------------


async def _divergence(body: DivergenceRequest, request: Request) -> dict:
    config: ServerConfig = request.app.state.config
    model = _check_model(request, body.model)
    if (body.messages is None) == (body.prompt is None):
        raise APIError(400, "give exactly one of `messages` (chat) or `prompt` (raw text)", param="messages",
                       code="invalid_value")
    if (body.continuation is None) == (body.continuation_ids is None):
        raise APIError(400, "give exactly one of `continuation` (text) or `continuation_ids` (token ids)",
                       param="continuation", code="invalid_value")
    reference = _kernel(body.reference, path="reference")
    candidate = _kernel(body.candidate, path="candidate")
    payload = {
        "messages": None if body.messages is None else [m.as_template_message() for m in body.messages],
        "prompt": body.prompt, "continuation": body.continuation, "continuation_ids": body.continuation_ids,
        "reference": reference.to_dict(), "candidate": candidate.to_dict(),
        "kl_threshold": float(body.kl_threshold), "top_k": body.top_k,
    }
    pool: ReplicaPool = request.app.state.pool
    try:
        result = await _until_disconnect(request, pool.divergence(payload, timeout=config.request_timeout))
    except _ClientGone:
        return Response(status_code=499)
    return _divergence_response(model, payload, result)


def _divergence_response(model: str, payload: dict, result: dict) -> dict:
    engine = result["engine"]
    kl = [float(x) for x in engine["kl"]]
    agree = [bool(x) for x in engine["top1_agree"]]
    n = len(kl)
    ids = result["continuation_ids"]
    assert len(agree) == n == len(ids), f"engine returned {n} KL values for {len(ids)} continuation tokens"
    threshold = payload["kl_threshold"]
    over = [i for i, value in enumerate(kl) if value > threshold]

    def side(name: str) -> tuple[list, list | None]:
        data = engine[name]  # {"kernel", "logprobs", "top1", "top_logprobs"}
        return data["logprobs"], data.get("top_logprobs")

    def top(entries: list | None, i: int) -> list[dict] | None:
        return None if entries is None else [{"token": t, "token_id": tid, "logprob": lp} for t, tid, lp in entries[i]]

    ref_lp, ref_top = side("reference")
    cand_lp, cand_top = side("candidate")
    positions = [{
        "position": i, "token": result["tokens"][i], "token_id": ids[i], "kl": kl[i], "top1_agree": agree[i],
        "reference_logprob": ref_lp[i], "candidate_logprob": cand_lp[i],
        "reference_top": top(ref_top, i), "candidate_top": top(cand_top, i),
    } for i in range(n)]
    max_position = max(range(n), key=kl.__getitem__)
    return {
        "object": "divergence", "model": model, "reference": result["reference"], "candidate": result["candidate"],
        "kl_threshold": threshold, "prompt_tokens": result["prompt_tokens"], "continuation_tokens": n,
        "positions": positions,
        "summary": {
            "mean_kl": sum(kl) / n, "max_kl": kl[max_position], "max_kl_position": max_position,
            "top1_agreement": sum(agree) / n, "first_over_threshold": over[0] if over else None,
            "positions_over_threshold": len(over),
        },
    }
