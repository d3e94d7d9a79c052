"""Repetition: n-gram repetition (seq_rep, distinct, the tail's re-said n-grams, a circling
phrase), the loop at the end of a token sequence, the longest back-to-back run anywhere, and the
loop at the end in characters. Pure Python + numpy, each linear (or n log n in numpy).

Nothing here decides anything: the rules in ``rules/`` turn the measurements into findings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .tokens import ngram_hashes


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
            g = ids if n == 1 else ngram_hashes(ids, n, g)
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
    g = ngram_hashes(ids, n)   # (uint64 array arithmetic wraps around silently)
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
    g = ngram_hashes(ids[a:], n)
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
        g = ngram_hashes(ids, n)
    return 1.0 - _n_unique(g) / g.size


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


def match_len(r: np.ndarray, p: int) -> int:
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
    comparison, and each is checked by ``match_len`` in time proportional to its match.  Among
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
        z = match_len(r, p)
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


_CHAR_LOOP_PROBE = 32  # (two copies of the longest period, 16; the shortest loop any rule takes is 30 characters)


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
