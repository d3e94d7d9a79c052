"""The individual metrics. Pure Python + numpy, each linear (or n log n in numpy) in the input.

Nothing here decides anything: ``verdict.py`` turns these numbers into findings.
"""

from __future__ import annotations

import math
import re
import zlib
from collections import Counter
from dataclasses import dataclass

import numpy as np

# Word and punctuation tokens: a run of word characters, or one non-space, non-word character.
# ``</div>`` → ``<`` ``/`` ``div`` ``>``.  Whitespace is not a token, so re-indented copies of a
# loop are still exact copies.
TOKEN_RE = re.compile(r"\w+|[^\w\s]")

_MULT = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit constant for rolling n-gram hashes


# ----------------------------------------------------------------------------------------------
# tokens
# ----------------------------------------------------------------------------------------------

def tokenize(text: str) -> list[str]:
    """Word and punctuation tokens of ``text`` (see ``TOKEN_RE``)."""
    return TOKEN_RE.findall(text)


def token_hashes(tokens) -> np.ndarray:
    """uint64 ids for a token list (Python's hash: equal tokens, equal ids; collisions ~2^-64)."""
    return np.fromiter(map(hash, tokens), dtype=np.int64, count=len(tokens)).view(np.uint64)


def ids_array(token_ids) -> np.ndarray:
    return np.asarray(token_ids, dtype=np.int64).view(np.uint64)


def token_char_start(text: str, index: int, total: int) -> int:
    """Character offset of the ``index``-th TOKEN_RE token of ``text`` (``total`` tokens in all).

    Counts from whichever end is nearer, so the cost is O(min(index, total − index)) matches.
    """
    if total <= 0 or index <= 0:
        m = TOKEN_RE.search(text)
        return m.start() if m else 0
    if index >= total:
        return len(text)
    from_end = total - index  # number of tokens from this one to the end
    if index <= from_end:
        for i, m in enumerate(TOKEN_RE.finditer(text)):
            if i == index:
                return m.start()
        return len(text)
    # Scan a growing suffix.  A suffix may cut a token in two, which adds at most one token at its
    # start, so once the suffix holds > from_end tokens the last from_end ones are exact.
    size = 64
    n = len(text)
    while True:
        start = max(0, n - size)
        starts = [m.start() for m in TOKEN_RE.finditer(text, start)]
        if len(starts) > from_end or start == 0:
            if len(starts) >= from_end:
                return starts[len(starts) - from_end]
            return start
        size *= 4


# ----------------------------------------------------------------------------------------------
# n-gram repetition
# ----------------------------------------------------------------------------------------------

def _ngram_hashes(ids: np.ndarray, n: int, prev: np.ndarray | None = None) -> np.ndarray:
    if prev is not None:  # extend the (n-1)-gram hashes by one token
        return prev[:-1] * _MULT + ids[n - 1:]
    g = ids.copy()
    for k in range(1, n):
        g = g[:-1] * _MULT + ids[k:]
    return g


def _n_unique(a: np.ndarray) -> int:
    if a.size == 0:
        return 0
    if a.size < 256:
        return len(set(a.tolist()))
    s = np.sort(a)
    return 1 + int(np.count_nonzero(s[1:] != s[:-1]))


def ngram_stats(ids: np.ndarray, max_n: int = 4) -> dict:
    """seq_rep_n (Welleck et al. 2019: 1 − unique n-grams / n-grams) and distinct_n
    (Li et al. 2016: unique n-grams / number of TOKENS — the paper's denominator) for n = 1..max_n.

    Both are 0 when the text has fewer than n tokens (nothing can repeat).
    """
    L = int(ids.size)
    out = {}
    g = None
    with np.errstate(over="ignore"):
        for n in range(1, max_n + 1):
            count = L - n + 1
            if count <= 0:
                out[f"seq_rep_{n}"] = 0.0
                out[f"distinct_{n}"] = 0.0
                continue
            g = ids if n == 1 else _ngram_hashes(ids, n, g)
            u = _n_unique(g)
            out[f"seq_rep_{n}"] = 1.0 - u / count
            out[f"distinct_{n}"] = u / L
    return out


