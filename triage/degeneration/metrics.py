"""The individual metrics. Pure Python + numpy, each linear (or n log n in numpy) in the input.

Nothing here decides anything: ``verdict.py`` turns these numbers into findings.
"""

from __future__ import annotations

import math
import re
import unicodedata
import zlib
from collections import Counter
from dataclasses import dataclass

import numpy as np

# Word and punctuation tokens: a run of word characters, or one non-space, non-word character.
# ``</div>`` → ``<`` ``/`` ``div`` ``>``.  Whitespace is not a token, so re-indented copies of a
# loop are still exact copies.  Han characters and kana (scripts written without spaces) are one
# token each, as CJK text is usually measured: otherwise a whole clause would be one "word" and a
# loop inside it (所以所以所以…) invisible.
_CJK = "\u3005\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f"
TOKEN_RE = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])\w)+|[^\w\s]")
_CJK_CHAR_RE = re.compile(f"[{_CJK}]")

_MULT = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit constant for rolling n-gram hashes


# ----------------------------------------------------------------------------------------------
# tokens
# ----------------------------------------------------------------------------------------------

def tokenize(text: str) -> list[str]:
    """Word and punctuation tokens of ``text`` (see ``TOKEN_RE``)."""
    return TOKEN_RE.findall(text)


@dataclass
class Tokens:
    """The TOKEN_RE tokens of a text as arrays: char ``starts`` / ``ends`` (str indices) and a
    uint64 ``hashes`` id per token (equal tokens ↔ equal ids, up to 64-bit hash collisions)."""
    starts: np.ndarray
    ends: np.ndarray
    hashes: np.ndarray
    is_number: np.ndarray  # token made only of digits
    is_word: np.ndarray    # a word token of ≥ 2 characters without digits, or one CJK character (prose-like)
    cp: np.ndarray | None = None  # the text's code points (uint8 for ASCII text, else uint32)
    has_digit: np.ndarray | None = None  # token with at least one digit (numbers and ``test_case_5``)
    digit: np.ndarray | None = None      # per character of the text: a digit (``\\d``)

    def __len__(self) -> int:
        return int(self.starts.size)

    def text_of(self, text: str, i: int) -> str:
        return text[int(self.starts[i]):int(self.ends[i])]


_B = np.uint64(0x100000001B3)           # odd base of the polynomial token hash
_BINV = np.uint64(pow(0x100000001B3, -1, 1 << 64))
_CHUNK = 1 << 20
_POW_CACHE: dict = {}

# character classes as TOKEN_RE sees them: 0 whitespace, 1 word (\w), 2 other (punctuation),
# 3 a CJK character (a token by itself, counted as a word)
_ASCII_CLASS = np.array([1 if (chr(c).isalnum() or c == 95) else 0 if chr(c).isspace() else 2
                         for c in range(128)], dtype=np.uint8)
_ASCII_DIGIT = np.array([chr(c).isdigit() for c in range(128)], dtype=bool)
_ASCII_INFO = _ASCII_CLASS | (_ASCII_DIGIT.astype(np.uint8) << 2)
_WORD_CHAR_RE = re.compile(r"\w")
_SPACE_CHAR_RE = re.compile(r"\s")
_DIGIT_CHAR_RE = re.compile(r"\d")


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """B^i and B^-i (mod 2^64) for i < n, cached for the usual chunk size."""
    got = _POW_CACHE.get("p")
    if got is None or got[0].size < n:
        size = max(n, _CHUNK + 4096)
        with np.errstate(over="ignore"):
            p = np.full(size, _B, dtype=np.uint64)
            p[0] = 1
            p = np.cumprod(p, dtype=np.uint64)
            q = np.full(size, _BINV, dtype=np.uint64)
            q[0] = 1
            q = np.cumprod(q, dtype=np.uint64)
        got = (p, q)
        if size <= 4 * _CHUNK:
            _POW_CACHE["p"] = got
    return got[0][:n], got[1][:n]


