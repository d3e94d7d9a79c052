"""Counting loops: items that repeat one template with only a counter changing.

``| 41 | 41 | 41 |``, ``Step 41: add the flour. Step 42: add the flour.``, JSON records whose only
difference is an incrementing ``id``.  With every number equated the items are exact copies (the
number-blind tail loop of ``counting_loop`` finds them); what tells the loop from a healthy table or
list is what the numbers do across the copies:

* a **counter** column moves by the same step from copy to copy (``41, 42, 43``);
* a **constant** column never changes;
* a **data** column does anything else (the days of the months, prices, squares, grades).

A template whose numbers are only counters and constants says nothing new per item: a table with
a data column is a table.  Whether it is a loop then depends on how many items there are against
how many the request asked for (``count_requested``), and on whether the template says something
in words (the same sentence numbered forty times is a loop at any count).  Two cases need no
counter column: a list of bare numbers (``12, 17, 20, …``) far past the count asked for (or the
size of the set the request names), still going at the cut; and records in a
code block the same in every word but for their id (``{"id": 4, "title": "The Night Circus"}``
five times or more), whose quoted words say nothing new from copy to copy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .findings import pct, r4, short
from .markup import fence_spans, in_spans
from .messages import NUMBER_WORDS, last_user_text
from .repetition import longest_run, match_len, tail_loop
from .thresholds import Thresholds
from .tokens import COUNTER_WORDS, Tokens, digit_blind_hashes, token_texts

MAX_COPIES = 256      # copies examined (the last ones): enough to know a column, bounded cost
_NUM = r"\d{1,5}|" + "|".join(sorted((re.escape(w) for w in NUMBER_WORDS if w not in ("twice", "thrice")),
                                     key=len, reverse=True))
# "15 countries", "ten ways", "a list of 20 users", "top 5", "the first 12", "1 to 20", "up to 100"
# (a duration, a measure or a multiplier is not a number of items: "for 2 years", "5 times")
_UNITS = ("years|months|weeks|days|hours|minutes|seconds|times|percent|dollars|euros|pounds|miles|meters|metres|"
          "kilometers|kilometres|degrees|grams|kilograms|kg|lbs|bytes|bits|points|steps ahead")
_COUNT_RE = re.compile(
    rf"\b(?:(?:top|first|last|up to|to|until|through|thru)\s+(?P<a>{_NUM})\b(?![\^.,]\d|\^)"
    rf"|(?P<b>{_NUM})\s+(?!(?:{_UNITS})\b)(?:[a-z][\w'-]*\s+){{0,3}}?[a-z][\w'-]*s\b)", re.I)


@dataclass
class Columns:
    copies: int          # whole copies examined
    counters: int        # number columns moving by a (mostly) constant step
    constants: int       # number columns that never change
    data: int            # number columns doing anything else
    last_counter: int | None  # the last value of the first counter column
    progressions: int = 0     # distinct steps among the counters (``n`` and ``n + 17`` are one)
    copied: int = 0           # counter columns that carry the same values as the first (one number copied across)

    @property
    def counting(self) -> bool:
        return self.counters > 0 and self.data == 0

    @property
    def computed(self) -> bool:
        """Counters with different steps (``7 × 3 = 21``: 3 and 21): a table someone computed."""
        return self.progressions >= 2

    def to_dict(self) -> dict:
        return {"copies": self.copies, "counter_columns": self.counters, "constant_columns": self.constants,
                "data_columns": self.data, "progressions": self.progressions, "last_counter": self.last_counter,
                "copied_columns": self.copied}


COUNTER_STEP_SHARE = 0.7
"""A column is a counter when ≥ 70 % of its steps are the same non-zero step: a model that counts
sometimes skips (``14, 16, 17, 18, 21``); squares, prices and the days of the months do not."""


# "from 0 to 100 in steps of 10" (11), "the odd numbers from 1 to 35" (18), "the multiples of 5 from 5
# to 100" (20), "count down from 30 to 1" (30), "the powers of 2 from 2^0 to 2^16" (17): a range asks
# for as many items as it holds
_RANGE_RE = re.compile(
    r"(?:\b(?P<parity>odd|even)\b[^.\n]{0,40}?|\bmultiples of (?P<mult>\d{1,5})\b[^.\n]{0,20}?)?"
    r"\bfrom\s+(?:\d{1,3}\^)?(?P<lo>\d{1,6}(?:\.\d{1,4})?)\s+(?:to|through|until|till|thru)\s+(?:\d{1,3}\^)?"
    r"(?P<hi>\d{1,6}(?:\.\d{1,4})?)\b"
    r"(?![\^.,]\d|\^)"
    r"(?:[^.\n]{0,20}?\b(?:in steps of|by|every)\s+(?P<step>\d{1,5}(?:\.\d{1,4})?)(?:'?s)?\b(?![.,]\d))?", re.I)
_COUNTDOWN_RE = re.compile(r"\bcount(?:ing)?\s*down\b[^.\n]{0,20}$", re.I)


def _range_counts(text: str) -> tuple[str, list[int]]:
    """The ranges of ``text`` (``_RANGE_RE``) that say how many numbers they hold — a step, odd or
    even, multiples, powers, a count down — and how many each holds; the text with them blanked
    out (their ``to 100`` is not a count of its own).  A bare ``from 1939 to 1945`` or ``from 3 to 5
    years old`` is a span, not a list of its numbers: it keeps the plain reading (``to N``)."""
    counts, spans = [], []
    for m in _RANGE_RE.finditer(text):
        if not (m.group("step") or m.group("parity") or m.group("mult") or "^" in m.group()
                or _COUNTDOWN_RE.search(text, max(0, m.start() - 40), m.start())):
            continue
        spans.append(m.span())
        lo, hi = sorted((float(m.group("lo")), float(m.group("hi"))))
        step = float(m.group("step") or 1) or 1.0
        n = int((hi - lo) / step + 1e-9) + 1
        if lo.is_integer() and hi.is_integer() and not m.group("step"):
            lo_i, hi_i = int(lo), int(hi)
            if m.group("mult") and int(m.group("mult")):  # the multiples of k in [lo, hi]
                k = int(m.group("mult"))
                n = hi_i // k - (lo_i + k - 1) // k + 1
            elif m.group("parity"):  # the odd (even) numbers in [lo, hi]
                odd = m.group("parity").lower() == "odd"
                n = (hi_i + odd) // 2 - (lo_i - 1 + odd) // 2
        counts.append(max(n, 1))
    for a, b in spans:
        text = text[:a] + " " * (b - a) + text[b:]
    return text, counts


def count_requested(messages) -> int | None:
    """The largest count the last user message asks for ("15 countries", "ten tips", "1 to 20",
    "top 5", "the odd numbers from 1 to 35": 18), or None.  Only a number next to a plural noun,
    after to/up to/top/first, or a range counts: "the multiplication table of 7" asks for no count
    (``count_implied`` knows its size)."""
    text = last_user_text(messages)
    if text is None:
        return None
    text, ranges = _range_counts(text)
    best = max(ranges) if ranges else None
    for m in _COUNT_RE.finditer(text):
        w = (m.group("a") or m.group("b")).lower()
        n = int(w) if w.isdigit() else NUMBER_WORDS.get(w)
        if n is not None and n > 0 and (best is None or n > best):
            best = n
    return best


# Well-known sets whose size a request implies without a number: "the multiplication table of 7"
# has 10 or 12 rows (the larger is taken), "the planets" eight.
_IMPLIED_COUNTS = [(re.compile(p, re.I), n) for p, n in (
    (r"\b(?:multiplication|times)[ -]tables?\b", 12),
    (r"\bdays of the week\b", 7),
    (r"\bmonths(?: of the year)?\b", 12),
    (r"\bplanets\b", 8),
    (r"\bcontinents\b", 7),
    (r"\bzodiac signs\b|\bsigns of the zodiac\b", 12),
    (r"\bcolou?rs of the rainbow\b", 7),
    (r"\bseasons\b", 4),
    (r"\bletters of the (?:english )?alphabet\b", 26),
    (r"\bnoble gases\b", 7),
    (r"\bgreat lakes\b", 5),
    (r"\bprimary colou?rs\b", 3),
    (r"\bwonders of the (?:ancient )?world\b", 7),
    (r"\boceans of the world\b|\bthe (?:world's |earth's )?oceans\b", 5),
)]


def count_implied(messages) -> int | None:
    """The size of a well-known set the last user message names without a number (``the
    multiplication table of 6``: 12 rows, ``the planets``: 8), or None.  Looser than a count the
    user gave, so it is used only to tell a list that ran far past it."""
    text = last_user_text(messages)
    implied = [n for rx, n in _IMPLIED_COUNTS if text is not None and rx.search(text)]
    return max(implied) if implied else None


def columns(text: str, starts: np.ndarray, ends: np.ndarray, is_number: np.ndarray, first: int, period: int,
            copies: int, digit_tokens: np.ndarray | None = None) -> Columns:
    """Classify the number columns of ``copies`` whole copies of ``period`` tokens starting at
    token ``first`` (the copies are exact apart from their numbers).  The first copy is left out
    when there are four or more: the periodic stretch may begin inside the last real item.
    ``digit_tokens`` marks tokens with a number inside (``test_case_5``): their last run of
    digits is their value."""
    if copies >= 4:
        first += period
        copies -= 1
    k = min(copies, MAX_COPIES)
    first += (copies - k) * period
    cols_mask = is_number[first:first + period]
    if digit_tokens is not None:
        cols_mask = cols_mask | digit_tokens[first:first + period]
    counters = constants = data = copied = 0
    last_counter = first_vals = None
    steps_seen = set()
    for c in cols_mask.nonzero()[0].tolist():
        pos = first + c + period * np.arange(k)
        vals = np.array([_value(text[a:b]) for a, b in zip(starts[pos].tolist(), ends[pos].tolist())],
                        dtype=np.int64)
        d = np.diff(vals)
        if d.size == 0 or not d.any():
            constants += 1
            continue
        steps, counts = np.unique(d, return_counts=True)
        step = int(steps[counts.argmax()])
        if counts.max() < COUNTER_STEP_SHARE * d.size or (vals < 0).any():
            data += 1
        elif step == 0:
            constants += 1  # (mostly constant: a month that turns over in a list of dates)
        else:
            counters += 1
            steps_seen.add(step)
            if last_counter is None:
                last_counter, first_vals = int(vals[-1]), vals
            elif np.array_equal(vals, first_vals):
                copied += 1
    return Columns(copies=k, counters=counters, constants=constants, data=data, last_counter=last_counter,
                   progressions=len(steps_seen), copied=copied + (copied > 0))


DIGITS_RE = re.compile(r"\d+")


def _value(token: str) -> int:
    """A number token's value, or the last run of digits of a token with digits inside; -1 when
    too long to be a counter."""
    if not token.isdigit():
        runs = DIGITS_RE.findall(token)
        token = runs[-1] if runs else ""
    return int(token) if 0 < len(token) <= 18 else -1


def items_per_period(text: str, a: int, b: int) -> int:
    """How many items one copy of a template holds: its lines, when a copy is several lines of
    one shape (``John,24,12`` / ``Jane,25,12``: two rows a copy, the names alternating); else 1
    (one line, or one multi-line record whose lines differ: a JSON object)."""
    lines = [ln for ln in text[a:b].split("\n") if ln.strip()]
    if len(lines) < 2:
        return 1
    shapes = {_SHAPE_RE.sub(lambda m: "9" if m.group()[0].isdigit() else "a", ln.strip()) for ln in lines}
    return len(lines) if len(shapes) == 1 else 1


_SHAPE_RE = re.compile(r"\d+|[^\W\d_]+")  # a line's shape: its numbers and its words, each one symbol


def prose_words(toks: list[str]) -> int:
    """Word tokens of letters (≥ 2) in one copy that are not tag or attribute names of markup."""
    n = 0
    in_tag = False
    for i, t in enumerate(toks):
        if t == "<":
            in_tag = True
        elif t == ">":
            in_tag = False
        elif not in_tag and len(t) > 1 and t.isalpha():
            n += 1
    return n


# A list item: a number (``1.``, in bold ``**1.**``), a bullet or a ``key:`` label at the start of a line,
# then its text.
# A table row (``| a | b |``, not the ``|---|`` rule under the header) is an item too.
_ITEM_RE = re.compile(r"^(?P<ind>[ \t]*)(?:(?:\*{0,2}(?P<num>\d{1,4})[.)]\*{0,2}|(?P<bul>[-*\u2022+])"
                      r"|(?P<key>[A-Za-z][\w-]{0,30}:))[ \t]+\S"
                      r"|(?P<row>\|)(?![ \t]*:?-{2,})[ \t]*\S)", re.M)


@dataclass
class ItemRun:
    items: int   # items of one kind at one indentation, back to back (blank and deeper lines between)
    start: int   # character offsets of the run
    end: int

    def to_dict(self) -> dict:
        return {"items": self.items, "start_char": self.start, "end_char": self.end}


def item_runs(text: str) -> list[tuple[int, int, list[tuple[int, int]]]]:
    """Every run of list items of one kind (numbered, one bullet character, ``key:`` labels, or
    table rows) at one indentation, in order: (start char, end char, each item's line span).
    Blank lines and lines indented deeper (an item's continuation, its sub-items) do not break a
    run; any other line does.  Linear: one pass over the items."""
    runs: list[tuple[int, int, list[tuple[int, int]]]] = []
    cur_kind, cur, cur_start, cur_end = None, [], 0, 0
    for m in _ITEM_RE.finditer(text):
        ind = m.group("ind").expandtabs(4)
        kind = (len(ind), "num" if m.group("num") else "row" if m.group("row") else m.group("bul") or "key")
        line_end = text.find("\n", m.start())
        line_end = len(text) if line_end < 0 else line_end
        if not (cur_kind == kind and _only_deeper_between(text, cur_end, m.start(), len(ind))):
            if cur:
                runs.append((cur_start, cur_end, cur))
            cur_kind, cur, cur_start = kind, [], m.start()
        cur.append((m.start(), line_end))
        cur_end = line_end
    if cur:
        runs.append((cur_start, cur_end, cur))
    return runs


def longest_item_run(text: str, runs=None) -> ItemRun | None:
    """The longest run of ``item_runs`` (the first, when several are as long); ``runs``: theirs,
    when already known."""
    best = None
    for a, b, spans in item_runs(text) if runs is None else runs:
        if best is None or len(spans) > best.items:
            best = ItemRun(len(spans), a, b)
    return best


@dataclass
class ItemRotation:
    items: int      # items of one kind back to back (a run of ``item_runs``)
    distinct: int   # different ones among them (their text, numbers kept, the item marker aside)
    top: str        # the most said item
    top_count: int
    start: int
    end: int
    strict: int = 0  # the longest stretch of items each the same as the one two or three before it

    def to_dict(self) -> dict:
        return {"items": self.items, "distinct": self.distinct, "top_item": self.top[:80],
                "top_count": self.top_count, "start_char": self.start, "end_char": self.end,
                "strict_rotation": self.strict}


_MARKER_RE = re.compile(r"^[ \t]*(?:\*{0,2}\d{1,4}[.)]\*{0,2}|[-*\u2022+])[ \t]+")
_LETTERS_RE = re.compile(r"[^\W\d_]{2,}")


def item_rotation(text: str, min_items: int, runs=None,
                  min_strict: int = 5) -> tuple[ItemRotation | None, ItemRotation | None]:
    """Two views of the list items and table rows (``item_runs``; ``runs``: theirs, when already
    known), their text compared with the numbers kept (rows of data differ in their values) and
    the list marker dropped; runs whose items are mostly without words (rows of numbers) are not
    looked at.  Linear.

    * the run of ≥ ``min_items`` items with the fewest different items for its length: the same
      few items said again and again (two book titles in turn for ``10 books``, ``| Green |
      Green |`` rows);
    * the run (≥ ``min_strict`` + 2 items) with the longest *strict* rotation, ≥ ``min_strict``
      items in a row each the same as the one two or three before it (``Zorath`` / ``Zorath II``
      in turn after a first title that was real; not the one just before: that is the same item
      again, ``repeated_items``).

    Each is None when no run qualifies."""
    best = strict_best = None
    for a, b, spans in item_runs(text) if runs is None else runs:
        if len(spans) < min(min_items, min_strict + 2):
            continue
        items = [" ".join(_MARKER_RE.sub("", text[i:j]).lower().split()) for i, j in spans]
        if sum(1 for it in items if _LETTERS_RE.search(it)) < 0.8 * len(items):
            continue
        counts: dict[str, int] = {}
        for it in items:
            counts[it] = counts.get(it, 0) + 1
        top = max(counts, key=counts.get)
        strict = longest = 0
        for k in range(2, len(items)):
            same = items[k] != items[k - 1] and (items[k] == items[k - 2] or k >= 3 and items[k] == items[k - 3])
            strict = strict + 1 if same else 0
            longest = max(longest, strict)
        rot = ItemRotation(len(items), len(counts), top, counts[top], a, b, longest)
        if len(spans) >= min_items and (best is None or rot.distinct / rot.items < best.distinct / best.items):
            best = rot
        if longest >= min_strict and (strict_best is None or longest > strict_best.strict):
            strict_best = rot
    return best, strict_best


def _only_deeper_between(text: str, a: int, b: int, indent: int) -> bool:
    """Between offsets a and b, only blank lines or lines indented deeper than ``indent``."""
    for line in text[a:b].split("\n")[1:-1] if b - a < 4096 else (None,):
        if line is None:
            return False
        if line.strip() and len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip()) <= indent:
            return False
    return True


_ITEM_TEXT_RE = re.compile(r"^[ \t]*(?:\*{0,2}\d{1,4}[.)]\*{0,2}|[-*\u2022+])[ \t]+(?P<text>.+)$", re.M)
# digits, punctuation and markup to spaces: what is left, split, are an item's words (ASCII-fast;
# other scripts' letters stay)
_NOT_LETTERS = str.maketrans({c: " " for c in "0123456789_!\"#$%&'()*+,-./:;<=>?@[\\]^`{|}~\t\r\n"})


def repeated_items(text: str) -> tuple[int, int, int, int] | None:
    """The longest run of consecutive list items (numbered or bulleted) whose words are the same
    (numbers aside: ``3. **Baking soda**: …``, ``4. **Baking soda**: …``), or nearly: (items,
    distinct words per item, start char, end char), or None.  An item's text runs to the next
    blank line or the next item."""
    best = None
    prev = first = None
    run, start = 0, 0
    items = list(_ITEM_TEXT_RE.finditer(text))
    for k, m in enumerate(items):
        # (an item's text runs to the next blank line or the next item)
        stop = items[k + 1].start() if k + 1 < len(items) else len(text)
        blank = text.find("\n\n", m.end(), stop)
        body = text[m.start("text"):min(stop if blank < 0 else blank, m.start("text") + 2000)]
        key = frozenset(w for w in body.lower().translate(_NOT_LETTERS).split() if len(w) > 1)
        if key and prev and (_same_item(key, prev) or _same_item(key, first)):
            run += 1
        else:
            run, start, first = 1, m.start(), key
        prev = key
        if run >= 2 and (best is None or run > best[0]):
            best = (run, len(key), start, m.end())
    return best


def _same_item(a: frozenset, b: frozenset) -> bool:
    if a == b:
        return True
    if len(a) < ITEM_MIN_WORDS_FUZZY or len(a & b) < ITEM_JACCARD * len(a | b):
        return False
    # (items that differ only in a counter word say what each step is: ``add the first egg``,
    # ``add the second egg``)
    return not (a ^ b) <= _COUNTER_WORD_SET


_COUNTER_WORD_SET = frozenset(COUNTER_WORDS)


ITEM_MIN_WORDS_FUZZY = 6
ITEM_JACCARD = 0.8
"""Two items of ≥ 6 distinct words are the same item when their word sets are within Jaccard 0.8
(``can grow up to 5.5 feet long`` / ``… in length``); an item continues a run when it is the
same as the one before it or as the run's first."""


def counting_loop(text: str, toks: Tokens, T: Thresholds, runaway: bool, n_requested, requested,
                  fuzzy_tail=None, blind_runs: dict | None = None, blind: np.ndarray | None = None,
                  n_implied=None) -> dict | None:
    """The counting-loop finding (see above): the number-blind periodic stretch at the
    end (or before a short closing: ``]``, a fence), else the longest number-blind repeat run
    anywhere; judged by its number columns, its words and the count the request asked for
    (``n_requested()``; for a list of bare numbers, else the size of the set it names,
    ``n_implied()``)."""
    L = len(toks)
    if blind is None:
        blind = toks.hashes.copy()
        blind[toks.is_number] = 0x5EED
    ids = blind  # (read only, unless the mixed tokens get their ids: a copy then)
    # tokens with a number inside (``test_case_5``, ``user5``): the same with the digits equated
    mixed = toks.has_digit & ~toks.is_number
    n_mixed = int(np.count_nonzero(mixed))
    where = mixed.nonzero()[0] if 0 < n_mixed <= 4096 else None
    if where is None:
        mixed = None
    W = min(L, 8192)
    trims = _closing_trims(text, toks)
    run_wanted = np.count_nonzero(toks.is_number) >= T.count_anywhere_min_copies
    if where is not None:
        ids = ids.copy()
        if not run_wanted:
            # (cheap first) with the mixed tokens all one token (more tokens equal than with their
            # digits equated) a tail of three copies must already be there for their digit-blind
            # ids to matter
            ids[where] = _ANY_MIXED  # (their digit-blind ids replace it below)
            if not any(_periodic_tail(ids[L - W:L - trim], 3) for trim in trims):
                return None
        if n_mixed > 24:  # (vectorised; any ids do that are equal exactly for equal digit-blind strings)
            ids[where] = digit_blind_hashes(toks, where)
        else:
            ids[where] = np.fromiter(
                (hash(DIGITS_RE.sub("#", text[a:b])) for a, b in zip(toks.starts[where].tolist(),
                                                                       toks.ends[where].tolist())),
                dtype=np.int64, count=where.size).view(np.uint64)
    cands = []
    for trim in trims:
        if trim == 0 and fuzzy_tail is not None and mixed is None:  # (the fuzzy loop's: the same sequence)
            fz = fuzzy_tail[1]
            trim = fz.trimmed if fz is not None else 0
        else:
            fz = tail_loop(ids[L - W:L - trim])
        if fz is not None and fz.copies >= 3:
            whole = fz.covered // fz.period
            first = L - trim - whole * fz.period
            cands.append((first, fz.period, whole, False))
    if run_wanted:
        # a counter anywhere (a loop the model left, then wrapped up): ≥ 8 copies of ≤ 32 tokens
        run = longest_run(ids, min_copies=T.count_anywhere_min_copies)
        if blind_runs is not None:
            blind_runs[T.count_anywhere_min_copies] = run  # (the number-blind longest run, for the caller)
        if run is not None:
            cands.append((run.start, run.period, int(run.copies), False))
    # records of code or data the same but for their id, anywhere (``books[3] = {"isbn": 4, "title":
    # "The Night Circus"}``, then the code goes on): ≥ 5 copies, judged below only inside code and
    # only when the copies carry the same words in quotes
    records = None
    if ("```" in text or "~~~" in text) and _QUOTED_WORDS_RE.search(text) is not None and (
            np.count_nonzero(toks.is_number) >= T.count_words_min_copies):
        records = longest_run(ids, max_period=64, min_copies=T.count_words_min_copies)
        if records is not None:
            cands.append((records.start, records.period, int(records.copies), True))
    best = None
    n_asked = n_requested()
    spans = None
    for first, period, whole, record_only in cands:
        n_req, implied = n_asked, False
        if whole < 3:
            continue
        # the longest counting suffix (halving): a few real items may come before the counter
        # took over (``7 × 3, 7 × 9, … then 7 × 8, 7 × 8, …``)
        first0, whole0 = first, whole
        while True:
            cols = columns(text, toks.starts, toks.ends, toks.is_number, first, period, whole, mixed)
            if cols.counting or whole < 2 * T.count_words_min_copies:
                break
            half = whole // 2
            first += (whole - half) * period
            whole = half
        # (the items of a copy: two alternating rows are two items each time)
        per = items_per_period(text, int(toks.starts[first0]), int(toks.ends[first0 + period - 1]))
        unit_words0 = prose_words(token_texts(text, toks, first0, first0 + period))
        # (a list of bare numbers, ``12, 17, 20, …``: one number and its separator)
        bare = period <= 2 and toks.is_number[first0:first0 + period].any() and not unit_words0
        ended = runaway and first0 + whole0 * period >= L - 2  # (still going when max_tokens cut it)
        over0 = n_req is not None and whole0 * per > n_req * T.count_request_factor + T.count_request_slack
        past = not cols.counting and period >= 2 and over0 and unit_words0 >= 1  # (a template, not numbers)
        if bare and not cols.counting and not past:
            # bare numbers far past the count asked for (or the size of the set named: the
            # multiplication table of 12), still going when max_tokens cut them (a list that ends
            # by itself may count something else than the request's count: 25 primes for "in 3 steps")
            bound = n_req if n_req is not None else (n_implied() if n_implied is not None else None)
            past = (ended and bound is not None
                    and whole0 > bound * T.count_request_factor + T.count_request_slack)
            if past and n_req is None:
                n_req, implied = bound, True
        if past:
            # one template far past the count asked for, whatever its numbers do (48 numbers
            # when 20 were asked): the counter is not the point, the count is
            first, whole = first0, whole0
            cols = columns(text, toks.starts, toks.ends, toks.is_number, first, period, whole, mixed)
        elif not cols.counting:
            continue
        a = int(toks.starts[first])
        b = int(toks.ends[first + whole * period - 1])
        unit_toks = token_texts(text, toks, first + (whole - 1) * period, first + whole * period)
        unit = text[int(toks.starts[first + (whole - 1) * period]):b]
        words = prose_words(unit_toks)
        wordy = words >= T.count_words_min and words >= T.count_words_share * period
        if spans is None:
            spans = fence_spans(text) if ("```" in text or "~~~" in text) else []
        in_code = in_spans(a, spans)
        cov = whole * period / L
        far = n_req is not None and whole * per > n_req * T.count_request_factor + T.count_request_slack
        # a record in code whose words are the same text in every copy (``{"isbn": 4, "title": "The
        # Night Circus"}``): only its id counts; unrolled code has no such text
        quoted = in_code and words >= T.count_words_min and _QUOTED_WORDS_RE.search(text, a, b) is not None
        if quoted:
            # …and only where the model stopped varying them: real records came before the copies
            # (the same shape, other words), or the copies ran to max_tokens or far past the count
            # (fixtures, logs, program output and unrolled code say one thing from the first copy)
            quoted = ended or over0 or _varied_before(text, toks, first0, period)
        if record_only and not quoted:
            continue  # (the record candidate is only for such records)
        if wordy:
            fire = (whole >= T.count_code_min_copies and runaway) if in_code else whole >= T.count_words_min_copies
        else:
            fire = False
        fire = fire or (quoted and whole >= T.count_words_min_copies)
        # one number copied into every cell of a row of nothing else, the rows counting
        # (``| 10 | 10 | 10 |``, ``| 12 | 12 | 12 |``): a table of nothing.  (Unrolled code has
        # names around its copied index: ``out[3] = f(x[3])``.)
        fire = fire or (words == 0 and cols.copied >= T.count_copied_min_columns and cols.copied == cols.counters
                        and whole >= T.count_words_min_copies)
        # one long number copied into every item beside the counter and nothing else (``1.
        # 123456789012``, ``2. 123456789012``): the same item numbered, not N things asked for
        fire = fire or (words == 0 and cols.counters == 1 and cols.constants >= 1 and cols.data == 0
                        and cols.copied == 0 and whole >= T.count_words_min_copies
                        and _long_constant(unit, T.count_constant_min_digits))
        if (n_req is None or far) and not cols.computed:
            # (a number and its separator, ``| 20``, is a row of a table up to a few dozen)
            fire = fire or (runaway and whole >= (T.count_runaway_min_copies if period > 2
                                                  else T.count_runaway_short_min_copies))
        # (far past the count inside a code block: rows of data in a fence, or a response that
        # hit max_tokens still counting; unrolled code a request numbered stops by itself)
        fire = fire or (far and (not in_code or runaway))
        if past and not far:
            fire = False
        if fire and requested(unit, whole):
            fire = False
        info = {"period": period, "copies": whole, "items": whole * per, "covered_tokens": whole * period, "coverage": r4(cov),
                "start_char": a, "prose_words": words, "requested_count": n_req, "in_code": in_code,
                **cols.to_dict()}
        asked = f"; the request asked for {n_req}" if n_req is not None else ""
        if past:
            msg = (f"counting loop: {whole * per} items of one template (period {period} tokens) from char {a}, "
                   f"{pct(cov)} of the response, far past the {n_req} the request asked for"
                   + (" (the size of the set it names)" if implied else "") + f" — “{short(unit, 60)}”")
        else:
            msg = (f"counting loop: {whole * per} items of one template (period {period} tokens) from char {a}, "
                   f"{pct(cov)} of the response, in which only a counter changes ({cols.counters} counter, "
                   f"{cols.constants} constant number columns{', last value ' + str(cols.last_counter) if cols.last_counter is not None else ''})"
                   f"{asked} — “{short(unit, 60)}”")
        info["past_request"] = past
        got = {"fire": fire, "info": info, "message": msg, "span": (a, b),
               "label": f"{whole * per} items" + ("" if past else ", counter only")}
        if fire:
            return got
        best = best or got
    return best


def _long_constant(unit: str, min_digits: int) -> bool:
    """A copy holds a number of ``min_digits`` digits or more (a counter of items is shorter)."""
    return any(len(m) >= min_digits for m in DIGITS_RE.findall(unit))


# a quoted string of two words or more (a record's title, a name): the content of a record
_QUOTED_WORDS_RE = re.compile(r"""(["'])[^"'\n\d]*?[^\W\d_]{2,}[ \t]+[^\W\d_]{2,}[^"'\n]*?\1""")
_QUOTED_RE = re.compile(r"""(["'])[^"'\n]*\1""")


def _masked(line: str) -> str:
    """A line's shape: its quoted strings emptied, its digits equated, its spaces dropped."""
    return DIGITS_RE.sub("0", _QUOTED_RE.sub('""', line)).replace(" ", "")


def _varied_before(text: str, toks: Tokens, first: int, period: int) -> bool:
    """Among the whole lines from one copy before ``first`` to the end of the second copy, lines of
    one shape with quoted words say two different things (``"title": "Dune"`` before ``"title":
    "The Night Circus"`` ×7): the records varied, then stopped varying."""
    if first == 0:
        return False
    a = text.rfind("\n", 0, int(toks.starts[max(0, first - period)])) + 1
    b = text.find("\n", int(toks.ends[min(first + 2 * period, len(toks)) - 1]))
    forms: dict[str, set] = {}
    for line in text[a:b if b >= 0 else len(text)].split("\n"):
        if _QUOTED_RE.search(line):
            forms.setdefault(_masked(line), set()).add(DIGITS_RE.sub("0", line).strip().rstrip(","))
    return any(len(v) > 1 for v in forms.values())


_PROBE_K = np.arange(2, 16)
_ANY_MIXED = np.uint64(0x5EED5EED)  # (every token with digits inside, for a first look)


def _periodic_tail(seq: np.ndarray, copies: int) -> bool:
    """Some period p has ``copies`` whole copies at the end of ``seq`` (what ``tail_loop`` needs to
    report a loop of that many copies)."""
    n = int(seq.size)
    pmax = n // copies
    if pmax < 1:
        return False
    r = seq[::-1]
    cand = (r[1:pmax + 1] == r[0]).nonzero()[0] + 1
    if cand.size == 0:
        return False
    cand = cand[r[cand + 1] == r[1]]           # (p + 1 ≤ pmax + 1 < n; k = 1 < (copies - 1)·p)
    if cand.size > 4 and n >= 48:
        # (all at once: r[p + k] == r[k] for every k < 2p; k ≤ 15 < 2·pmax, p + k < n)
        bad = r[cand[:, None] + _PROBE_K] != r[_PROBE_K]
        bad &= _PROBE_K < 2 * cand[:, None]
        cand = cand[~bad.any(axis=1)]
        if cand.size > 64:
            return True   # (a first look only: many candidates, the loop itself tells)
    for p in cand.tolist():
        if match_len(r, p) >= (copies - 1) * p:
            return True
    return False


def _closing_trims(text: str, toks) -> list[int]:
    """How many tokens to leave off the end to reach a loop that a short closing follows: none, or
    the trailing punctuation-only tokens (``]``, ``}``, a code fence; at most 12); or the last
    word when it ends the text, which max_tokens may have cut (``…</room>\n<ro``)."""
    L = len(toks)
    trims = [0]
    if L > 1 and int(toks.ends[-1]) == len(text) and (text[-1].isalnum() or text[-1] == "_"):
        trims.append(1)
    k = 0
    while k < min(12, L - 1):
        t = text[int(toks.starts[L - 1 - k]):int(toks.ends[L - 1 - k])]
        if t[0].isalnum() or t[0] == "_":
            break
        k += 1
    if k:
        trims.append(k)
    return trims