def seq_rep(ids: np.ndarray, n: int) -> float:
    if ids.size < n:
        return 0.0
    with np.errstate(over="ignore"):
        g = _ngram_hashes(ids, n)
    return 1.0 - _n_unique(g) / g.size


# ----------------------------------------------------------------------------------------------
# tail loop
# ----------------------------------------------------------------------------------------------

@dataclass
class Loop:
    period: int      # tokens in one copy
    covered: int     # tokens at the end of the sequence that the copies cover (≥ 2 × period)
    total: int       # tokens in the sequence

    @property
    def copies(self) -> float:
        return self.covered / self.period

    @property
    def start(self) -> int:  # token index where the loop starts
        return self.total - self.covered

    @property
    def coverage(self) -> float:
        return self.covered / self.total if self.total else 0.0


def _match_len(r: np.ndarray, p: int) -> int:
    """Length of the longest common prefix of r and r[p:] (the Z-function at p), by galloping
    numpy comparisons: O(answer) work, O(log answer) numpy calls."""
    n = r.size - p
    k = 0
    step = 32
    while k < n:
        end = min(n, k + step)
        neq = r[k:end] != r[p + k:p + end]
        if neq.any():
            return k + int(neq.argmax())
        k = end
        step *= 4
    return n


def tail_loop(ids: np.ndarray, max_candidates: int = 512) -> Loop | None:
    """The shortest period p whose copies cover the most of the end of the sequence.

    Works on the reversed sequence r: a tail of length c has period p iff r[:c-p] == r[p:c], i.e.
    the Z-function z(p) ≥ c − p.  Only periods p with r[p] == r[0] and r[p+1] == r[1] can qualify
    (the last two tokens recur one period earlier); those candidates come from one vectorised
    comparison, and each is checked by ``_match_len`` in time proportional to its match.  Among
    candidates with at least two copies (z(p) ≥ p) the one covering the most tokens wins, ties to
    the shorter period (so a loop of period 4 is not reported as period 8).  The search stops at
    the first period that covers everything.  Linear overall; the candidate cap (smallest periods
    first) bounds the worst case and is far above the number of times any token pair recurs
    within one period of a real loop.
    """
    L = int(ids.size)
    if L < 4:
        return None
    r = ids[::-1]
    half = L // 2
    cand = np.flatnonzero(r[1:half + 1] == r[0]) + 1          # p in 1..half with r[p] == r[0]
    if cand.size == 0:
        return None
    cand = cand[r[cand + 1] == r[1]] if cand.size else cand   # p+1 ≤ half+1 < L always
    best: Loop | None = None
    for p in cand[:max_candidates].tolist():
        z = _match_len(r, p)
        if z < p:
            continue
        covered = p + z
        if best is None or covered > best.covered:
            best = Loop(period=p, covered=covered, total=L)
            if covered == L:
                break
    return best


# ----------------------------------------------------------------------------------------------
# lines
# ----------------------------------------------------------------------------------------------

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


# ----------------------------------------------------------------------------------------------
# compression
# ----------------------------------------------------------------------------------------------

def compression_ratio(data: bytes) -> float:
    """raw bytes / zlib (level 6) bytes; 0.0 for empty input."""
    if not data:
        return 0.0
    return len(data) / len(zlib.compress(data, 6))


# ----------------------------------------------------------------------------------------------
# markup balance
# ----------------------------------------------------------------------------------------------

TAG_RE = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:_-]*)(?:\s[^<>]*?)?(/?)>")
VOID_TAGS = frozenset("area base br col embed hr img input link meta param source track wbr "
                      "keygen command basefont frame isindex".split())
FENCE_RE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})", re.M)


