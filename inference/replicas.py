"""Engine replicas: one process per device, each running the engine's continuous-batching loop.

The server process never loads the model. `ReplicaPool` starts one process per device
(multiprocessing "spawn", which CUDA needs), routes each choice to a live replica (prefix
affinity, then least busy: `ReplicaPool._choose`) and routes the token events back to the
waiting HTTP handlers:

    server (asyncio) ──inbox (mp.Queue)──▶ replica process: Engine.add_request / abort / step
                     ◀──events (mp.Pipe)──  TokenEvents of every step, batched per step

Each replica drains its inbox between `Engine.step()` calls, so requests that arrive while
others are decoding join the running batch. Tokenization, the chat template and the
context-length check happen in the replica (it owns the tokenizer); a request is admitted
(`accepted`) or refused (`rejected`, an OpenAI-style 4xx) before the HTTP response starts.

A replica that dies is seen at once: one reader thread per replica waits on both its pipe and
its process sentinel. Its in-flight requests then fail with a 503 instead of hanging, it is
reported dead in /health, and the router stops choosing it.

Routing (prefix affinity, like SGLang's cache-aware router, without its radix tree): the
engine prefills identical prompts admitted in one step once, across the kernel settings of one
cache layout, so every choice of one conversation (the n samples of each request and the
requests of its other kernel settings, sent concurrently) should land on one replica. The pool
keys each request by a hash of its prompt (`affinity_key`: the messages, or the raw prompt; not
the kernel settings, not the sampling) and remembers, in a bounded LRU table, the replicas it
recently gave that key. A choice goes to the least busy of those replicas unless it is
overloaded: more than `affinity_threshold` sequences busier than the least busy live replica
*and* more than `affinity_ratio` times as busy (SGLang's balance_abs/rel_threshold); then, as
for a prompt never seen, to the least busy live replica (ties: least work given so far), which
joins the key's replicas. Dead replicas are never chosen. Divergence jobs use the same key.

Messages (plain tuples of builtins, so the server process never imports torch):
    server → replica: ("add", group_id, payload) ("abort", request_id) ("divergence", job_id, payload) ("stop",)
    replica → server: ("ready", info) ("fatal", message) ("accepted", group_id, prompt_tokens, implementation)
                      ("rejected", group_id, error) ("events", [event, ...]) ("aborted", request_id)
                      ("failed", [request_id, ...], message, status) ("result", job_id, result)
`implementation` is what this replica resolved the request's kernel settings to:
{"attention": repr of the attention backend, "attention_backend": its name, "device", "dtype"}.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import logging
import multiprocessing as mp
import multiprocessing.connection
import os
import queue
import signal
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from inference.protocol import APIError

log = logging.getLogger("inference.replicas")

# How long an idle replica blocks on its inbox before checking that its server still lives.
_IDLE_POLL_S = 1.0

# Prefix-affine routing (see the module docstring). A conversation's choices stay on its replica
# until that replica is this many sequences busier than the least busy one (and AFFINITY_RATIO
# times as busy): half an engine batch (Engine.max_batch_size 64), so one regeneration job of a
# few arms x a chunk of samples stays whole while several conversations still spread out.
DEFAULT_AFFINITY_THRESHOLD = 32
DEFAULT_AFFINITY_RATIO = 1.5
DEFAULT_AFFINITY_KEYS = 4096  # prompts remembered (LRU)
_AFFINITY_REPLICAS = 4  # replicas remembered per prompt (most recent first)


def affinity_key(payload: dict) -> str | None:
    """The routing key of a chat completion or divergence payload: a hash of its prompt (the
    template messages, or the raw `prompt` text), independent of kernel settings and sampling."""
    if payload.get("messages") is not None:
        data: list = ["messages", payload["messages"]]
    elif payload.get("prompt") is not None:
        data = ["prompt", payload["prompt"]]
    else:
        return None
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


@dataclass(frozen=True)
class TokenEventData:
    """A TokenEvent as it crosses the process boundary. `token` is the token's own text
    (for logprobs), `text` the newly decoded output text (for content)."""

    request_id: str
    token_id: int
    text: str
    token: str | None
    logprob: float | None
    top_logprobs: list[tuple[str, int, float]] | None
    finished: bool
    finish_reason: str | None


# --------------------------------------------------------------------------------------------
# Replica process
# --------------------------------------------------------------------------------------------


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
        conn.send(("fatal", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", {
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
                if message[0] == "stop":
                    return
                try:
                    self._handle(message)
                except Exception as exc:  # a bug must cost one request, not the replica
                    log.exception("replica failed to handle %r", message[0])
                    if message[0] in ("add", "divergence"):
                        self._reject(message[1], 500, f"internal error: {type(exc).__name__}: {exc}",
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

    def _receive(self, *, block: bool) -> list[tuple]:
        messages = []
        try:
            if block:
                messages.append(self.inbox.get(timeout=_IDLE_POLL_S))
            while True:
                messages.append(self.inbox.get_nowait())
        except queue.Empty:
            pass
        return messages

    def _handle(self, message: tuple) -> None:
        kind = message[0]
        if kind == "add":
            self._add(message[1], message[2])
        elif kind == "abort":
            request_id = message[1]
            if self.active.pop(request_id, None) is not None:
                self.engine.abort(request_id)
                self.conn.send(("aborted", request_id))
        elif kind == "divergence":
            self._divergence(message[1], message[2])
        else:
            log.error("replica got unknown message %r", kind)

    def _reject(self, group_id: str, status: int, message: str, *, param: str | None = None,
                code: str | None = None, type: str = "invalid_request_error") -> None:
        self.conn.send(("rejected", group_id,
                        {"status": status, "message": message, "param": param, "code": code, "type": type}))

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
        self.conn.send(("accepted", group_id, n_prompt, self._implementation(kernel)))

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
                self.conn.send(("failed", [culprit], str(exc), 400 if isinstance(exc, ValueError) else 500))
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
            self.conn.send(("failed", failed, f"engine step failed: {type(exc).__name__}: {exc}", 500))
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
            self.conn.send(("events", out, self._counters()))

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
        self.conn.send(("result", job_id, {
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


# --------------------------------------------------------------------------------------------
# Server side
# --------------------------------------------------------------------------------------------


def _exit_reason(exitcode: int | None) -> str:
    if exitcode is None:
        return "stopped responding"
    if exitcode < 0:
        try:
            return f"killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


@dataclass(eq=False)
class Replica:
    index: int
    device: str
    process: Any
    inbox: Any
    conn: Any
    state: str = "starting"  # starting → ready → dead | stopped
    error: str | None = None
    info: dict = field(default_factory=dict)
    sequences: dict[str, "Submission"] = field(default_factory=dict)  # in-flight request id → owner
    waiters: dict[str, asyncio.Future] = field(default_factory=dict)  # admissions and divergence jobs
    groups: dict[str, list[str]] = field(default_factory=dict)  # admission not yet answered → its request ids
    jobs: int = 0  # divergence computations running
    last_message: float = field(default_factory=time.monotonic)  # a busy replica that stays silent is stuck
    counters: dict = field(default_factory=dict)  # the engine's prefill counters, as of its last step
    started: asyncio.Future | None = None
    assigned: int = 0
    completed: int = 0
    aborted: int = 0
    failed: int = 0

    @property
    def busy(self) -> int:
        return len(self.sequences) + self.jobs

    def send(self, message: tuple) -> None:
        if self.state != "ready":
            raise self.unavailable()
        self.inbox.put(message)

    def unavailable(self) -> APIError:
        return APIError(503, f"replica {self.index} ({self.device}) is unavailable: {self.error or self.state}; "
                        f"retry the request, other replicas keep serving",
                        type="service_unavailable", code="replica_unavailable")

    def health(self) -> dict:
        return {
            "index": self.index, "device": self.device, "dtype": self.info.get("dtype"),
            "pid": getattr(self.process, "pid", None), "state": self.state,
            "alive": self.state == "ready", "busy": self.busy, "assigned": self.assigned,
            "completed": self.completed, "aborted": self.aborted, "failed": self.failed, "error": self.error,
            "silent_s": round(time.monotonic() - self.last_message, 1),
            **self.counters,
        }


class Submission:
    """The sequences of one chat completion (its n choices), possibly spread over replicas.
    `queue` receives ("event", choice_index, TokenEventData) and ("error", APIError) items."""

    def __init__(self, request_ids: list[str]):
        self.request_ids = request_ids
        self.choice_of = {request_id: i for i, request_id in enumerate(request_ids)}
        self.replica_of: dict[str, Replica] = {}
        self.queue: asyncio.Queue = asyncio.Queue()
        self.prompt_tokens = 0
        self.finished: set[str] = set()
        self.implementations: dict[int, dict] = {}  # replica index → what it resolved the kernel settings to

    @property
    def replicas(self) -> list[int]:
        return [self.replica_of[r].index for r in self.request_ids]

    @property
    def implementation(self) -> dict:
        """The response's `kernel_implementation`: what the replica of choice 0 runs the kernel
        settings as ({"attention", "attention_backend", "device", "dtype"}), `replicas` (the
        replica of each choice) and, when the choices were split over several replicas,
        `by_replica` (each serving replica's own, keyed by its index as a string)."""
        replicas = self.replicas
        out = {**self.implementations.get(replicas[0], {}), "replicas": replicas}
        served = list(dict.fromkeys(replicas))
        if len(served) > 1:
            out["by_replica"] = {str(i): self.implementations.get(i) for i in served}
        return out

    def abort(self) -> None:
        """Stop every sequence still running (client gone, timeout, a sibling failed). Idempotent."""
        for request_id, replica in self.replica_of.items():
            if request_id not in self.finished and request_id in replica.sequences and replica.state == "ready":
                replica.inbox.put(("abort", request_id))


class ReplicaPool:
    """The replicas of one server: start, route (prefix affinity, then least busy), collect
    events, report health.

    affinity_threshold: a choice of a known prompt goes to a replica recently given that prompt
        unless it is more than this many sequences busier than the least busy live replica (and
        more than `affinity_ratio` times as busy); negative: no affinity, least busy always.
    affinity_keys: prompts remembered (least recently used forgotten first).
    """

    def __init__(self, devices: list[str], *, model_path: str | None = None, dtype: str | None = None,
                 threads_per_replica: int | None = None, engine_options: dict | None = None,
                 affinity_threshold: int = DEFAULT_AFFINITY_THRESHOLD, affinity_ratio: float = DEFAULT_AFFINITY_RATIO,
                 affinity_keys: int = DEFAULT_AFFINITY_KEYS):
        if not devices:
            raise ValueError("at least one device is needed")
        if affinity_ratio < 1:
            raise ValueError(f"affinity_ratio must be at least 1, got {affinity_ratio}")
        if affinity_keys < 1:
            raise ValueError(f"affinity_keys must be at least 1, got {affinity_keys}")
        self.affinity_threshold = affinity_threshold
        self.affinity_ratio = affinity_ratio
        self.affinity_keys = affinity_keys
        self._affinity: OrderedDict[str, list[int]] = OrderedDict()  # prompt key → replica indices, recent first
        self.devices = devices
        self.model_path = model_path
        self.dtype = dtype
        self.threads = threads_per_replica
        self.engine_options = engine_options or {}  # extra Engine(...) keywords, e.g. max_cache_tokens
        self.replicas: list[Replica] = []
        self._ids = itertools.count()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self, *, timeout: float = 900.0) -> None:
        """Start every replica and wait until each has loaded the model or failed. Raises if none started."""
        self._loop = asyncio.get_running_loop()
        context = mp.get_context("spawn")
        for index, device in enumerate(self.devices):
            inbox = context.Queue()
            reader, writer = context.Pipe(duplex=False)
            process = context.Process(
                target=replica_main, name=f"inference-replica-{index}", daemon=True,
                args=(index, device, self.model_path, self.dtype, self.threads, inbox, writer, os.getpid(),
                      self.engine_options),
            )
            process.start()
            writer.close()  # the replica holds the only write end: its death gives us EOF
            replica = Replica(index=index, device=device, process=process, inbox=inbox, conn=reader,
                              started=self._loop.create_future())
            self.replicas.append(replica)
            threading.Thread(target=self._read, args=(replica,), name=f"replica-{index}-reader", daemon=True).start()
        started = [r.started for r in self.replicas]
        done, _ = await asyncio.wait(started, timeout=timeout)
        for replica in self.replicas:
            if replica.state == "starting":
                replica.error = f"did not load the model within {timeout:.0f}s"
                self._mark_dead(replica, replica.error)
                replica.process.kill()
        failures = [f"replica {r.index} ({r.device}): {r.error}" for r in self.replicas if r.state != "ready"]
        for failure in failures:
            log.error("replica failed to start: %s", failure)
        if len(failures) == len(self.replicas):
            raise RuntimeError("no replica started:\n  " + "\n  ".join(failures))
        first = self.ready_replicas()[0].info
        for replica in self.ready_replicas():
            if replica.info["model"] != first["model"]:
                raise RuntimeError(f"replicas loaded different models: {replica.info['model']} vs {first['model']}")

    async def close(self) -> None:
        self._closing = True
        for replica in self.replicas:
            if replica.process.is_alive():
                replica.inbox.put(("stop",))
        await asyncio.to_thread(self._join_all)

    def _join_all(self) -> None:
        deadline = time.monotonic() + 10
        for replica in self.replicas:
            replica.process.join(timeout=max(0.1, deadline - time.monotonic()))
            if replica.process.is_alive():
                replica.process.kill()
                replica.process.join(timeout=5)
            replica.inbox.cancel_join_thread()  # never block exit flushing to a dead reader
            replica.inbox.close()

    # -- queries ---------------------------------------------------------------------------

    def ready_replicas(self) -> list[Replica]:
        return [r for r in self.replicas if r.state == "ready"]

    @property
    def model_info(self) -> dict:
        for replica in self.replicas:
            if replica.info:
                return replica.info
        return {}

    def health(self) -> dict:
        replicas = [r.health() for r in self.replicas]
        alive = sum(r["alive"] for r in replicas)
        return {
            "status": "ok" if alive == len(replicas) else ("degraded" if alive else "unavailable"),
            "model": self.model_info.get("model"),
            "alive": alive,
            "dead": [r["index"] for r in replicas if r["state"] == "dead"],
            "busy": sum(r["busy"] for r in replicas),
            "routing": {"affinity_threshold": self.affinity_threshold, "affinity_ratio": self.affinity_ratio,
                        "affinity_keys": len(self._affinity), "affinity_capacity": self.affinity_keys},
            "replicas": replicas,
        }

    # -- routing ---------------------------------------------------------------------------

    @staticmethod
    def _load(replica: Replica) -> tuple:
        # Least busy first; among equals, the one given the least work so far (round robin).
        return (replica.busy, replica.assigned, replica.index)

    def _overloaded(self, replica: Replica, least: Replica) -> bool:
        """Too much busier than the least busy live replica to keep a prompt's affinity."""
        return (replica.busy - least.busy > self.affinity_threshold
                and replica.busy > self.affinity_ratio * least.busy)

    def _choose(self, key: str | None = None) -> Replica:
        """The replica for one more sequence (or divergence job) of the prompt `key`: the least
        busy live replica recently given `key` unless it is overloaded, else the least busy live
        replica (which is then remembered for `key`). Call it once per choice, counting each
        choice as busy before the next call."""
        ready = self.ready_replicas()
        if not ready:
            dead = "; ".join(f"replica {r.index} ({r.device}): {r.error or r.state}" for r in self.replicas)
            raise APIError(503, f"no live engine replica ({dead})", type="service_unavailable",
                           code="no_replica_available")
        least = min(ready, key=self._load)
        if key is None or self.affinity_threshold < 0:
            return least
        holders = self._affinity.get(key)
        if holders is None:
            holders = self._affinity[key] = []
            while len(self._affinity) > self.affinity_keys:
                self._affinity.popitem(last=False)
        else:
            self._affinity.move_to_end(key)
            holders[:] = [i for i in holders if self.replicas[i].state == "ready"]  # a dead one never serves again
            if holders:
                affine = min((self.replicas[i] for i in holders), key=self._load)
                if not self._overloaded(affine, least):
                    return affine
        # A new prompt, or its replicas are dead or overloaded: the least busy one takes it on.
        if least.index in holders:
            holders.remove(least.index)
        holders.insert(0, least.index)
        del holders[_AFFINITY_REPLICAS:]
        return least

    async def submit(self, payload: dict, samplings: list[dict], *, timeout: float) -> Submission:
        """Admit one chat completion: spread its choices over the replicas, wait until each
        replica has accepted (tokenized, checked the context) its share. Raises APIError."""
        prefix = f"cmpl-{next(self._ids)}"
        request_ids = [f"{prefix}-{i}" for i in range(len(samplings))]
        submission = Submission(request_ids)
        groups: dict[Replica, list] = {}
        key = affinity_key(payload)
        for request_id, sampling in zip(request_ids, samplings):
            replica = self._choose(key)
            replica.assigned += 1
            replica.sequences[request_id] = submission  # counts as busy for the next choice already
            submission.replica_of[request_id] = replica
            groups.setdefault(replica, []).append((request_id, sampling))
        waiters = []
        for n, (replica, choices) in enumerate(groups.items()):
            group_id = f"{prefix}-g{n}"
            waiter = self._loop.create_future()
            replica.waiters[group_id] = waiter
            replica.groups[group_id] = [request_id for request_id, _ in choices]
            waiters.append(waiter)
            replica.send(("add", group_id, {**payload, "choices": choices}))
        try:
            accepted = await asyncio.wait_for(asyncio.gather(*waiters), timeout)
        except BaseException as exc:
            submission.abort()
            for waiter in waiters:
                if not waiter.done():
                    waiter.cancel()
                elif not waiter.cancelled():
                    waiter.exception()  # retrieved: no "exception never retrieved" noise
            if isinstance(exc, asyncio.TimeoutError):
                raise APIError(504, f"the request was not admitted within {timeout:.0f}s",
                               type="timeout", code="timeout") from None
            # Prefer telling the client what was wrong with its request over a sibling's 503.
            errors = [w.exception() for w in waiters if w.done() and not w.cancelled() and w.exception()]
            errors.sort(key=lambda e: getattr(e, "status", 999) >= 500)
            raise (errors[0] if errors else exc) from None
        submission.prompt_tokens = accepted[0][0]
        for replica, (_, implementation) in zip(groups, accepted):
            submission.implementations[replica.index] = implementation
        return submission

    async def divergence(self, payload: dict, *, timeout: float) -> dict:
        replica = self._choose(affinity_key(payload))  # the conversation's replica, load allowing
        job_id = f"job-{next(self._ids)}"
        waiter = self._loop.create_future()
        replica.waiters[job_id] = waiter
        replica.assigned += 1
        replica.jobs += 1
        try:
            replica.send(("divergence", job_id, payload))
            return await asyncio.wait_for(waiter, timeout)
        except asyncio.TimeoutError:
            raise APIError(504, f"the divergence computation did not finish within {timeout:.0f}s",
                           type="timeout", code="timeout") from None
        finally:
            replica.waiters.pop(job_id, None)
            replica.jobs -= 1

    # -- events from the replicas (reader threads → event loop) ---------------------------

    def _read(self, replica: Replica) -> None:
        """Reader thread: forward every message; when the process exits, report it."""
        try:
            while True:
                ready = mp.connection.wait([replica.conn, replica.process.sentinel])
                if replica.conn in ready:
                    try:
                        message = replica.conn.recv()
                    except (EOFError, OSError):
                        break
                    self._loop.call_soon_threadsafe(self._on_message, replica, message)
                else:
                    break
            replica.process.join(timeout=5)
            self._loop.call_soon_threadsafe(self._on_exit, replica, replica.process.exitcode)
        except RuntimeError:  # the event loop closed under us: the server is shutting down
            pass

    def _on_message(self, replica: Replica, message: tuple) -> None:
        replica.last_message = time.monotonic()
        kind = message[0]
        if kind == "events":
            if len(message) > 2:
                replica.counters = message[2]
            for event in message[1]:
                submission = replica.sequences.get(event.request_id)
                if submission is None:
                    continue
                if event.finished:
                    del replica.sequences[event.request_id]
                    submission.finished.add(event.request_id)
                    replica.completed += 1
                submission.queue.put_nowait(("event", submission.choice_of[event.request_id], event))
        elif kind == "accepted":
            replica.groups.pop(message[1], None)
            implementation = message[3] if len(message) > 3 else {}
            self._resolve(replica, message[1], result=(message[2], implementation))
        elif kind == "rejected":
            error = message[2]
            self._resolve(replica, message[1], error=APIError(
                error["status"], error["message"], type=error["type"], param=error["param"], code=error["code"]))
            for request_id in replica.groups.pop(message[1], ()):
                replica.sequences.pop(request_id, None)  # never entered the engine
        elif kind == "result":
            self._resolve(replica, message[1], result=message[2])
        elif kind == "aborted":
            if replica.sequences.pop(message[1], None) is not None:
                replica.aborted += 1
        elif kind == "failed":
            status = message[3]
            error = APIError(status, message[2], type="invalid_request_error" if status < 500 else "server_error",
                             code="engine_error")
            for request_id in message[1]:
                submission = replica.sequences.pop(request_id, None)
                if submission is not None:
                    replica.failed += 1
                    submission.queue.put_nowait(("error", error))
        elif kind == "ready":
            replica.info = message[1]
            replica.state = "ready"
            log.info("replica %d ready on %s (pid %d, model %s)", replica.index, replica.device,
                     replica.process.pid, replica.info["model"])
            if not replica.started.done():
                replica.started.set_result(True)
        elif kind == "fatal":
            self._mark_dead(replica, f"failed to load the engine: {message[1]}")

    def _resolve(self, replica: Replica, key: str, *, result: Any = None, error: APIError | None = None) -> None:
        waiter = replica.waiters.pop(key, None)
        if waiter is None or waiter.done():
            return
        if error is not None:
            waiter.set_exception(error)
        else:
            waiter.set_result(result)

    def _on_exit(self, replica: Replica, exitcode: int | None) -> None:
        if self._closing and replica.state in ("ready", "starting"):
            replica.state = "stopped"
            return
        if replica.state != "dead":
            self._mark_dead(replica, _exit_reason(exitcode))

    def _mark_dead(self, replica: Replica, reason: str) -> None:
        was_ready = replica.state == "ready"
        replica.state = "dead"
        replica.error = replica.error or reason
        (log.error if was_ready else log.warning)("replica %d (%s) is dead: %s", replica.index, replica.device,
                                                  replica.error)
        error = APIError(503, f"engine replica {replica.index} ({replica.device}) died while serving this request "
                         f"({replica.error}); retry it, the server keeps serving from the other replicas",
                         type="service_unavailable", code="replica_died")
        for request_id, submission in replica.sequences.items():
            replica.failed += 1
            submission.queue.put_nowait(("error", error))
        replica.sequences.clear()
        for waiter in replica.waiters.values():
            if not waiter.done():
                waiter.set_exception(error)
        replica.waiters.clear()
        replica.groups.clear()
        if replica.started is not None and not replica.started.done():
            replica.started.set_result(False)
