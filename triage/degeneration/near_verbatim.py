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
_NOVEL_WORD_SHARE = 0.1  # an echo with at least this share of new words brings something new
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
    chain: int = 0             # copies of the most-echoed segment (it and its echoes, and theirs)

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
                "content_segments": self.total_segments, "chain": self.chain}


_SENT_END = np.zeros(128, dtype=bool)
_SENT_END[[46, 33, 63]] = True   # . ! ?


def segment_bounds(cp: np.ndarray, starts: np.ndarray, ends: np.ndarray, *, newlines: np.ndarray | None = None,
                   first_cp: np.ndarray | None = None, apart: np.ndarray | None = None,
                   after_newlines: np.ndarray | None = None) -> np.ndarray:
    """Token indices where a segment starts: after a newline, or after a sentence end (``.``,
    ``!``, ``?``, ``。``, ``！``, ``？`` followed by whitespace).  Always begins with 0.
    ``newlines`` (the positions of ``\\n`` in ``cp``) and ``first_cp`` (``cp[starts]``) may be
    passed when already known; with ``first_cp`` the tokens are ``token_arrays``' (a sentence end
    is a token of its own) and ``apart`` (``starts[1:] > ends[:-1]``) and ``after_newlines``
    (``np.searchsorted(starts, newlines)``) may be passed too."""
    L = starts.size
    if L == 0:
        return np.zeros(0, dtype=np.int64)
    brk = np.zeros(L, dtype=bool)  # the token starts a segment
    # a token that follows a newline starts a segment (the first token at or after each newline)
    k = (starts.searchsorted((cp == 10).nonzero()[0] if newlines is None else newlines)
         if after_newlines is None else after_newlines)
    brk[k[k < L]] = True
    c = cp[starts[:-1]] if first_cp is None else first_cp[:-1]
    end = _SENT_END[np.minimum(c, 127)] if c.dtype != np.uint8 else _SENT_END_8[c]
    if cp.dtype != np.uint8:
        end |= (c == 0x3002) | (c == 0xFF01) | (c == 0xFF1F)
    if first_cp is None:
        end &= (ends[:-1] - starts[:-1]) == 1
    end &= starts[1:] > ends[:-1] if apart is None else apart
    brk[1:] |= end
    brk[0] = True
    return brk.nonzero()[0]


_SENT_END_8 = np.zeros(256, dtype=bool)
_SENT_END_8[:128] = _SENT_END


def _first_flags(a: np.ndarray) -> np.ndarray:
    """True at the first occurrence of each value of ``a`` (what ``np.unique(a, return_index=True)``
    marks), by one unstable argsort: the least index of each run of equal sorted values."""
    n = a.size
    out = np.zeros(n, dtype=bool)
    if n == 0:
        return out
    order = a.argsort()
    s = a[order]
    head = np.empty(n, dtype=bool)
    head[0] = True
    np.not_equal(s[1:], s[:-1], out=head[1:])
    out[np.minimum.reduceat(order, head.nonzero()[0])] = True
    return out


_BYTE = np.uint64(52)
_LOW8 = np.uint64(255)