def markup_balance(text: str) -> dict:
    """Per tag name, the surplus of closing over opening tags and vice versa (void and
    self-closing tags ignored), plus code-fence balance."""
    out: dict = {"tags": 0, "excess_close": {}, "excess_open": {}, "first_excess_close": None,
                 "code_fences": 0, "unbalanced_fence": False}
    if "<" in text:
        opens: Counter = Counter()
        closes: Counter = Counter()
        for slash, name, selfclose in TAG_RE.findall(text):
            name = name.lower()
            if selfclose or name in VOID_TAGS:
                continue
            if slash:
                closes[name] += 1
            else:
                opens[name] += 1
        out["tags"] = sum(opens.values()) + sum(closes.values())
        out["opens"] = dict(opens)
        out["closes"] = dict(closes)
        out["excess_close"] = {k: closes[k] - opens.get(k, 0) for k in closes if closes[k] > opens.get(k, 0)}
        out["excess_open"] = {k: opens[k] - closes.get(k, 0) for k in opens if opens[k] > closes.get(k, 0)}
    if "```" in text or "~~~" in text:
        fences = FENCE_RE.findall(text)
        # A fence closes only with the same character and at least the opener's length.
        open_fence = None
        count = 0
        for f in fences:
            count += 1
            if open_fence is None:
                open_fence = f
            elif f[0] == open_fence[0] and len(f) >= len(open_fence):
                open_fence = None
        out["code_fences"] = count
        out["unbalanced_fence"] = open_fence is not None
    return out


