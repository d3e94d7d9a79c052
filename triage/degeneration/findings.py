"""What an analysis says: its findings (``Reason``), the spans to mark (``Highlight``), the
result (``Analysis``), the analysis ``VERSION`` and every finding's code, and how a finding's
message writes its numbers."""

from __future__ import annotations

from dataclasses import dataclass, field

VERSION = "11"  # 11: counted rows past half again the size of a named set at the cut; one long number under
#    every counter; a piece said again and again inside a word; items numbered in bold; character loops of
#    13-16 characters; role headers then a turn that opens on code
# 10: bare numbers far past the count at the cut; records in code the same but for their id
#    after varied ones (or to the cut, or far past the count); a sequence asked for excuses a finished loop;
#    steps that differ in an ordinal are different items
# 9: a line said again with one slot changing (outside verse), counters in words (the fifth
#    step), a strict rotation of two or three items after real ones, ranges as requested counts (0 to 100
#    in steps of 10)
# 8: three lines only in code, markup or tables; a flood before a symbol tail; emoji only, not
#    grids or stars; answers and statuses are not short repeated items
# 7: counters inside names (room7), a word max_tokens cut after a counted copy, rotation at 30 %
# 6: three lines over 15 %, a third copy begun at the cut, short items repeated, items in rotation,
#    one number copied across a row, emoji floods left behind, items per copy against the count
# 5: implied set sizes, repeated blocks, mixed-prose third sayings, copies of one thing
# 3: bare role lines, counting loops, near-verbatim loops, nesting, logprob evidence (session 12)
# 2: repeat runs, character loops, CJK tokens, requested repetition (session 6)

LOOP_CODES = ("tail_loop", "fuzzy_loop", "counting_loop", "near_verbatim_loop", "repeat_run", "line_run",
              "char_loop", "symbol_flood", "nesting", "runaway_repetition")
# Every finding's code, loops first (the queue's reason filter offers them)
REASON_CODES = LOOP_CODES + ("confabulated_turn", "markup_flood", "leaked_end_marker", "unbalanced_fence",
                             "runaway", "empty")


@dataclass
class Reason:
    """One finding: a stable ``code``, a human-readable ``message`` with its evidence, the
    ``severity`` it contributes (0–1) and, where it has one, the character ``span`` it is about."""
    code: str
    message: str
    severity: float
    span: tuple[int, int] | None = None

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "severity": round(self.severity, 4),
                "span": list(self.span) if self.span else None}


@dataclass
class Highlight:
    """A character span of the response for the UI to mark (``text[start:end]``)."""
    start: int
    end: int
    kind: str      # "loop" | "fuzzy_loop" | "line_run" | "confabulated_turn" | "end_marker"
    label: str

    def to_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "kind": self.kind, "label": self.label}


@dataclass
class Analysis:
    degenerate: bool
    severity: float
    reasons: list[Reason] = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    highlights: list[Highlight] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-serialisable form (plain dicts, lists, str, int, float, bool, None)."""
        return {"degenerate": self.degenerate, "severity": round(self.severity, 4),
                "reasons": [r.to_dict() for r in self.reasons], "metrics": self.metrics,
                "highlights": [h.to_dict() for h in self.highlights], "version": VERSION}

    @property
    def reason_codes(self) -> list[str]:
        return [r.code for r in self.reasons]


def pct(x: float) -> str:
    """A share as a whole percentage (``0.257`` → ``26%``)."""
    return f"{100 * x:.0f}%"


def short(s: str, n: int = 60) -> str:
    """``s`` on one line (whitespace runs as one space), cut to ``n`` characters with an ellipsis."""
    s = " ".join(s[: 4 * n + 8].split())
    return s if len(s) <= n else s[: n - 1] + "…"


def r4(x: float) -> float:
    """A metric as reported: a float rounded to 4 places."""
    return round(float(x), 4)
