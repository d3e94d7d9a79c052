"""Near-verbatim loops: the same sentence or line again and again with a word or two alternating.

``The river is calm tonight. The river is still tonight. The river is calm tonight.`` has no
exact period, so the tail loop misses it.  Here the response is cut into segments (lines, and
sentences inside lines), each segment is compared with the few content segments before it by an
estimate of the Jaccard similarity of their sets of tokens and neighbouring pairs (a 256-bit
sketch per segment, built by four ``bitwise_or.reduceat``: popcounts of AND / OR), and a segment within ``threshold`` of one of the last ``window``
segments is an *echo*.  The finding is the longest stretch of echoes, and what tells a loop from a
refrain or a parallel list is how much is *new* in it: a loop's echoes only re-use words already
said (``calm`` / ``still``), a song's verses or a list of parallel items bring a new word each
(``cow``, ``duck``; ``vegetables``, ``fruit``).  Linear in the text (``window`` sketch comparisons per
segment).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_WORDS = 4             # a segment's sketch: 4 × 64 bits
_MAX_SEGMENT = 120     # longer segments (a paragraph without a full stop, a line of minified code) are not compared
_MIX = np.uint64(0xD6E8FEB86659FD93)    # odd multipliers that spread a token hash over the high bits
_MIX2 = np.uint64(0xA0761D6478BD642F)
_PAIR = np.uint64(0x9E3779B97F4A7C15)
_SETTLE = 4            # echoes at the start of a stretch not counted for novelty (a rotation's variants)


@dataclass
class EchoRun:
    segments: int       # content segments in the stretch
    echoes: int         # of which echoes of an earlier one
    tokens: int         # tokens of the stretch
    start_token: int
    end_token: int      # exclusive
    novel_share: float  # share of the echoes (after the first few) that bring a new word type
    at_end: bool        # the stretch reaches the last content segment
    total_segments: int
    period: int = 1     # segments per rotation (the typical distance of an echo to what it echoes)
    repeat_share: float = 0.0  # share of the echoes that repeat an earlier segment (word for word, numbers
    #                            aside, or near-identically)

    mean_tokens: float = 0.0   # tokens of the stretch's content segments, on average

    @property
    def copies(self) -> float:
        """Rotations of the stretch: echoes per rotation, plus the first."""
        return self.echoes / self.period + 1

    def to_dict(self, starts: np.ndarray, ends: np.ndarray) -> dict:
        return {"segments": self.segments, "echo_segments": self.echoes, "covered_tokens": self.tokens,
                "start_char": int(starts[self.start_token]), "end_char": int(ends[self.end_token - 1]),
                "novel_share": round(self.novel_share, 4), "at_end": self.at_end, "period_segments": self.period,
                "copies": round(self.copies, 2), "repeat_share": round(self.repeat_share, 4),
                "mean_segment_tokens": round(self.mean_tokens, 1),
                "content_segments": self.total_segments}


def segment_bounds(cp: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Token indices where a segment starts: after a newline, or after a sentence end (``.``,
    ``!``, ``?``, ``。``, ``！``, ``？`` followed by whitespace).  Always begins with 0."""
    L = starts.size
    if L == 0:
        return np.zeros(0, dtype=np.int64)
    # a token that follows a newline starts a segment (the first token at or after each newline)
    after_nl = np.searchsorted(starts, np.flatnonzero(cp == 10))
    gap_nl = np.zeros(L - 1, dtype=bool)
    k = after_nl[(after_nl > 0) & (after_nl < L)]
    gap_nl[k - 1] = True
    single = (ends[:-1] - starts[:-1]) == 1
    c = cp[starts[:-1]]
    end = (c == 46) | (c == 33) | (c == 63)
    if cp.dtype != np.uint8:
        end |= (c == 0x3002) | (c == 0xFF01) | (c == 0xFF1F)
    sent = single & end & (starts[1:] > ends[:-1])
    brk = gap_nl | sent
    return np.concatenate(([0], np.flatnonzero(brk) + 1))