def _char_classes(cp: np.ndarray, ascii_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    if ascii_only:  # (one table look-up: class in the low bits, digit in bit 2)
        info = _ASCII_INFO.take(cp)
        return info & 3, info >= 4
    info = _ASCII_INFO.take(np.minimum(cp, 127))
    cls, dig = info & 3, info >= 4
    na = cp >= 128
    if np.count_nonzero(na):
        u, inv = np.unique(cp[na], return_inverse=True)
        chars = [chr(c) if c < 0x110000 else "\ufffd" for c in u.tolist()]
        ucls = np.array([3 if _CJK_CHAR_RE.match(ch) else 1 if _WORD_CHAR_RE.match(ch)
                         else 0 if _SPACE_CHAR_RE.match(ch) else 2 for ch in chars], dtype=np.uint8)
        udig = np.array([bool(_DIGIT_CHAR_RE.match(ch)) for ch in chars], dtype=bool)
        cls[na] = ucls[inv]
        dig[na] = udig[inv]
    return cls, dig


def token_arrays(text: str) -> Tokens:
    """TOKEN_RE tokenisation, vectorised: ~10 numpy passes over the characters, no per-token
    Python objects.  Token hashes are polynomial hashes Σ c_j·B^j (mod 2^64) of the code points,
    computed from prefix sums in chunks of ~1 M characters (bounded memory)."""
    if not text:
        e = np.zeros(0, dtype=np.int64)
        return Tokens(e, e.copy(), np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=bool),
                      np.zeros(0, dtype=bool), np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=bool),
                      np.zeros(0, dtype=bool))
    if text.isascii():  # (str knows: no scan)
        cp = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
        cls, dig = _char_classes(cp, ascii_only=True)
    else:
        cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        cls, dig = _char_classes(cp)
    n = cp.size
    # a token starts at a character that is not whitespace and does not continue a word (class
    # 1 after class 1), and ends likewise before one that does not continue it
    word = cls == 1
    go_on = word[1:] & word[:-1]
    go_on = ~go_on
    tok = cls != 0
    first = tok.copy()
    first[1:] &= go_on
    starts = first.nonzero()[0]
    tok[:-1] &= go_on
    ends = tok.nonzero()[0]
    ends += 1
    length = ends - starts
    T = starts.size
    start_cls = cls[starts]
    # digits per token: the token each digit is in (the last that starts at or before it)
    digits = (np.bincount(starts.searchsorted(dig.nonzero()[0], side="right") - 1, minlength=T) if T
              else np.zeros(0, dtype=np.int64))
    is_number = digits == length
    no_digit = digits == 0
    is_word_tok = (start_cls == 1) & no_digit
    is_word_tok &= length > 1
    is_word_tok |= start_cls == 3
    if T and n <= _CHUNK:  # (one chunk; uint64 array arithmetic wraps around silently)
        b = int(ends[-1])
        p, q = _powers(b)
        h = np.empty(b + 1, dtype=np.uint64)
        h[0] = 0
        np.add.accumulate(np.multiply(cp[:b], p, dtype=np.uint64), out=h[1:])
        hashes = h[ends]
        hashes -= h[starts]
        hashes *= q[starts]
        return Tokens(starts, ends, hashes, is_number, is_word_tok, cp, ~no_digit, dig)
    hashes = np.empty(T, dtype=np.uint64)
    a = 0          # first char of the chunk
    ti = 0         # first token of the chunk
    while ti < T:
        # chunk = tokens whose start lies in [a, a + _CHUNK); extend to cover the last token
        tj = int(np.searchsorted(starts, a + _CHUNK, side="left"))
        if tj <= ti:
            tj = ti + 1
        b = int(ends[tj - 1])
        p, q = _powers(b - a)
        h = np.empty(b - a + 1, dtype=np.uint64)
        h[0] = 0
        np.add.accumulate(np.multiply(cp[a:b], p, dtype=np.uint64), out=h[1:])
        s = starts[ti:tj] - a
        e = ends[ti:tj] - a
        hashes[ti:tj] = (h[e] - h[s]) * q[s]
        a = b if tj >= T else int(starts[tj])
        ti = tj
    return Tokens(starts, ends, hashes, is_number, is_word_tok, cp, ~no_digit, dig)


_DIGIT_BLIND_SALT = np.uint64(0x243F6A8885A308D3)


def digit_blind_hashes(toks: Tokens, where: np.ndarray) -> np.ndarray:
    """uint64 ids of the tokens ``where`` (indices) with each run of digits replaced by one ``#``
    (``test_case_5`` and ``test_case_12`` get the same id): the polynomial token hash of that
    string, salted, so equal ids ↔ equal strings (up to 64-bit collisions) as with ``hash()`` of
    ``re.sub(r"\\d+", "#", token)``; vectorised over the tokens' characters."""
    st = toks.starts[where]
    lens = toks.ends[where] - st
    m = int(where.size)
    off = np.zeros(m, dtype=np.int64)
    np.cumsum(lens[:-1], out=off[1:])
    total = int(off[-1] + lens[-1]) if m else 0
    if total == 0:
        return np.zeros(0, dtype=np.uint64)
    pos = np.arange(total, dtype=np.int64)
    pos += (st - off).repeat(lens)                  # the text index of each character
    c = toks.cp[pos].astype(np.uint64)
    d = toks.digit[pos]
    c[d] = 35                                          # "#"
    keep = np.ones(total, dtype=bool)
    keep[1:] = ~(d[1:] & d[:-1])                       # a digit after a digit of the same run …
    keep[off] = True                                   # … of the same token
    nk = np.add.reduceat(keep, off, dtype=np.int64)    # ≥ 1: a token's first character is kept
    koff = np.zeros(m, dtype=np.int64)
    np.cumsum(nk[:-1], out=koff[1:])
    ck = c[keep]
    j = np.arange(ck.size, dtype=np.int64) - koff.repeat(nk)
    p, _ = _powers(int(nk.max()))
    h = np.add.reduceat(ck * p[j], koff)   # (uint64 array arithmetic wraps around silently)
    return h ^ _DIGIT_BLIND_SALT


def token_hashes(tokens) -> np.ndarray:
    """uint64 ids for a list of token strings (Python's hash; for callers with their own tokens)."""
    return np.fromiter(map(hash, tokens), dtype=np.int64, count=len(tokens)).view(np.uint64)


def ids_array(token_ids) -> np.ndarray:
    return np.asarray(token_ids, dtype=np.int64).view(np.uint64)


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
    small = ids.tolist() if L < 80 else None  # (a short text: sets of tuples beat numpy calls)
    ranks = None
    if 80 <= L < 256 and max_n <= 4:
        # (exact, in numpy: each token's rank among the distinct tokens, n-grams as integers
        # r_1·U^(n-1) + … + r_n < U^4 < 2^32)
        uniq, ranks = np.unique(ids, return_inverse=True)
        U = int(uniq.size)
        key = ranks.astype(np.int64)
    for n in range(1, max_n + 1):
        count = L - n + 1
        if count <= 0:
            out[f"seq_rep_{n}"] = 0.0
            out[f"distinct_{n}"] = 0.0
            continue
        if small is not None:
            u = len(set(small)) if n == 1 else len(set(zip(*(small[k:] for k in range(n)))))
        elif ranks is not None:
            if n == 1:
                u = U
            else:
                key = key[:-1] * U + ranks[n - 1:]
                srt = np.sort(key)
                u = 1 + int(np.count_nonzero(srt[1:] != srt[:-1]))
        else:  # (uint64 array arithmetic wraps around silently)
            g = ids if n == 1 else _ngram_hashes(ids, n, g)
            u = _n_unique(g)
        out[f"seq_rep_{n}"] = 1.0 - u / count
        out[f"distinct_{n}"] = u / L
    return out


