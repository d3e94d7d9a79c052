"""Engine replicas: one process per device, each running the engine's continuous-batching loop.

The server process never loads the model. `ReplicaPool` starts one process per device
(multiprocessing "spawn", which CUDA needs), routes each choice to a live replica (prefix
affinity, then least busy: `ReplicaPool._choose`) and routes the token events back to the
waiting HTTP handlers:

    server (asyncio) ──inbox (mp.Queue)──▶ replica process: Engine.add_request / abort / step
                     ◀──events (mp.Pipe)──  TokenEvents of every step, batched per step

The messages are the named tuples of `inference.replica_messages` (builtins only, so the server
process never imports torch); the replica's side is `inference.replica_worker`. Each replica
drains its inbox between `Engine.step()` calls, so requests that arrive while others are
decoding join the running batch. Tokenization, the chat template and the context-length check
happen in the replica (it owns the tokenizer); a request is admitted (`Accepted`) or refused
(`Rejected`, an OpenAI-style 4xx) before the HTTP response starts. The data flow is in
docs/architecture.md.

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
import signal
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from inference.protocol import APIError
from inference.replica_messages import (
    Aborted,
    AbortRequest,
    Accepted,
    AddRequests,
    ComputeDivergence,
    DivergenceResult,
    FromReplica,
    LoadFailed,
    Ready,
    Rejected,
    RequestsFailed,
    StepEvents,
    Stop,
    ToReplica,
)
from inference.replica_worker import replica_main

log = logging.getLogger("inference.replicas")

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

    def send(self, message: ToReplica) -> None:
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
                replica.inbox.put(AbortRequest(request_id))


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
                replica.inbox.put(Stop())
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
            replica.send(AddRequests(group_id, {**payload, "choices": choices}))
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
            replica.send(ComputeDivergence(job_id, payload))
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

    def _on_message(self, replica: Replica, message: FromReplica) -> None:
        replica.last_message = time.monotonic()
        match message:
            case StepEvents(events, counters):
                replica.counters = counters
                for event in events:
                    submission = replica.sequences.get(event.request_id)
                    if submission is None:
                        continue
                    if event.finished:
                        del replica.sequences[event.request_id]
                        submission.finished.add(event.request_id)
                        replica.completed += 1
                    submission.queue.put_nowait(("event", submission.choice_of[event.request_id], event))
            case Accepted(group_id, prompt_tokens, implementation):
                replica.groups.pop(group_id, None)
                self._resolve(replica, group_id, result=(prompt_tokens, implementation))
            case Rejected(group_or_job_id, status, text, type=kind, param=param, code=code):
                self._resolve(replica, group_or_job_id, error=APIError(status, text, type=kind, param=param, code=code))
                for request_id in replica.groups.pop(group_or_job_id, ()):
                    replica.sequences.pop(request_id, None)  # never entered the engine
            case DivergenceResult(job_id, result):
                self._resolve(replica, job_id, result=result)
            case Aborted(request_id):
                if replica.sequences.pop(request_id, None) is not None:
                    replica.aborted += 1
            case RequestsFailed(request_ids, text, status):
                error = APIError(status, text, type="invalid_request_error" if status < 500 else "server_error",
                                 code="engine_error")
                for request_id in request_ids:
                    submission = replica.sequences.pop(request_id, None)
                    if submission is not None:
                        replica.failed += 1
                        submission.queue.put_nowait(("error", error))
            case Ready(info):
                replica.info = info
                replica.state = "ready"
                log.info("replica %d ready on %s (pid %d, model %s)", replica.index, replica.device,
                         replica.process.pid, replica.info["model"])
                if not replica.started.done():
                    replica.started.set_result(True)
            case LoadFailed(text):
                self._mark_dead(replica, f"failed to load the engine: {text}")

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
