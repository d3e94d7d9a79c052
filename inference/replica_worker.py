"""The replica worker: one engine process's continuous-batching loop.

`replica_main` is the entry point of each process that `inference.replicas.ReplicaPool` spawns:
it loads the engine, reports `Ready` (or `LoadFailed`), then serves its inbox. Between two
`Engine.step()` calls it drains the inbox, so requests that arrive while others are decoding join
the running batch. Tokenization, the chat template and the context-length check happen here (the
replica owns the tokenizer); an admission group is `Accepted` or `Rejected` (an OpenAI-style 4xx)
before the HTTP response starts. The messages are in `inference.replica_messages`; the data flow
is in docs/architecture.md.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
from typing import Any

from inference.replica_messages import (
    Aborted,
    AbortRequest,
    Accepted,
    AddRequests,
    ComputeDivergence,
    DivergenceResult,
    LoadFailed,
    Ready,
    Rejected,
    RequestsFailed,
    StepEvents,
    Stop,
    TokenEventData,
    ToReplica,
)

log = logging.getLogger("inference.replica_worker")

# How long an idle replica blocks on its inbox before checking that its server still lives.
_IDLE_POLL_S = 1.0


def replica_main(index: int, device: str, model_path: str | None, dtype: str | None, threads: int | None,
                 inbox: Any, conn: Any, server_pid: int, engine_options: dict | None = None) -> None:
    """Entry point of a replica process: load the engine, report ready, serve the inbox."""
    # Ctrl-C reaches the whole process group; the server decides when replicas stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import torch

        if threads:
            torch.set_num_threads(threads)
        from inference.engine import Engine

        kwargs = {"device": device, **(engine_options or {})}
        if dtype:
            kwargs["dtype"] = dtype
        engine = Engine(model_path, **kwargs)
    except BaseException as exc:  # report any load failure (bad path, no CUDA, ...) instead of dying silently
        conn.send(LoadFailed(f"{type(exc).__name__}: {exc}"))
        return
    conn.send(Ready({
        "model": engine.model_name,
        "context_length": int(engine.config.max_seq_len),
        "device": device,
        "dtype": engine.dtype_name,
        "vocab_size": int(engine.config.vocab_size),
        "pid": os.getpid(),
    }))
    _ReplicaLoop(engine, inbox, conn, server_pid).run()


class _ReplicaLoop:
    """The continuous-batching loop of one replica."""

    def __init__(self, engine: Any, inbox: Any, conn: Any, server_pid: int):
        self.engine = engine
        self.inbox = inbox
        self.conn = conn
        self.server_pid = server_pid
        self.active: dict[str, bool] = {}  # request id → logprobs wanted (needs per-token text)

    def run(self) -> None:
        while True:
            for message in self._receive(block=not self.engine.has_work()):
                if isinstance(message, Stop):
                    return
                try:
                    self._handle(message)
                except Exception as exc:  # a bug must cost one request, not the replica
                    log.exception("replica failed to handle %s", type(message).__name__)
                    match message:
                        case AddRequests(group_id=answer_to) | ComputeDivergence(job_id=answer_to):
                            self._reject(answer_to, 500, f"internal error: {type(exc).__name__}: {exc}",
                                         type="server_error", code="internal_error")
            if self.engine.has_work():
                self._step()
            elif os.getppid() != self.server_pid:
                return  # the server is gone (killed hard); do not linger as an orphan

    def _counters(self) -> dict:
        """The engine's prefill counters, sent with every step's events (GET /health shows them)."""
        engine = self.engine
        return {"prefill_sequences": getattr(engine, "prefill_sequences", 0),
                "prefill_tokens": getattr(engine, "prefill_tokens", 0),
                "shared_prefill_tokens": getattr(engine, "shared_prefill_tokens", 0)}

    def _receive(self, *, block: bool) -> list[ToReplica]:
        messages = []
        try:
            if block:
                messages.append(self.inbox.get(timeout=_IDLE_POLL_S))
            while True:
                messages.append(self.inbox.get_nowait())
        except queue.Empty:
            pass
        return messages

    def _handle(self, message: ToReplica) -> None:
        match message:
            case AddRequests(group_id, payload):
                self._add(group_id, payload)
            case AbortRequest(request_id):
                if self.active.pop(request_id, None) is not None:
                    self.engine.abort(request_id)
                    self.conn.send(Aborted(request_id))
            case ComputeDivergence(job_id, payload):
                self._divergence(job_id, payload)
            case _:
                log.error("replica got unknown message %r", message)

    def _reject(self, group_or_job_id: str, status: int, message: str, *, param: str | None = None,
                code: str | None = None, type: str = "invalid_request_error") -> None:
        self.conn.send(Rejected(group_or_job_id, status, message, type=type, param=param, code=code))

    def _reject_engine_error(self, key: str, exc: Exception) -> None:
        """The engine refused: a kernel this device cannot run or a request it cannot serve is
        the client's to fix (400, the engine's message says how); anything else is ours (500)."""
        from kernels.selector import KernelUnavailableError

        if isinstance(exc, KernelUnavailableError):
            return self._reject(key, 400, str(exc), param="kernel", code="kernel_unavailable")
        if isinstance(exc, (ValueError, TypeError)):  # EngineError is a ValueError
            return self._reject(key, 400, str(exc))
        log.exception("engine error")
        return self._reject(key, 500, f"engine error: {type(exc).__name__}: {exc}", type="server_error",
                            code="engine_error")

    def _prompt_ids(self, payload: dict) -> list[int] | None:
        if payload.get("messages") is not None:
            return list(self.engine.apply_chat_template(payload["messages"]))
        return list(self.engine.tokenizer.encode(payload["prompt"]))

    def _add(self, group_id: str, payload: dict) -> None:
        from inference.engine import GenerationRequest, SamplingParams
        from kernels.settings import KernelSettings, KernelSettingsError

        context = int(self.engine.config.max_seq_len)
        try:
            prompt_ids = self._prompt_ids(payload)
            n_prompt = len(prompt_ids)
            max_tokens = payload["max_tokens"]
            if n_prompt >= context or (max_tokens is not None and n_prompt + max_tokens > context):
                asked = f" + {max_tokens} completion tokens" if max_tokens is not None else ""
                return self._reject(
                    group_id, 400,
                    f"This model's maximum context length is {context} tokens, but the request has "
                    f"{n_prompt} prompt tokens{asked}. Shorten the messages or lower max_tokens.",
                    param="messages", code="context_length_exceeded")
            kernel = KernelSettings.from_dict(payload.get("kernel"))
            # A sequence must fit in this replica's KV cache by itself, or the engine drops it midway.
            cache = getattr(self.engine, "max_cache_tokens", None)
            capacity = context if cache is None else min(context, cache // kernel.page_size * kernel.page_size)
            if max_tokens is None:
                max_tokens = max(1, min(capacity - n_prompt, payload["max_tokens_limit"]))
            if n_prompt >= capacity:
                return self._reject(
                    group_id, 400, f"the prompt is {n_prompt} tokens; this server's KV cache holds {capacity} tokens "
                    f"per sequence. Shorten the messages or restart the server with a larger --max-cache-tokens",
                    param="messages", code="context_length_exceeded")
            if n_prompt + max_tokens > capacity:
                return self._reject(
                    group_id, 400,
                    f"prompt ({n_prompt} tokens) + max_tokens ({max_tokens}) exceeds this server's KV cache of "
                    f"{capacity} tokens per sequence; lower max_tokens or restart the server with a larger "
                    f"--max-cache-tokens", param="max_tokens", code="context_length_exceeded")
            requests = [
                GenerationRequest(request_id, list(prompt_ids), SamplingParams(max_tokens=max_tokens, **sampling), kernel)
                for request_id, sampling in payload["choices"]
            ]
        except KernelSettingsError as exc:
            return self._reject(group_id, 400, f"invalid kernel settings: {exc}", param=next(iter(exc.errors)),
                                code="invalid_kernel_settings")
        except (ValueError, TypeError) as exc:
            return self._reject(group_id, 400, str(exc))
        added = []
        try:
            for request in requests:
                self.engine.add_request(request)
                added.append(request.request_id)
        except Exception as exc:
            for request_id in added:
                self.engine.abort(request_id)
            return self._reject_engine_error(group_id, exc)
        for request in requests:
            self.active[request.request_id] = bool(request.sampling.logprobs)
        self.conn.send(Accepted(group_id, n_prompt, self._implementation(kernel)))

    def _implementation(self, kernel: Any) -> dict:
        """What this replica runs `kernel` as (the engine has just selected the same backend)."""
        from kernels.selector import select_attention

        backend = select_attention(kernel, self.engine.device)
        return {"attention": repr(backend), "attention_backend": getattr(backend, "name", type(backend).__name__),
                "device": str(self.engine.device), "dtype": self.engine.dtype_name}

    def _step(self) -> None:
        try:
            events = self.engine.step()
        except Exception as exc:
            culprit = getattr(exc, "request_id", None)
            if culprit in self.active:
                # The engine names the one request it cannot serve (and has dropped it): fail only that one.
                del self.active[culprit]
                self.conn.send(RequestsFailed([culprit], str(exc), 400 if isinstance(exc, ValueError) else 500))
                return
            # Otherwise the step took its whole batch down; fail those requests loudly and keep serving.
            log.exception("engine step failed")
            failed = list(self.active)
            for request_id in failed:
                try:
                    self.engine.abort(request_id)
                except Exception:
                    pass
            self.active.clear()
            self.conn.send(RequestsFailed(failed, f"engine step failed: {type(exc).__name__}: {exc}", 500))
            return
        out = []
        for event in events:
            wants_token = self.active.get(event.request_id)
            if wants_token is None:
                continue  # aborted between the step and now
            out.append(TokenEventData(
                request_id=event.request_id,
                token_id=int(event.token_id),
                text=event.text,
                token=self.engine.tokenizer.token_str(event.token_id) if wants_token else None,
                logprob=None if event.logprob is None else float(event.logprob),
                top_logprobs=None if event.top_logprobs is None else [
                    (str(t), int(i), float(lp)) for t, i, lp in event.top_logprobs],
                finished=bool(event.finished),
                finish_reason=event.finish_reason,
            ))
            if event.finished:
                self.active.pop(event.request_id, None)
        if out:
            self.conn.send(StepEvents(out, self._counters()))

    def _divergence(self, job_id: str, payload: dict) -> None:
        from kernels.settings import KernelSettings, KernelSettingsError

        context = int(self.engine.config.max_seq_len)
        by_ids = payload.get("continuation_ids") is not None
        field_name = "continuation_ids" if by_ids else "continuation"
        try:
            prompt_ids = self._prompt_ids(payload)
            if by_ids:
                continuation_ids = list(payload["continuation_ids"])
                vocab = int(self.engine.config.vocab_size)
                bad = [(i, t) for i, t in enumerate(continuation_ids)
                       if not (isinstance(t, int) and not isinstance(t, bool) and 0 <= t < vocab)]
                if bad:
                    where = ", ".join(f"[{i}] = {t!r}" for i, t in bad[:5]) + (" ..." if len(bad) > 5 else "")
                    return self._reject(job_id, 400, f"continuation_ids: token ids must be in [0, {vocab}) "
                                        f"(the model's vocabulary); got {where}", param="continuation_ids",
                                        code="invalid_value")
            else:
                continuation_ids = list(self.engine.tokenizer.encode(payload["continuation"], add_bos=False))
            reference = KernelSettings.from_dict(payload.get("reference"), path="reference")
            candidate = KernelSettings.from_dict(payload["candidate"], path="candidate")
        except KernelSettingsError as exc:
            return self._reject(job_id, 400, f"invalid kernel settings: {exc}", param=next(iter(exc.errors)),
                                code="invalid_kernel_settings")
        except (ValueError, TypeError) as exc:
            return self._reject(job_id, 400, str(exc))
        total = len(prompt_ids) + len(continuation_ids)
        if total > context:
            return self._reject(job_id, 400, f"This model's maximum context length is {context} tokens, but prompt "
                                f"({len(prompt_ids)}) + continuation ({len(continuation_ids)}) is {total} tokens.",
                                param=field_name, code="context_length_exceeded")
        try:
            result = self.engine.divergence(prompt_ids, continuation_ids, reference, candidate,
                                            kl_threshold=payload["kl_threshold"], top_k=payload["top_k"])
        except Exception as exc:
            return self._reject_engine_error(job_id, exc)
        tokens = [self.engine.tokenizer.token_str(t) for t in continuation_ids]
        self.conn.send(DivergenceResult(job_id, {
            "engine": _to_builtin(result), "prompt_tokens": len(prompt_ids),
            "continuation_ids": continuation_ids, "tokens": tokens,
            "reference": reference.to_dict(), "candidate": candidate.to_dict(),
        }))


def _to_builtin(value: Any) -> Any:
    """Tensors and numpy values → lists and floats, so results pickle without torch."""
    if isinstance(value, dict):
        return {str(k): _to_builtin(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_builtin(v) for v in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    return value

