"""Lines and compression: runs of identical lines, the share of duplicate lines, and how well
the text compresses."""

from __future__ import annotations

import zlib
from dataclasses import dataclass


@dataclass
class LineStats:
    lines: int                 # non-blank lines
    duplicate_share: float     # 1 − unique / non-blank lines
    run: int                   # longest run of identical consecutive non-blank content lines
    run_line: str
    run_start_line: int        # index into text.split("\n")
    structural_run: int        # same for short / structural lines
    structural_run_line: str
    structural_run_start_line: int


def line_stats(text: str, min_chars: int) -> LineStats:
    raw = text.split("\n")
    best = (0, "", -1)
    best_s = (0, "", -1)
    prev = None
    run = 0
    run_start = -1
    n = 0
    seen = set()
    for i, line in enumerate(raw):
        s = line.strip()
        if not s:
            continue  # blank lines neither break nor extend a run
        n += 1
        seen.add(s)
        if s == prev:
            run += 1
        else:
            prev, run, run_start = s, 1, i
        if len(s) >= min_chars:
            if run > best[0]:
                best = (run, s, run_start)
        elif run > best_s[0]:
            best_s = (run, s, run_start)
    dup = 1.0 - len(seen) / n if n else 0.0
    return LineStats(n, dup, best[0], best[1], best[2], best_s[0], best_s[1], best_s[2])


def line_char_offset(text: str, line_index: int) -> int:
    if line_index <= 0:
        return 0
    pos = -1
    for _ in range(line_index):
        pos = text.find("\n", pos + 1)
        if pos < 0:
            return len(text)
    return pos + 1


def compression_ratio(data: bytes) -> float:
    """raw bytes / zlib (level 6) bytes; 0.0 for empty input."""
    if not data:
        return 0.0
    return len(data) / len(zlib.compress(data, 6))
