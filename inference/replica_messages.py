"""The messages between the server process and its engine replica processes.

`inference.replicas.ReplicaPool` (in the server) sends a replica the `ToReplica` messages through
its inbox (an mp.Queue); the replica (`inference.replica_worker`) answers with `FromReplica`
messages through its pipe. Each message is a named tuple of builtins (and `TokenEventData`), so
both ends pickle them and the server process never imports torch. Not to be confused with
`inference.protocol`, the OpenAI-style HTTP request schema the server's clients speak.

A chat completion's choices are admitted in groups, one `AddRequests` per replica it was spread
over; the replica answers each group once, `Accepted` or `Rejected`, and then streams its
sequences' tokens in `StepEvents`. A divergence job is one `ComputeDivergence`, answered by
`DivergenceResult` or `Rejected`. See docs/architecture.md for the data flow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple


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
# Server → replica
# --------------------------------------------------------------------------------------------


class AddRequests(NamedTuple):
    """Admit the choices of one chat completion that the pool routed to this replica.
    `payload`: the server's chat payload ({"messages", "kernel", "max_tokens", "max_tokens_limit"})
    plus "choices": [(request_id, sampling keywords), ...]."""

    group_id: str
    payload: dict[str, Any]


class AbortRequest(NamedTuple):
    """Stop one sequence (its client went away, or a sibling choice failed)."""

    request_id: str


class ComputeDivergence(NamedTuple):
    """Run one teacher-forced divergence job; `payload` is the server's checked /v1/divergence body."""

    job_id: str
    payload: dict[str, Any]


class Stop(NamedTuple):
    """Finish: the server is shutting down."""


# --------------------------------------------------------------------------------------------
# Replica → server
# --------------------------------------------------------------------------------------------


class Ready(NamedTuple):
    """The engine is loaded. `info`: {"model", "context_length", "device", "dtype", "vocab_size", "pid"}."""

    info: dict[str, Any]


class LoadFailed(NamedTuple):
    """The engine could not be loaded (bad path, no CUDA, ...); the replica exits."""

    message: str


class Accepted(NamedTuple):
    """Every choice of the group is in the engine. `implementation` is what this replica resolved
    the request's kernel settings to: {"attention": repr of the attention backend,
    "attention_backend": its name, "device", "dtype"}."""

    group_id: str
    prompt_tokens: int
    implementation: dict[str, Any]


class Rejected(NamedTuple):
    """An admission group or a divergence job was refused, as an OpenAI-style error
    (the fields of `inference.protocol.APIError`)."""

    group_or_job_id: str
    status: int
    message: str
    type: str = "invalid_request_error"
    param: str | None = None
    code: str | None = None


class StepEvents(NamedTuple):
    """The tokens of one engine step, and the engine's prefill counters after it
    ({"prefill_sequences", "prefill_tokens", "shared_prefill_tokens"}, shown by GET /health)."""

    events: list[TokenEventData]
    counters: dict[str, int]


class Aborted(NamedTuple):
    """An `AbortRequest` took effect: the sequence left the engine."""

    request_id: str


class RequestsFailed(NamedTuple):
    """The engine failed these running sequences (HTTP `status`: 400 for a request it cannot
    serve, 500 for its own error); the replica keeps serving the others."""

    request_ids: list[str]
    message: str
    status: int


class DivergenceResult(NamedTuple):
    """A divergence job's result: {"engine": the engine's per-position values, "prompt_tokens",
    "continuation_ids", "tokens", "reference", "candidate"}."""

    job_id: str
    result: dict[str, Any]


ToReplica = AddRequests | AbortRequest | ComputeDivergence | Stop
FromReplica = Ready | LoadFailed | Accepted | Rejected | StepEvents | Aborted | RequestsFailed | DivergenceResult