def echo_run(ids: np.ndarray, prose: np.ndarray, vocab: np.ndarray, numbers: np.ndarray, bounds: np.ndarray, *,
             window: int = 8,
             threshold: float = 0.6, min_tokens: int = 4, min_words: int = 2,
             min_prose_share: float = 0.5, min_segments: int = 3, min_repeats: int = 0,
             near_repeat: float = 0.8, blind: np.ndarray | None = None,
             stops: np.ndarray | None = None) -> EchoRun | None:
    """The longest stretch of echoes among the content segments: sentences or lines of prose
    (≥ ``min_tokens`` tokens, ≥ ``min_words`` and ≥ ``min_prose_share`` of them ``prose`` words —
    not a JSON record's keys, a tag's names or a line of code).  The stretch starts at the segment
    the first echo repeats, ends on an echo and never has two non-echoes in a row.  ``vocab``
    marks the tokens that count as vocabulary for novelty (words, numbers, identifiers).  None
    when no echo or fewer than ``min_segments`` content segments (a stretch too short to matter
    is not looked for), or fewer than ``min_repeats`` segments that repeat an earlier one word for
    word (a caller that needs them).  An echo within ``near_repeat`` of what it echoes counts as
    a repeat too.  (``vocab`` must be a property of the token, as ``ids`` are: equal ids, equal
    flags.)  ``blind``: ``ids`` with every number 0x5EED, when already known.  ``stops`` marks
    sentence-end tokens (``.`` ``!`` ``?``): a segment that opens with a prose word and ends on one
    is a sentence and counts as content with one word (``Therefore, x = 5.``)."""
    L = int(ids.size)
    nb = int(bounds.size)
    if L == 0 or nb < 3:
        return None
    seg_end = np.empty(nb, dtype=np.int64)
    seg_end[:-1] = bounds[1:]
    seg_end[-1] = L
    seg_len = seg_end - bounds
    # (prose words per segment in 8 bits: exact for every segment short enough to be content)
    words = np.add.reduceat(prose.view(np.uint8) if prose.dtype == np.bool_ else prose.astype(np.uint8), bounds)
    content = (seg_len >= min_tokens) & (seg_len <= _MAX_SEGMENT) & (words >= min_words)
    content &= words >= min_prose_share * seg_len
    if stops is not None:  # short sentences around a formula or a number
        content |= ((seg_len >= min_tokens) & (seg_len <= _MAX_SEGMENT) & (words >= 1)
                    & prose[bounds] & stops[seg_end - 1])
    idx = content.nonzero()[0]
    S = int(idx.size)
    if S < max(3, min_segments):
        return None
    # a segment's exact key (numbers equated): position-weighted sum of its tokens (uint64 array
    # arithmetic wraps around silently)
    pos = np.arange(1, 2 * L + 1, 2, dtype=np.uint64)
    pos -= (bounds.astype(np.uint64) * np.uint64(2)).repeat(seg_len)
    if blind is None:
        blind = np.where(numbers, np.uint64(0x5EED), ids)
    pos *= blind
    key = np.add.reduceat(pos, bounds)[idx]
    if S <= 64:
        kl = key.tolist()
        n_unique = len(set(kl))
    else:
        kl = None
        ks = np.sort(key)
        n_unique = 1 + int(np.count_nonzero(ks[1:] != ks[:-1]))
    if min_repeats and S - n_unique < min_repeats:   # (said before, word for word)
        return None
    # shingles: each token and each pair of neighbours in its segment (order matters: a salad of
    # the same few words is not an echo); a segment's first token stands for its own pair.  Each
    # segment's shingles are set as bits of a 256-bit sketch (bits 52–59 of the shingle's hash:
    # a bit of 256, packed into four 64-bit words), and two sketches' Jaccard estimates the
    # segments' (collisions are few at sentence length)
    pair = ids * _PAIR
    pair[1:] = pair[:-1] + ids[1:]
    pair[bounds] = ids[bounds]
    pair[0] = ids[0]
    hu = ids * _MIX
    hp = pair * _MIX2
    row = np.arange(0, nb * 256, 256, dtype=np.uint64).repeat(seg_len)
    member = np.zeros(nb * 256, dtype=bool)
    hu >>= _BYTE
    hu &= _LOW8
    hu += row
    member[hu] = True
    hp >>= _BYTE
    hp &= _LOW8
    hp += row
    member[hp] = True
    sketch = np.packbits(member.reshape(nb, 256)[idx], axis=1, bitorder="little").view(_U64LE)
    size = _popsum(sketch)
    # every lag at once: row r compares each segment with the one W - r before it (views of the
    # sketches after W zero rows: before the first segment the similarity is 0, never an echo)
    W = min(window, S - 1)
    padded = np.zeros((S + W, _WORDS), dtype=sketch.dtype)
    padded[W:] = sketch
    psize = np.zeros(S + W, dtype=size.dtype)
    psize[W:] = size
    isz, wsz = padded.itemsize, psize.itemsize
    earlier = np.ndarray((W, S, _WORDS), dtype=padded.dtype, buffer=padded,
                         strides=(_WORDS * isz, _WORDS * isz, isz))
    inter = _popsum(earlier & sketch)
    union = np.ndarray((W, S), dtype=psize.dtype, buffer=psize, strides=(wsz, wsz)) + size
    union -= inter                         # (≥ 1: a segment has a shingle)
    sim = inter / union
    sim[sim < threshold] = 0.0
    sim = sim[::-1]                        # row j - 1: lag j
    # the earlier segment each echoes best (0: none; ties: the nearest)
    j = sim.argmax(axis=0)
    best = sim[j, np.arange(S)]
    e = best.nonzero()[0]
    if e.size == 0:
        return None
    # stretches: chains of echoes with at most one non-echo between two; the longest (the first
    # of the longest), from the segment before its first echo (the echo's first copy)
    s0, n_echo = 0, int(e.size)
    if n_echo > 1:
        heads = (e[1:] - e[:-1] > 2).nonzero()[0]
        if heads.size:
            starts = np.empty(heads.size + 2, dtype=np.int64)
            starts[0] = 0
            starts[1:-1] = heads + 1
            starts[-1] = n_echo
            counts = starts[1:] - starts[:-1]
            k = int(counts.argmax())
            s0, n_echo = int(starts[k]), int(counts[k])
    E = e[s0:s0 + n_echo]                 # the stretch's echoes
    a = int(E[0]) - 1
    b = int(E[-1])
    # new word types: the first occurrence of each token in the text (punctuation is not vocabulary)
    later = E[min(_SETTLE, n_echo // 2):]  # the first copies of a rotation are new by necessity
    end_token = int(seg_end[idx[b]])
    if later.size:
        # (a token's vocabulary flag is its string's: the first occurrence of a vocabulary token
        # is among the vocabulary tokens, and only those before the stretch's end matter)
        vp = vocab[:end_token].nonzero()[0]
        new = np.zeros(L, dtype=bool)
        new[vp[_first_flags(ids[vp])]] = True
        # an echo is new when at least one in ten of its words is (one new word in a long
        # sentence is still the sentence said again)
        n_new = np.add.reduceat(new.astype(np.int32), bounds)[idx[later]]
        n_voc = np.add.reduceat(vocab.astype(np.int32), bounds)[idx[later]]
        seg_new = (n_new > 0) & (n_new >= _NOVEL_WORD_SHARE * n_voc)
        novel = int(np.count_nonzero(seg_new)) / int(later.size)
    else:
        novel = 1.0
    lv = np.sort(j[E])                     # (lag - 1)
    m = n_echo // 2
    period = int(lv[m]) + 1 if n_echo % 2 else (int(lv[m - 1]) + int(lv[m]) + 2) // 2  # segments per rotation (median)
    # repeats: said before word for word (numbers aside), or near-identical (about one word in
    # twenty changed)
    if kl is not None:
        seen = set()
        first_key = [not (k in seen or seen.add(k)) for k in kl[:b + 1]]
        said = ~np.array(first_key, dtype=bool)[E]
    else:
        said = ~_first_flags(key[:b + 1])[E]
    said |= best[E] >= near_repeat
    repeat_share = int(np.count_nonzero(said)) / n_echo
    mean_tokens = int(seg_len[idx[a:b + 1]].sum()) / (b - a + 1)
    # copies of one thing: each echo joins the group of the segment it echoes (A A' B B' is two
    # groups of two, A A' A'' one of three)
    group: dict[int, int] = {}
    sizes: dict[int, int] = {}
    for x, lag in zip(E.tolist(), (j[E] + 1).tolist()):
        root = group.get(x - lag, x - lag)
        group[x] = root
        sizes[root] = sizes.get(root, 1) + 1
    chain = max(sizes.values())
    start_token = int(bounds[idx[a]])
    return EchoRun(segments=b - a + 1, echoes=n_echo, tokens=end_token - start_token, start_token=start_token,
                   end_token=end_token, novel_share=novel, at_end=b == S - 1, total_segments=S, period=period,
                   repeat_share=repeat_share, mean_tokens=mean_tokens, chain=chain)


_U64LE = np.dtype("<u8")
_BYTE_SUM = np.uint32(0x01010101)
_TOP_BYTE = np.uint32(24)


def _popsum(sketches: np.ndarray) -> np.ndarray:
    """The number of bits set in each sketch (the last axis: four 64-bit words), as uint32: the
    four words' popcounts (8 bits each) summed in the top byte of a 32-bit product, exact because
    a content segment's sketch has at most 2 × _MAX_SEGMENT = 240 < 256 bits set."""
    bc = np.bitwise_count(sketches)          # uint8, contiguous: one 32-bit word per sketch
    x = bc.view(np.uint32)[..., 0]
    x *= _BYTE_SUM
    x >>= _TOP_BYTE
    return x
