"""Tokens: the word / punctuation tokens of a text as numpy arrays, their hashes and n-gram
hashes, and the cleaning of per-token logprobs. Pure Python + numpy, linear in the input.

Nothing here decides anything: the rules in ``rules/`` turn the measurements into findings.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .messages import NUMBER_WORDS

# Word and punctuation tokens: a run of word characters, or one non-space, non-word character.
# ``</div>`` → ``<`` ``/`` ``div`` ``>``.  Whitespace is not a token, so re-indented copies of a
# loop are still exact copies.  Han characters and kana (scripts written without spaces) are one
# token each, as CJK text is usually measured: otherwise a whole clause would be one "word" and a
# loop inside it (所以所以所以…) invisible.
_CJK = "\u3005\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f"
TOKEN_RE = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])\w)+|[^\w\s]")
_CJK_CHAR_RE = re.compile(f"[{_CJK}]")

_MULT = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit constant for rolling n-gram hashes



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


# Counters in words, cardinal and ordinal ("Step Two", "the fifth step"): the fuzzy tail loop equates
# them like numbers, and list items that differ only in one are different steps.  The cardinals are
# the request parser's (``messages.NUMBER_WORDS``: one word each, not zero, twice or thrice).
_ORDINALS = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
             "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth thirtieth fortieth "
             "fiftieth sixtieth seventieth eightieth ninetieth hundredth").split()
COUNTER_WORDS = tuple([w for w in NUMBER_WORDS if " " not in w and w not in ("zero", "twice", "thrice")]
                      + _ORDINALS)


def _word_hashes(words) -> np.ndarray:
    forms = [f for w in words for f in (w, w.capitalize(), w.upper())]
    return np.unique(token_arrays(" ".join(forms)).hashes)


def number_words(toks: "Tokens") -> np.ndarray:
    """Per token: a number word, cardinal or ordinal, in lower, title or upper case (``seven``,
    ``Fifth``, ``TWENTIETH``), or an ordinal in digits (``24th``, ``2nd``)."""
    global _NUMBER_WORD_HASHES
    if _NUMBER_WORD_HASHES is None:
        _NUMBER_WORD_HASHES = _word_hashes(COUNTER_WORDS)
    h = toks.hashes
    k = _NUMBER_WORD_HASHES.searchsorted(h)   # (a sorted table: cheaper than np.isin)
    k[k == _NUMBER_WORD_HASHES.size] = 0
    out = _NUMBER_WORD_HASHES[k] == h
    if toks.has_digit is not None and toks.cp is not None:
        # (an ordinal in digits: digits, then st / nd / rd / th)
        mixed = (toks.has_digit & ~toks.is_number).nonzero()[0]
        if mixed.size:
            e = toks.ends[mixed]
            tail = (toks.cp[e - 2].astype(np.uint32) << 8) | toks.cp[e - 1]
            ok = (tail == _ORDINAL_SUFFIXES[:, None]).any(axis=0) & ((e - toks.starts[mixed]) >= 3)
            if toks.digit is not None:
                ok &= toks.digit[e - 3] & toks.digit[toks.starts[mixed]]
            out[mixed[ok]] = True
    return out


_NUMBER_WORD_HASHES: np.ndarray | None = None
_ORDINAL_SUFFIXES = np.array([(ord(a) << 8) | ord(b) for a, b in ("st", "nd", "rd", "th")], dtype=np.uint32)


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


def token_texts(text: str, toks: Tokens, i: int, j: int) -> list[str]:
    """The texts of tokens ``i`` to ``j`` (exclusive)."""
    st = toks.starts[i:j].tolist()
    en = toks.ends[i:j].tolist()
    return [text[a:b] for a, b in zip(st, en)]


def ngram_hashes(ids: np.ndarray, n: int, prev: np.ndarray | None = None) -> np.ndarray:
    """uint64 hashes of the n-grams of ``ids`` (one per start position); ``prev``, the
    (n-1)-gram hashes, extends them by one token."""
    if prev is not None:  # extend the (n-1)-gram hashes by one token
        return prev[:-1] * _MULT + ids[n - 1:]
    g = ids.copy()
    for k in range(1, n):
        g = g[:-1] * _MULT + ids[k:]
    return g


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