def tail_repeat(ids: np.ndarray, n: int = 4, window: int | None = None) -> tuple[float, int, float]:
    """Share of the n-grams in the last ``window`` tokens (default: the last quarter, at least 64)
    that already occurred EARLIER in the response – "is the end of the response re-saying what it
    already said?" – and the share that occurred at least TWICE earlier (a third saying: a second
    copy of a passage is not yet a loop).  Returns (share, number of n-grams in the window,
    share seen twice)."""
    L = int(ids.size)
    count = L - n + 1
    if count <= 0:
        return 0.0, 0, 0.0
    if window is None:
        window = max(L // 4, 64)
    k = max(1, min(count, window - n + 1))
    g = _ngram_hashes(ids, n)   # (uint64 array arithmetic wraps around silently)
    # within each run of equal sorted values (stable: by position) the first is the n-gram's first
    # occurrence, the second its second
    order = g.argsort(kind="stable")
    sg = g[order]
    head = np.empty(count, dtype=bool)
    head[0] = True
    np.not_equal(sg[1:], sg[:-1], out=head[1:])
    starts = head.nonzero()[0]
    rank = np.arange(count) - starts[np.cumsum(head) - 1]
    seen = np.zeros(count, dtype=bool)
    seen[order[rank >= 1]] = True
    twice = np.zeros(count, dtype=bool)
    twice[order[rank >= 2]] = True
    return np.count_nonzero(seen[count - k:]) / k, k, np.count_nonzero(twice[count - k:]) / k


def tail_phrase_count(ids: np.ndarray, words: np.ndarray, n: int = 7, window: int = 128,
                      min_words: int = 5) -> int:
    """How many times the most repeated phrase of the last ``window`` tokens occurs there: the
    n-grams with ≥ ``min_words`` word tokens (not markup or punctuation runs).  A response cut
    while circling on one clause says it again and again within a few sentences."""
    L = int(ids.size)
    if L < n + window // 2:
        return 0
    a = max(0, L - window)
    g = _ngram_hashes(ids[a:], n)
    w = np.cumsum(np.concatenate(([0], words[a:].astype(np.int32))))
    g = g[(w[n:] - w[:-n]) >= min_words]
    if g.size == 0:
        return 0
    g.sort()
    heads = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1], [True])))
    return int(np.diff(heads).max())


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

    trimmed: int = 0  # trailing tokens excluded (a last word cut in the middle by max_tokens)

    @property
    def start(self) -> int:
        """Token index where the first WHOLE copy starts (a partial copy before it, which a
        periodic tail always allows — e.g. the ``>`` of ``<body>`` before ``</div></div>…`` — is
        left out so that highlights start on a copy boundary)."""
        return self.total - self.trimmed - (self.covered // self.period) * self.period

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
        i = int(neq.argmax())
        if neq[i]:
            return k + i
        k = end
        step *= 4
    return n


_PROBE_K = np.arange(3, 16)


def tail_loop(ids: np.ndarray, max_candidates: int = 512) -> Loop | None:
    """The shortest period p whose copies cover the most of the end of the sequence.

    Works on the reversed sequence r: a tail of length c has period p iff r[:c-p] == r[p:c], i.e.
    the Z-function z(p) ≥ c − p.  Only periods p with r[p+i] == r[i] for i < 3 are considered
    (the last three tokens recur one period earlier; so a loop must match ≥ 3 tokens beyond its
    first copy – far below any threshold); those candidates come from one vectorised
    comparison, and each is checked by ``_match_len`` in time proportional to its match.  Among
    candidates with at least two copies (z(p) ≥ p) the one covering the most tokens wins, ties to
    the shorter period (so a loop of period 4 is not reported as period 8).  The search stops at
    the first period that covers everything.  Linear overall; the candidate cap (smallest periods
    first) bounds the worst case and is far above the number of times any token pair recurs
    within one period of a real loop.
    """
    L = int(ids.size)
    if L < 3:
        return None
    r = ids[::-1]
    half = L // 2
    cand = (r[1:half + 1] == r[0]).nonzero()[0] + 1          # p in 1..half with r[p] == r[0]
    if cand.size == 0:
        return None
    cand = cand[r[cand + 1] == r[1]]                           # p+1 ≤ half+1 < L always
    if L >= 6:
        cand = cand[r[cand + 2] == r[2]]                       # p+2 ≤ half+2 < L for L ≥ 6
    cand = cand[:max_candidates]
    if cand.size > 4 and L >= 32:
        # (cheap first, all candidates at once: a period p needs r[p + k] == r[k] for every k < p,
        # so one that fails at some k in 3..15 could never cover two copies)
        bad = r[cand[:, None] + _PROBE_K] != r[_PROBE_K]
        bad &= _PROBE_K < cand[:, None]
        cand = cand[~bad.any(axis=1)]
    best: Loop | None = None
    for p in cand.tolist():
        if best is not None and p % best.period == 0 and p < best.covered:
            # a multiple of the best period inside its loop mismatches exactly where the best
            # does (the loop is best.period-periodic there), so it cannot cover more
            continue
        z = _match_len(r, p)
        if z < p:
            continue
        covered = p + z
        if best is None or covered > best.covered:
            best = Loop(period=p, covered=covered, total=L)
            if covered == L:
                break
    return best


def tail_loop_tolerant(ids: np.ndarray, last_may_be_cut: bool = True) -> Loop | None:
    """``tail_loop``, also trying without the last token: a response cut by max_tokens often ends
    in the middle of a word (``…</div></d``), which as a token differs from the loop's.  The
    caller passes ``last_may_be_cut=False`` when the last token cannot be a fragment (it is
    punctuation, or whitespace follows it)."""
    a = tail_loop(ids)
    if ids.size < 4 or not last_may_be_cut:
        return a
    b = tail_loop(ids[:-1])
    if b is not None and (a is None or b.covered > a.covered + 1):
        return Loop(period=b.period, covered=b.covered, total=int(ids.size), trimmed=1)
    return a


@dataclass
class Run:
    """The longest stretch anywhere in a sequence that repeats a short unit back to back."""
    period: int   # tokens in one copy
    start: int    # index of the first token of the stretch
    covered: int  # tokens the stretch covers (≥ 2 × period)

    @property
    def copies(self) -> float:
        return self.covered / self.period


def longest_run(ids: np.ndarray, max_period: int = 32, max_tokens: int = 1 << 18, min_copies: int = 2,
                words: np.ndarray | None = None, word_share: float = 0.5) -> Run | None:
    """The stretch of ``ids`` covered by the most tokens of back-to-back copies of one unit of
    ≤ ``max_period`` tokens, wherever it is (``tail_loop`` only sees the end: a model that loops
    and then recovers, ``is is is … is.``, leaves the loop inside the text). For each period p,
    ``ids[i] == ids[i + p]`` over a run of r positions is a stretch of r + p tokens with period p;
    ties go to the shorter period; None when no unit repeats ``min_copies`` times. ``words``
    (bool per token): only runs at least ``word_share`` of whose tokens are words are wanted
    (prose; the caller checks the unit), so a period whose matches at word tokens number fewer
    than that share of what a run needs is ruled out: most periods of code and markup at once. O(max_period ×
    n) vectorised comparisons over the last ``max_tokens`` tokens: all periods in one 2-D pass for
    a typical response, one pass per period for long ones."""
    base = max(0, int(ids.size) - max_tokens)
    seq = ids[base:]
    n = int(seq.size)
    P = min(max_period, n // max(2, min_copies))  # (min_copies copies of p tokens need n ≥ min_copies·p)
    if P < 1:
        return None
    if n <= _RUN_2D_MAX_TOKENS:
        # shifted[p-1, i] = padded[i + p]: every period's shifted copy of the sequence, as a view
        # (positions past the end are sentinels, so each row of a comparison ends in a mismatch
        # and no run crosses into the next row)
        padded = np.concatenate((seq, _RUN_SENTINELS[:P]))
        size = padded.itemsize
        shifted = np.ndarray((P, n), dtype=padded.dtype, buffer=padded, offset=size, strides=(size, size))
        need = (min_copies - 1) * np.arange(1, P + 1)  # matches a run needs for min_copies copies
        stride = max(1, min_copies - 1)
        if stride > 1 and P * n > _RUN_SAMPLE_ABOVE:
            # A run of need(p) = (min_copies - 1)·p matches holds p consecutive positions that
            # are multiples of min_copies - 1: first compare only there (a fraction of the work)
            # and keep the periods with p such matches in a row
            m = -(-n // stride)
            grid = np.ndarray((P, m), dtype=padded.dtype, buffer=padded, offset=size,
                              strides=(size, stride * size)) == seq[::stride]
            periods = _rows_with_runs(grid)
            if periods.size == 0:
                return None
            eq = shifted[periods - 1] == seq
        else:
            periods = np.arange(1, P + 1)
            eq = shifted == seq
        flat = eq.ravel()
        edges = (flat[1:] != flat[:-1]).nonzero()[0] + 1  # run starts and ends, alternating
        if flat[0]:
            edges = np.concatenate(([0], edges))
        begin, length = edges[0::2], edges[1::2] - edges[0::2]
        row = begin // n
        ok = length >= need[periods[row] - 1]
        if not np.count_nonzero(ok):
            return None
        if words is not None:  # the period's matches at word tokens, over the whole row
            word_matches = np.count_nonzero(eq & words[base:], axis=1)
            ok &= (word_matches >= np.floor(need[periods - 1] * word_share))[row]
            if not np.count_nonzero(ok):
                return None
        covered = np.where(ok, length + periods[row], -1)
        k = int(covered.argmax())  # the first of the longest: shortest period, then earliest run
        period = int(periods[row[k]])
        return Run(period=period, start=base + int(begin[k]) - int(row[k]) * n, covered=int(length[k]) + period)
    best: Run | None = None
    for p in range(1, P + 1):
        eq = np.concatenate(([False], seq[p:] == seq[:-p], [False]))
        edges = (eq[1:] != eq[:-1]).nonzero()[0]  # run starts and ends, alternating
        if edges.size == 0:
            continue
        lengths = edges[1::2] - edges[::2]
        k = int(lengths.argmax())
        covered = int(lengths[k]) + p
        if covered >= min_copies * p and (best is None or covered > best.covered):
            best = Run(period=p, start=base + int(edges[2 * k]), covered=covered)
    return best


_RUN_2D_MAX_TOKENS = 8192


_RUN_SAMPLE_ABOVE = 32 * 512  # (periods × tokens above which the sampled first look pays off)


def _rows_with_runs(rows: np.ndarray) -> np.ndarray:
    """1 + the indices of the rows r of a 2-D bool array that hold a run of ≥ r + 1 Trues."""
    P, m = rows.shape
    flat = np.concatenate((rows, np.zeros((P, 1), dtype=bool)), axis=1).ravel()  # rows end in False
    edges = (flat[1:] != flat[:-1]).nonzero()[0] + 1
    if flat[0]:
        edges = np.concatenate(([0], edges))
    begin = edges[0::2]
    row = begin // (m + 1)
    row = row[edges[1::2] - begin > row]
    return row[np.concatenate(([True], row[1:] != row[:-1]))] + 1 if row.size else row


# ids no token hashes to (in practice): they end every sequence so no run crosses its end
_RUN_SENTINELS = np.arange(0xFFFF_FFFF_FFFF_FF00, 0xFFFF_FFFF_FFFF_FF80, dtype=np.uint64)


_CHAR_LOOP_PROBE = 24  # (the shortest loop any rule takes: 30 characters)


def char_tail_loop(text: str, max_period: int = 16, window: int = 8192) -> Run | None:
    """A loop at the end of the text measured in characters, for what word tokens cannot see:
    ``3.14159…000000`` and ``的的的…`` are one token each, and a flood of newlines is no token at
    all. Over the last ``window`` characters, the period ≤ ``max_period`` whose copies cover the
    longest suffix (ties to the shorter period); None unless the last 48 characters are periodic
    (every threshold is far above that). Linear in the window."""
    tail = text[-window:]
    n = len(tail)
    if n < 4:
        return None
    probe = tail[-_CHAR_LOOP_PROBE:]  # cheap first: is the end periodic at all?
    if not any(probe[p:] == probe[:-p] for p in range(1, min(max_period, len(probe) // 2) + 1)):
        return None
    cp = np.frombuffer(tail.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    best: Run | None = None
    for p in range(1, min(max_period, n // 2) + 1):
        neq = (cp[p:] != cp[:-p]).nonzero()[0]
        run = (n - p) - (int(neq[-1]) + 1) if neq.size else n - p  # periodic suffix beyond one copy
        covered = run + p
        if covered >= 2 * p and (best is None or covered > best.covered):
            best = Run(period=p, start=len(text) - covered, covered=covered)
    return best


_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
                      "ninety": 90, "hundred": 100, "a hundred": 100, "one hundred": 100, "a thousand": 1000,
                      "thousand": 1000, "twice": 2, "thrice": 3})
_COUNT = r"(?P<n>\d{1,5}|" + "|".join(sorted((re.escape(w) for w in _NUMBER_WORDS), key=len, reverse=True)) + ")"
# A repetition verb, its object, then the count: "write the word 'hello' 50 times", "repeat the
# sentence '…' twenty times", "say it twice". Not "what is 500 times 3" (no verb; a number after
# the count) nor "50x faster".
_REPEAT_REQUEST_RE = re.compile(
    r"\b(?:repeat|write|say|print|type|spell|list|output|copy|echo|sing|chant|shout|draw|generate|give me)\b"
    r"(?P<obj>[^\n]{0,200}?)(?:\b" + _COUNT + r"\s*times\b(?!\s*\d)|\b(?P<w>twice|thrice)\b)", re.I)


def requested_repetition(messages) -> tuple[int, str] | None:
    """(N, the words of what is to be repeated) when the last user message asks for something N
    times ("write 'hello' 50 times", "repeat this sentence twenty times"), else None: N copies of
    the unit the user named are the answer, not a loop. The object is what stands between the
    verb and the count, so a loop of other words is never excused."""
    for msg in reversed(list(messages or ())):
        if _message_role(msg) != "user":
            continue
        best = None
        for m in _REPEAT_REQUEST_RE.finditer(_message_text(msg)):
            word = (m.group("n") or m.group("w")).lower()
            count = int(word) if word.isdigit() else _NUMBER_WORDS[word]
            if best is None or count > best[0]:
                best = (count, norm_words(m.group("obj")))
        return best
    return None


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
        for (slash, name, selfclose), k in Counter(TAG_RE.findall(text)).items():  # C-level count
            name = name.lower()
            if selfclose or name in VOID_TAGS:
                continue
            if slash:
                closes[name] += k
            else:
                opens[name] += k
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


_FLOOD_GLUE = frozenset(" \t\r\n|*_-~.,:;\u200d\ufe0f\ufffd")
_SYMBOL_CATEGORIES = frozenset(("So", "Sk"))


def symbol_tail_run(text: str, max_chars: int = 4096) -> dict | None:
    """The stretch at the end of ``text`` made only of symbols (Unicode So / Sk: emoji, dingbats)
    and what glues them (spaces, ``|``, zero-width joiners, a cut character): {"start", "symbols",
    "kinds", "top", "top_count"}, or None when the text does not end in a symbol.  Scans at most
    the last ``max_chars`` characters (backwards, stops at the first other character)."""
    counts: dict[str, int] = {}
    i = len(text)
    stop = max(0, i - max_chars)
    while i > stop:
        c = text[i - 1]
        if c in _FLOOD_GLUE:
            i -= 1
            continue
        if c < "\u2000" or unicodedata.category(c) not in _SYMBOL_CATEGORIES:
            break
        counts[c] = counts.get(c, 0) + 1
        i -= 1
    if not counts:
        return None
    while i < len(text) and text[i] in _FLOOD_GLUE:
        i += 1
    top = max(counts, key=counts.get)
    return {"start": i, "symbols": sum(counts.values()), "kinds": len(counts), "top": top, "top_count": counts[top]}


def fence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of fenced code blocks (an unclosed one runs to the end)."""
    spans = []
    if "```" not in text and "~~~" not in text:  # (a fence holds one of them)
        return spans
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
# A role as a heading of its own (``### User``, the turn's text on the next lines): a turn only
# when an assistant heading follows (a ``### User`` section of API docs has none).
HEADING_ROLE_RE = re.compile(r"^[ \t]*#{1,4}[ \t]*(?:\*\*)?(?P<role>User|USER|Human|HUMAN)(?:\*\*)?[ \t]*(?P<rest>)$",
                             re.M)
HEADING_ASSISTANT_RE = re.compile(r"^[ \t]*#{1,4}[ \t]*(?:\*\*)?(?:Assistant|ASSISTANT|AI|Bot|GPT)(?:\*\*)?[ \t]*:?[ \t]*$",
                                  re.M)
_ROLE_WORDS = ("User", "USER", "Human", "HUMAN", "Instruction", "INSTRUCTION")
# ROLE_LINE_RE around one of its role words: what may stand before it on its line, and after it
_ROLE_PREFIX_RE = re.compile(r"[ \t>*_]*(?:#{1,4}[ \t]*)?(?:\*\*)?")
_ROLE_SUFFIX_RE = re.compile(r"(?:\*\*)?[ \t]*:")


def _has_role_line(text: str) -> bool:
    """``ROLE_LINE_RE.search(text) is not None``, from the role words' occurrences (``str.find``)
    instead of a regex attempt at every character; past 32 occurrences, the regex."""
    seen = 0
    for w in _ROLE_WORDS:
        i = text.find(w)
        while i >= 0:
            seen += 1
            if seen > 32:
                return ROLE_LINE_RE.search(text) is not None
            if (_ROLE_SUFFIX_RE.match(text, i + len(w))
                    and _ROLE_PREFIX_RE.fullmatch(text, text.rfind("\n", 0, i) + 1, i)):
                return True
            i = text.find(w, i + 1)
    return False
_HEADING_ASSISTANT_WORDS = ("Assistant", "ASSISTANT", "AI", "Bot", "GPT")
_WORD_RE = re.compile(r"\w+")
_DIALOGUE_REQUEST_RE = re.compile(
    r"\b(dialog(ue)?|conversation|transcript|chat ?log|role[- ]?play|script)\b"
    # or a request that names the format: "User/Assistant", a quoted 'User:' label (a bare
    # "User: …" in the prompt is more often a pasted conversation to work on)
    r"|\b(user|human|customer)\s*/\s*(assistant|ai|bot|agent|model)\b|['\"“‘`](user|human|customer)\s*:?['\"”’`]",
    re.I)


# Role names as chat templates write them (lowercase): ChatML, Llama 3, Qwen, DeepSeek use user /
# assistant / system; Gemma writes ``model`` for the assistant.  With the special tokens skipped (the
# vLLM / SGLang default) a turn the model invents past its end of turn reaches the router as a line
# that is just the role name.
TEMPLATE_ROLES = {"chatml": ("user", "assistant", "system"), "llama3": ("user", "assistant", "system", "ipython"),
                  "gemma": ("user", "model"), "default": ("user", "assistant", "system")}
_USER_ROLES = frozenset(("user", "human"))
_ANSWER_ROLES = frozenset(("assistant", "model", "bot", "gpt"))
_KNOWN_ROLES = frozenset(("user", "assistant", "system", "developer", "tool", "human", "model", "ipython"))
# What a user turn opens with: a question, a request, a greeting, a first-person statement.
_REQUEST_START_RE = re.compile(
    r"^\W{0,3}(?:can|could|would|will|should|please|what|what's|whats|how|why|who|when|where|which|whose|is|are|"
    r"do|does|did|was|were|have|has|write|tell|give|explain|list|create|make|describe|show|help|translate|"
    r"summari[sz]e|generate|find|suggest|recommend|compare|define|calculate|convert|name|i|i'm|im|i've|i'd|my|"
    r"hi|hello|hey|thanks|thank|now|also|and|ok|okay|great|yes|no|sure|"
    # instructions as instruction-tuning data writes them: "Your response should …", "You're a …",
    # "Rewrite …", a letter to work on ("Dear …"), "Imagine …", "Given …"
    r"you|you're|your|dear|imagine|suppose|pretend|act|consider|given|let's|rewrite|edit|improve|solve|fix|"
    r"review|analy[sz]e|draft|compose|design|implement|provide|rephrase|paraphrase|answer|complete|"
    r"identify|classify|choose|pick|determine|evaluate|prove|simplify)\b", re.I)


def template_roles(chat_template: str | None, messages) -> tuple[str, ...]:
    """The role names a response's chat template writes: those of its family (a name such as
    ``chatml`` / ``llama3`` / ``gemma``, or the template's source, recognised by its markers) and
    those of the transcript's own messages."""
    family = "default"
    t = (chat_template or "").lower()
    if t in TEMPLATE_ROLES:
        family = t
    elif "start_of_turn" in t:
        family = "gemma"
    elif "start_header_id" in t:
        family = "llama3"
    elif "im_start" in t:
        family = "chatml"
    roles = list(TEMPLATE_ROLES[family])
    for msg in messages or ():
        r = _message_role(msg)
        if r in _KNOWN_ROLES and r not in roles:
            roles.append(r)
    return tuple(roles)


_GLUE_AFTER = frozenset(".!?)]\"'*`")


def _role_line_hits(text: str, roles: tuple[str, ...]) -> list[tuple[int, str, bool, int]]:
    """(offset, role, glued, end of line) of each role name that ends its line and stands alone on
    it or is glued to the end of a sentence (Llama 3 puts no newline between a turn's end and
    the next header), after some text.  A ``str.find`` scan per role: a role word is rare."""
    hits = []
    lead = len(text) - len(text.lstrip())
    n = len(text)
    for role in roles:
        i = text.find(role, lead + 1)
        while i >= 0:
            j = i + len(role)
            e = j
            while e < n and text[e] in " \t\r":
                e += 1
            if e == n or text[e] == "\n":
                ls = text.rfind("\n", 0, i) + 1
                prefix = text[ls:i]
                if not prefix.strip(" \t"):
                    hits.append((i, role, False, e))
                elif prefix[-1] in _GLUE_AFTER:
                    hits.append((i, role, True, e))
            i = text.find(role, j)
    hits.sort()
    return hits


def bare_role_turns(text: str, roles: tuple[str, ...], spans, convo_text: str, min_words: int,
                    cut: bool = False) -> list[tuple]:
    # (spans: the fenced code blocks, or None to find them when needed)
    """Lines that are only a role name (the markers of a turn stripped) and open a turn the
    conversation does not have: [(offset, role, first line of the turn's text, how judged)].

    A bare role line counts when text came before it, it is outside code, ≥ ``min_words`` words
    follow it that are not a quote of the conversation, and the text after it is a turn:
    * after ``user``: a request (a question, an imperative, a greeting …) or a dialogue that goes
      on with an answer role line — not a heading or a field name followed by its description;
    * after ``assistant`` / ``model``: an answer — a second turn the model was not asked for;
    * after ``system``: a system prompt.
    Role headers one after the other (``system`` / blank / ``user``) then text are a turn; with
    ``cut`` (the response hit max_tokens) a role header at the very end of a finished answer is
    one too.
    """
    out = []
    hits = _role_line_hits(text, roles)
    if not hits:
        return out
    if spans is None:
        spans = fence_spans(text)
    closed = closed_spans(text, spans)
    hits = [h for h in hits if not _in_spans(h[0], closed) and not _in_inline_code(text, h[0])]
    if _definition_list(text, hits):
        return out
    later_answer = [h[0] for h in hits if h[1] in _ANSWER_ROLES]
    role_set = set(roles)
    for i, (pos, role, glued, end) in enumerate(hits):
        nxt = text[end:end + 600].lstrip("\r\n \t")
        first = nxt.split("\n", 1)[0].strip()
        if first in role_set and i + 1 < len(hits) and not text[end:hits[i + 1][0]].strip():
            # role headers one after the other (``system`` / blank / ``user``: the template's
            # turn headers with an empty system prompt), then the turn's text
            after = text[hits[i + 1][3]:hits[i + 1][3] + 600].lstrip("\r\n \t")
            words = _WORD_RE.findall(after.split("\n", 1)[0])
            if len(words) >= min_words and not (convo_text and norm_words(after.split("\n", 1)[0])[:200] in convo_text):
                out.append((pos, role, after.split("\n", 1)[0].strip()[:120], "headers"))
                continue
        if len(_WORD_RE.findall(first)) < min_words:
            # empty turns: role headers with nothing in them, one after the other to the end of
            # the response (``user`` / ``system`` / ``user`` …): the model kept opening turns
            rest = text[pos:].split()
            if (len(rest) >= 2 and all(w in role_set for w in rest)
                    and (glued or _ends_turn(text, pos))):
                out.append((pos, role, "", "empty"))
                break
            if cut and len(rest) == 1 and (glued or _ends_turn(text, pos)):
                # a role header max_tokens cut right after, at the end of a finished answer: the
                # model had opened the next turn
                out.append((pos, role, "", "cut"))
                break
            continue
        nfirst = norm_words(first)[:200]
        if convo_text and nfirst and nfirst in convo_text:
            continue  # quoting the real conversation
        if role in _USER_ROLES:
            if any(p > pos for p in later_answer):
                how = "dialogue"
            elif first.rstrip().endswith("?") or _REQUEST_START_RE.match(first):
                how = "request"
            else:
                continue
        elif role in _ANSWER_ROLES:
            how = "answer"
            if not glued and not _ends_turn(text, pos):
                continue
        elif role == "system":
            if len(_WORD_RE.findall(first)) < 3:
                continue
            how = "system"
        else:
            how = "turn"
        out.append((pos, role, first[:120], how))
    return out


def _definition_list(text: str, hits) -> bool:
    """The role lines are the terms of a definition list (API or template docs): ≥ 2 different
    roles after a line that introduces them (ending with ``:``), each followed by one line of
    description and then a blank line or the next term."""
    if len({h[1] for h in hits}) < 2 or not text[:hits[0][0]].rstrip().endswith(":"):
        return False
    for k, (pos, role, glued, end) in enumerate(hits):
        if glued:
            return False
        nxt = hits[k + 1][0] if k + 1 < len(hits) else len(text)
        body = text[end:nxt].strip("\r\n \t")
        if not body or "\n\n" in body.strip() or body.count("\n") > 1 or len(_WORD_RE.findall(body)) > 30:
            return False
        if role in _USER_ROLES and (body.rstrip().endswith("?") or _REQUEST_START_RE.match(body)):
            return False  # a user turn's request, not a description of the role
    return True


def _asked_roles(messages, roles) -> bool:
    """A user message names the template's roles (``a chat between a user and an assistant``)."""
    rx = re.compile(r"\b(?:" + "|".join(map(re.escape, roles)) + r")\b", re.I)
    return any(_message_role(m) == "user" and len(set(w.lower() for w in rx.findall(_message_text(m)))) >= 2
               for m in messages or ())


def _ends_turn(text: str, pos: int) -> bool:
    """The text before a bare answer-role line ends a turn: a sentence end, a closing fence or
    bracket, or a blank line."""
    before = text[max(0, pos - 200):pos].rstrip(" \t")
    if before.endswith("\n\n") or not before.strip():
        return True
    last = before.rstrip()[-1:]
    return last in ".!?)]}\"'`*:"


def norm_words(s: str) -> str:
    """The lower-cased words of ``s`` joined by single spaces (for comparing texts as words)."""
    return " ".join(_WORD_RE.findall(s.lower()))


def closed_spans(text: str, spans):
    """The fenced code blocks that are closed: a fence left open to the end of a response is
    often the parity of its fences gone wrong (a block reopened by the fence that meant to close
    it), or a runaway; what follows it is not reliably code."""
    return [s for s in spans if s[1] < len(text)] if spans and spans[-1][1] >= len(text) else spans


def _in_spans(pos: int, spans) -> bool:
    for a, b in spans:
        if a <= pos < b:
            return True
    return False


def _in_inline_code(text: str, pos: int) -> bool:
    line_start = text.rfind("\n", 0, pos) + 1
    if text[line_start:pos].strip() in ("```", "~~~", "````"):
        return False  # (right after a code fence: a role glued to the fence, not inline code)
    return text.count("`", line_start, pos) % 2 == 1


def confabulated_turns(text: str, messages, min_words: int, chat_template: str | None = None,
                       cut: bool = False) -> dict:
    """Chat-template turn markers and role lines that open a turn the conversation does not have.

    Returns {"markers": [(offset, marker, role)], "end_markers": [(offset, marker)],
             "role_lines": [(offset, line, invented_text)],
             "bare_roles": [(offset, role, invented_text, how)]}  (``bare_role_turns``).
    Markers / role lines inside fenced or inline code are ignored (a response may legitimately
    explain a chat template).  A role line counts only when followed by ≥ ``min_words`` words
    that are not part of any message of the conversation; without ``messages`` (or with none that has text) it also needs a
    later assistant-role line (a dialogue going on by itself), and it is never counted when the
    user asked for a dialogue / transcript / script or named the format ("User/Assistant", 'User:').
    """
    res = {"markers": [], "end_markers": [], "role_lines": [], "bare_roles": []}
    # (cheap first: every marker holds one of these)
    has_marker_chars = (("<" in text and ("<|" in text or "_of_turn>" in text or "<\uff5c" in text))
                        or "INST]" in text)
    spans = closed = None
    if has_marker_chars:
        for m in TURN_MARKER_RE.finditer(text):
            if spans is None:
                spans = fence_spans(text)
                closed = closed_spans(text, spans)  # (once, not per marker)
            if _in_spans(m.start(), closed) or _in_inline_code(text, m.start()):
                continue
            if m.group("end"):
                res["end_markers"].append((m.start(), m.group(0)))
                continue
            role = (m.group("r1") or m.group("r2") or m.group("r3") or m.group("r4") or m.group("r5")
                    or ("user" if m.group("inst") else None))
            res["markers"].append((m.start(), m.group(0), (role or "").lower()))
    # (the last assistant heading found once: one search per role heading would be quadratic)
    last = -1
    if "#" in text and any(w in text for w in _HEADING_ASSISTANT_WORDS):  # (substring tests are fast)
        last = max((m.start() for m in HEADING_ASSISTANT_RE.finditer(text)), default=-1)
    headed = [m for m in HEADING_ROLE_RE.finditer(text) if m.end() <= last] if last >= 0 else []
    role_lines = (":" in text and any(w in text for w in _ROLE_WORDS) and _has_role_line(text)) or headed
    roles = template_roles(chat_template, messages)
    bare = "\n" in text and any(r in text for r in roles)
    if not (role_lines or bare):
        return res
    convo = []
    asked_dialogue = False
    for msg in messages or ():
        content = _message_text(msg)
        if content:
            convo.append(norm_words(content))
            if _message_role(msg) == "user" and _DIALOGUE_REQUEST_RE.search(content):
                asked_dialogue = True
    if bare and _asked_roles(messages, roles):
        bare = False  # the request names the template's roles (a chat between a user and an assistant)
        if not role_lines:
            return res
    if asked_dialogue and not (bare and _asked_roles(messages, roles)):
        # a dialogue the user asked for: its speaker lines are the answer (bare role lines
        # still count unless the request names those roles as speakers)
        if not bare:
            return res
        role_lines = False
    elif asked_dialogue:
        return res
    convo_text = " \n ".join(convo)
    if bare:
        res["bare_roles"] = bare_role_turns(text, roles, spans, convo_text, min_words, cut=cut)
    if role_lines:
        if spans is None:
            spans = fence_spans(text)
        for m in sorted([*ROLE_LINE_RE.finditer(text), *headed], key=lambda m: m.start()):
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
            nrest = norm_words(rest)[:200]
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
    """Finite logprobs as float64 (None / NaN / non-numbers dropped, +values clipped to 0, -inf
    as -1e4). A numeric numpy array counts as numbers (flattened), whatever its dtype."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "fiu" or (
            isinstance(values, (list, tuple)) and set(map(type, values)) <= {float, int}):
        try:  # (the usual case, all numbers: at numpy speed)
            a = np.asarray(values, dtype=np.float64).ravel()
        except (OverflowError, ValueError, TypeError):
            pass
        else:
            a = a[~np.isnan(a) & (a != np.inf)]
            return np.where(a > 0, 0.0, np.where(a == -np.inf, -1e4, a))  # (-0.0 stays -0.0, as min() keeps it)
    out = []
    for v in values:
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)) and math.isfinite(v):
            out.append(min(float(v), 0.0))
        elif isinstance(v, (int, float)) and v == -math.inf:
            out.append(-1e4)
    return np.asarray(out, dtype=np.float64)