def fence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of fenced code blocks (an unclosed one runs to the end)."""
    spans = []
    open_at = None
    open_fence = None
    for m in FENCE_RE.finditer(text):
        f = m.group(1)
        if open_fence is None:
            open_fence, open_at = f, m.start()
        elif f[0] == open_fence[0] and len(f) >= len(open_fence):
            spans.append((open_at, m.end()))
            open_fence = None
    if open_fence is not None:
        spans.append((open_at, len(text)))
    return spans


# ----------------------------------------------------------------------------------------------
# confabulated turns
# ----------------------------------------------------------------------------------------------

# Chat-template markers that open a turn of a given role (group "role"), across template families.
TURN_MARKER_RE = re.compile(
    r"<\|im_start\|>[ \t]*(?P<r1>user|system|assistant|human)?"              # ChatML
    r"|<\|start_header_id\|>[ \t]*(?P<r2>user|system|assistant)"              # Llama 3
    r"|<\|(?P<r3>user|system|assistant|human)\|>"                             # Phi-3, Zephyr
    r"|<start_of_turn>[ \t]*(?P<r4>user|model)"                               # Gemma
    r"|<｜(?P<r5>User|Assistant)｜>"                                           # DeepSeek
    r"|(?P<inst>\[INST\])"                                                    # Llama 2 / Mistral
    r"|(?P<end><\|im_end\|>|<\|eot_id\|>|<end_of_turn>|<｜end▁of▁sentence｜>|<\|endoftext\|>|<\|end\|>|\[/INST\])"
)

# Lines that open a user turn in plain-text dialogue formats.
ROLE_LINE_RE = re.compile(
    r"^[ \t>*_]*(?:#{1,4}[ \t]*)?(?:\*\*)?(?P<role>User|USER|Human|HUMAN|Instruction|INSTRUCTION)"
    r"(?:\*\*)?[ \t]*:(?:\*\*)?[ \t]*(?P<rest>.*)$", re.M)
ASSISTANT_LINE_RE = re.compile(
    r"^[ \t>*_]*(?:#{1,4}[ \t]*)?(?:\*\*)?(?:Assistant|ASSISTANT|AI|Bot|Response|RESPONSE|GPT|Model)"
    r"(?:\*\*)?[ \t]*:", re.M)
_WORD_RE = re.compile(r"\w+")
_DIALOGUE_REQUEST_RE = re.compile(r"\b(dialog(ue)?|conversation|transcript|chat ?log|role[- ]?play|script)\b", re.I)


def _norm(s: str) -> str:
    return " ".join(_WORD_RE.findall(s.lower()))


def _in_spans(pos: int, spans) -> bool:
    for a, b in spans:
        if a <= pos < b:
            return True
    return False


def _in_inline_code(text: str, pos: int) -> bool:
    line_start = text.rfind("\n", 0, pos) + 1
    return text.count("`", line_start, pos) % 2 == 1


def confabulated_turns(text: str, messages, min_words: int) -> dict:
    """Chat-template turn markers and role lines that open a turn the conversation does not have.

    Returns {"markers": [(offset, marker, role)], "end_markers": [(offset, marker)],
             "role_lines": [(offset, line, invented_text)]}.
    Markers / role lines inside fenced or inline code are ignored (a response may legitimately
    explain a chat template).  A role line counts only when followed by ≥ ``min_words`` words
    that are not part of any message of the conversation; without ``messages`` (or with none that has text) it also needs a
    later assistant-role line (a dialogue going on by itself), and it is never counted when the
    user asked for a dialogue / transcript / script.
    """
    res = {"markers": [], "end_markers": [], "role_lines": []}
    has_marker_chars = "<" in text or "[INST]" in text
    spans = None
    if has_marker_chars:
        for m in TURN_MARKER_RE.finditer(text):
            if spans is None:
                spans = fence_spans(text)
            if _in_spans(m.start(), spans) or _in_inline_code(text, m.start()):
                continue
            if m.group("end"):
                res["end_markers"].append((m.start(), m.group(0)))
                continue
            role = (m.group("r1") or m.group("r2") or m.group("r3") or m.group("r4") or m.group("r5")
                    or ("user" if m.group("inst") else None))
            res["markers"].append((m.start(), m.group(0), (role or "").lower()))
    if (":" in text) and ROLE_LINE_RE.search(text):
        convo = []
        asked_dialogue = False
        for msg in messages or ():
            content = _message_text(msg)
            if content:
                convo.append(_norm(content))
                if _message_role(msg) == "user" and _DIALOGUE_REQUEST_RE.search(content):
                    asked_dialogue = True
        if not asked_dialogue:
            convo_text = " \n ".join(convo)
            if spans is None:
                spans = fence_spans(text)
            for m in ROLE_LINE_RE.finditer(text):
                if _in_spans(m.start(), spans):
                    continue
                rest = m.group("rest")
                if len(_WORD_RE.findall(rest)) < min_words:
                    # the turn's text may be on the next non-blank line
                    nxt = text[m.end():m.end() + 400].lstrip("\n")
                    rest = nxt.split("\n", 1)[0]
                words = _WORD_RE.findall(rest)
                if len(words) < min_words:
                    continue
                nrest = _norm(rest)[:200]
                if convo and nrest and nrest in convo_text:
                    continue  # quoting the real conversation
                if not convo and not ASSISTANT_LINE_RE.search(text, m.end()):
                    continue
                res["role_lines"].append((m.start(), m.group(0).strip()[:120], rest.strip()[:120]))
    return res


def _message_text(msg) -> str:
    if isinstance(msg, str):
        return msg
    if not isinstance(msg, dict):
        return ""
    c = msg.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):  # OpenAI content parts
        return " ".join(p.get("text", "") for p in c if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _message_role(msg) -> str:
    if isinstance(msg, dict) and isinstance(msg.get("role"), str):
        return msg["role"].lower()
    return ""


# ----------------------------------------------------------------------------------------------
# logprobs
# ----------------------------------------------------------------------------------------------

def clean_logprobs(values) -> np.ndarray:
    """Finite logprobs as float64 (None / NaN / non-numbers dropped, +values clipped to 0)."""
    out = []
    for v in values:
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)) and math.isfinite(v):
            out.append(min(float(v), 0.0))
        elif isinstance(v, (int, float)) and v == -math.inf:
            out.append(-1e4)
    return np.asarray(out, dtype=np.float64)
