"""What goes into the engine and what comes out: a request (prompt ids, sampling parameters,
kernel settings), the token events a step emits, and the result of a finished request.

These types are shared by the scheduler, the teacher-forced divergence, the replicas and the
server; they import nothing of the engine (docs/architecture.md, "Layout").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernels.settings import KernelSettings

MAX_TOP_LOGPROBS = 20


class EngineError(ValueError):
    """A request the engine cannot serve (the message says what was wrong)."""


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    seed: int | None = None
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0
    ignore_eos: bool = False          # benchmarks: always generate max_tokens

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        else:
            object.__setattr__(self, "stop", tuple(self.stop or ()))
        errors = []
        if not (isinstance(self.temperature, (int, float)) and 0 <= self.temperature <= 100):
            errors.append(f"temperature must be in [0, 100], got {self.temperature!r}")
        if not (isinstance(self.top_p, (int, float)) and 0 < self.top_p <= 1):
            errors.append(f"top_p must be in (0, 1], got {self.top_p!r}")
        if not (isinstance(self.top_k, int) and self.top_k >= 0):
            errors.append(f"top_k must be an integer >= 0 (0 = off), got {self.top_k!r}")
        if not (isinstance(self.min_p, (int, float)) and 0 <= self.min_p <= 1):
            errors.append(f"min_p must be in [0, 1], got {self.min_p!r}")
        if self.seed is not None and not (isinstance(self.seed, int) and 0 <= self.seed < 2**63):
            errors.append(f"seed must be a non-negative integer, got {self.seed!r}")
        if not (isinstance(self.max_tokens, int) and self.max_tokens >= 1):
            errors.append(f"max_tokens must be an integer >= 1, got {self.max_tokens!r}")
        if not all(isinstance(s, str) and s for s in self.stop):
            errors.append("stop must be non-empty strings")
        if not (isinstance(self.top_logprobs, int) and 0 <= self.top_logprobs <= MAX_TOP_LOGPROBS):
            errors.append(f"top_logprobs must be an integer in [0, {MAX_TOP_LOGPROBS}], got {self.top_logprobs!r}")
        if errors:
            raise EngineError("; ".join(errors))


@dataclass
class GenerationRequest:
    request_id: str
    prompt_ids: list[int]
    sampling: SamplingParams = field(default_factory=SamplingParams)
    kernel: KernelSettings = field(default_factory=KernelSettings)


@dataclass
class TokenEvent:
    request_id: str
    token_id: int
    text: str                                   # new text (held back while it may start a stop string)
    logprob: float | None                       # when sampling.logprobs (or top_logprobs) asked
    top_logprobs: list[tuple[str, int, float]] | None
    finished: bool
    finish_reason: str | None                   # "stop" | "length" | None


@dataclass
class GenerationResult:
    request_id: str
    prompt_ids: list[int]
    token_ids: list[int]                        # generated ids, the final EOS included when it ended so
    text: str                                   # EOS and stop string excluded
    finish_reason: str
    logprobs: list[float] | None
    top_logprobs: list[list[tuple[str, int, float]]] | None
    prompt_tokens: int
    completion_tokens: int
    ttft_s: float
    latency_s: float
    kernel: KernelSettings