def echo_run(ids: np.ndarray, prose: np.ndarray, vocab: np.ndarray, numbers: np.ndarray, bounds: np.ndarray, *,
             window: int = 8,
             threshold: float = 0.6, min_tokens: int = 4, min_words: int = 2,
             min_prose_share: float = 0.5, min_segments: int = 3, min_repeats: int = 0,
             near_repeat: float = 0.8) -> EchoRun | None:
    """The longest stretch of echoes among the content segments: sentences or lines of prose
    (≥ ``min_tokens`` tokens, ≥ ``min_words`` and ≥ ``min_prose_share`` of them ``prose`` words —
    not a JSON record's keys, a tag's names or a line of code).  The stretch starts at the segment
    the first echo repeats, ends on an echo and never has two non-echoes in a row.  ``vocab``
    marks the tokens that count as vocabulary for novelty (words, numbers, identifiers).  None
    when no echo or fewer than ``min_segments`` content segments (a stretch too short to matter
    is not looked for), or fewer than ``min_repeats`` segments that repeat an earlier one word for
    word (a caller that needs them).  An echo within ``near_repeat`` of what it echoes counts as
    a repeat too."""
    L = int(ids.size)
    if L == 0 or bounds.size < 3:
        return None
    seg_len = np.diff(np.concatenate((bounds, [L])))
    words = np.add.reduceat(prose.astype(np.int32), bounds)
    content = ((seg_len >= min_tokens) & (seg_len <= _MAX_SEGMENT) & (words >= min_words)
               & (words >= min_prose_share * seg_len))
    idx = np.flatnonzero(content)
    S = idx.size
    if S < max(3, min_segments):
        return None
    with np.errstate(over="ignore"):
        # a segment's exact key (numbers equated): position-weighted sum of its tokens
        pos = np.arange(L, dtype=np.int64) - np.repeat(bounds, seg_len)
        keyed = np.where(numbers, np.uint64(0x5EED), ids) * (pos.astype(np.uint64) * np.uint64(2) + np.uint64(1))
        key = np.add.reduceat(keyed, bounds)[idx]
    _, first_key = np.unique(key, return_index=True)
    repeat = np.ones(S, dtype=bool)
    repeat[first_key] = False                                  # said before, word for word
    if min_repeats and np.count_nonzero(repeat) < min_repeats:
        return None
    # shingles: each token and each pair of neighbours in its segment (order matters: a salad of
    # the same few words is not an echo); a segment's first token stands for its own pair.  Each
    # segment's shingles are set as bits of a 256-bit sketch (one OR-reduction per 64-bit word),
    # and two sketches' Jaccard estimates the segments' (collisions are few at sentence length)
    seg_first = np.zeros(L, dtype=bool)
    seg_first[bounds] = True
    with np.errstate(over="ignore"):
        pair = ids.copy()
        pair[1:] = np.where(seg_first[1:], ids[1:], ids[:-1] * _PAIR + ids[1:])
        hu = ids * _MIX
        hp = pair * _MIX2
    sketch = np.empty((S, _WORDS), dtype=np.uint64)
    one = np.uint64(1)
    wu, bu = (hu >> np.uint64(58)) & np.uint64(_WORDS - 1), one << ((hu >> np.uint64(52)) & np.uint64(63))
    wp, bp = (hp >> np.uint64(58)) & np.uint64(_WORDS - 1), one << ((hp >> np.uint64(52)) & np.uint64(63))
    zero = np.uint64(0)
    for w in range(_WORDS):
        ww = np.uint64(w)
        bits = np.where(wu == ww, bu, zero) | np.where(wp == ww, bp, zero)
        sketch[:, w] = np.bitwise_or.reduceat(bits, bounds)[idx]
    size = np.bitwise_count(sketch).sum(axis=1)
    lag = np.zeros(S, dtype=np.int64)  # the earlier segment it echoes best (0: none; ties: the nearest)
    best = np.zeros(S)
    for j in range(1, min(window, S - 1) + 1):
        inter = np.bitwise_count(sketch[j:] & sketch[:-j]).sum(axis=1)
        union = size[j:] + size[:-j] - inter
        sim = inter / np.maximum(union, 1)
        better = (sim >= threshold) & (sim > best[j:])
        lag[j:][better] = j
        best[j:][better] = sim[better]
    echo = lag > 0
    repeat |= best >= near_repeat    # (near-identical: about one word in twenty changed)
    if not echo.any():
        return None
    # new word types: the first occurrence of each token in the text
    _, first = np.unique(ids, return_index=True)
    new = np.zeros(L, dtype=np.int32)
    new[first] = 1
    new &= vocab  # (punctuation is not vocabulary)
    seg_new = np.add.reduceat(new, bounds)[idx] > 0
    # stretches: break where two consecutive content segments are both non-echoes
    run_best = None
    i = 0
    while i < S:
        if not echo[i]:
            i += 1
            continue
        a = i - 1 if i > 0 else i        # the echo's first copy starts the stretch
        b = i
        while b + 1 < S and (echo[b + 1] or (b + 2 < S and echo[b + 2])):
            b += 1
        while not echo[b]:
            b -= 1
        n_echo = int(np.count_nonzero(echo[a:b + 1]))
        if run_best is None or n_echo > run_best[2]:
            run_best = (a, b, n_echo)
        i = b + 1
    a, b, n_echo = run_best
    later = echo[a:b + 1].copy()
    settle = np.flatnonzero(later)[:min(_SETTLE, n_echo // 2)]
    later[settle] = False                # the first copies of a rotation are new by necessity
    novel = float(seg_new[a:b + 1][later].mean()) if later.any() else 1.0
    period = int(np.median(lag[a:b + 1][echo[a:b + 1]]))  # segments per rotation
    repeat_share = float(repeat[a:b + 1][echo[a:b + 1]].mean())
    mean_tokens = float(seg_len[idx[a:b + 1]].mean())
    start_token = int(bounds[idx[a]])
    end_token = int(bounds[idx[b] + 1]) if idx[b] + 1 < bounds.size else L
    return EchoRun(segments=b - a + 1, echoes=n_echo, tokens=end_token - start_token, start_token=start_token,
                   end_token=end_token, novel_share=novel, at_end=b == S - 1, total_segments=S, period=period,
                   repeat_share=repeat_share, mean_tokens=mean_tokens)
