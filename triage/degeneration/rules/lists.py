"""The rules for lists and counters: a template whose only change is a counter, the same item
again and again, a list far past the count asked for, the same few items in rotation."""

from __future__ import annotations

import re
import numpy as np

from .. import counting as C
from ..findings import short
from .context import _WORD_RE, Context


def check_counting_loop(c: Context) -> None:
    """A template whose only change is a counter (``counting.counting_loop``)."""
    toks, T = c.toks, c.T
    if c.loop_fired or c.L < 8 or np.count_nonzero(toks.has_digit if toks.has_digit is not None else toks.is_number) < 3:  # (class7 counts)
        return
    cl = C.counting_loop(c.text, toks, T, c.runaway, c.n_requested, c.requested, c.fuzzy_tail, c.blind_runs,
                         c.number_blind(), n_implied=lambda: C.count_implied(c.messages))
    if cl is not None:
        c.mt["counting_loop"] = cl["info"]
        if cl["fire"] and c.sequence_answered:
            c.exempted.append("counting_loop")
        elif cl["fire"]:
            c.fire("counting_loop", cl["message"], T.sev_counting_loop, cl["span"], (*cl["span"], "loop", cl["label"]))
            c.loop_fired = True


# the words of an answer or a status, which a list of answers or a checklist repeats legitimately
_ANSWER_WORDS = frozenset({
    "yes", "no", "true", "false", "done", "ok", "okay", "correct", "incorrect", "right", "wrong", "none", "na",
    "pending", "todo", "tbd", "checked", "unchecked", "complete", "completed", "passed", "failed", "pass", "fail",
    "same", "agree", "disagree", "maybe", "unknown", "null", "empty", "skip", "skipped",
})


def check_repeated_items(c: Context) -> None:
    """The same list item again and again, only its number changing."""
    text, T = c.text, c.T
    if c.loop_fired or "\n" not in text:
        return
    ri = C.repeated_items(text)
    if ri is None:
        return
    items, words, a, b = ri
    c.mt["repeated_items"] = {"items": items, "words": words, "start_char": a, "end_char": b}
    if words >= T.repeated_items_min_words:
        enough = items >= T.repeated_items_min
    else:  # (a name or two said again; answers and statuses repeat legitimately: True, Done, Yes)
        said = {w.lower() for w in _WORD_RE.findall(text[a:b])}
        enough = items >= T.repeated_items_short_min and not said <= _ANSWER_WORDS
    if enough and c.sequence_answered:
        c.exempted.append("counting_loop")
    elif enough and not c.requested(text[a:b], items):
        c.fire("counting_loop", f"counting loop: the same list item {items} times back to back, only its number "
               f"changing, from char {a} — “{short(text[a:b], 60)}”", T.sev_counting_loop, (a, b),
               (a, b, "loop", f"{items}× the same item"))
        c.loop_fired = True


def check_item_rotation(c: Context) -> None:
    """The same few list items or table rows again and again, not back to back (``counting.
    item_rotation``): two titles in turn for ``10 books``."""
    text, T = c.text, c.T
    if c.loop_fired or c.n_newlines < min(T.rotation_min_items, T.rotation_min_echoes + 2) - 1:
        return
    few, strict = C.item_rotation(text, T.rotation_min_items, c.item_runs(), T.rotation_min_echoes)
    if few is None and strict is None:
        return
    if few is not None:
        c.mt["item_rotation"] = few.to_dict()
    if strict is not None:
        c.mt["strict_rotation"] = strict.to_dict()
    if c.sequence_answered:  # (two medicines in turn, a rota)
        c.exempted.append("item_rotation")
        return
    rot = few if few is not None and few.distinct <= T.rotation_max_distinct_share * few.items else None
    if rot is None and strict is not None:
        # a short strict rotation: only where fewer different things came than were asked for,
        # or still rotating when max_tokens cut it
        n_req = c.n_requested()
        if (n_req is not None and strict.distinct < n_req) or (c.runaway and not text[strict.end:].strip()):
            rot = strict
    if rot is None:
        return
    if c.requested(rot.top, rot.top_count):
        c.exempted.append("item_rotation")
        return
    a, b = rot.start, rot.end
    c.fire("near_verbatim_loop", f"items in rotation: {rot.items} list items from char {a} say only {rot.distinct} "
           f"different things (“{short(rot.top, 50)}” ×{rot.top_count})", T.sev_near_loop, (a, b),
           (a, b, "loop", f"{rot.items} items, {rot.distinct} different"))
    c.loop_fired = True


def check_list_overrun(c: Context) -> None:
    """A list far past the count asked for (``12 fruits`` answered with 33 until max_tokens)."""
    text, T, runaway = c.text, c.T, c.runaway
    n_req, implied = c.n_requested(), False
    if n_req is None and not c.loop_fired and "\n" in text:
        n_req = C.count_implied(c.messages)
        implied = n_req is not None
    if c.loop_fired or "\n" not in text or n_req is None:
        return
    run = C.longest_item_run(text, c.item_runs())
    if run is None:
        return
    c.mt["item_run"] = {**run.to_dict(), "requested_count": n_req, "count_implied": implied}
    over = run.items > n_req * T.count_request_factor and run.items >= n_req + T.list_overrun_min_extra
    going = runaway and not text[run.end:].strip()  # (still listing when max_tokens cut it)
    if implied:  # a set's size is a convention (10 or 12 rows), not the user's number: far past
        # it, or past it by half, counting and still listing when max_tokens cut it
        over = run.items >= n_req * T.count_request_factor + T.list_overrun_min_extra or (
            going and run.items >= n_req * T.count_request_factor and _counted(text, c.item_runs(), run.start))
    if over and (runaway or run.items >= T.list_overrun_factor * n_req):
        c.fire("counting_loop", f"list overrun: {run.items} items from char {run.start} where the request "
               f"asked for {n_req}" + (" (the size of the set it names)" if implied else "")
               + ("; still listing when the response hit max_tokens" if going else ""),
               T.sev_counting_loop, (run.start, run.end),
               (run.start, run.end, "loop", f"{run.items} items for {n_req}"))
        c.loop_fired = True


_FIRST_NUMBER_RE = re.compile(r"\d+")


def _counted(text: str, runs, start: int) -> bool:
    """The items of the run that starts at ``start`` carry a counter: the first number of each
    item (its list number or a table row's first cell) is the one before it plus one, for most of
    them (rows of planets or of books are not counted; ``| 13 | 13 | 13 |`` rows are)."""
    for a, _b, spans in runs:
        if a != start:
            continue
        firsts = []
        for i, j in spans:
            m = _FIRST_NUMBER_RE.search(text, i, j)
            firsts.append(int(m.group()) if m and len(m.group()) < 7 else None)
        steps = sum(1 for x, y in zip(firsts, firsts[1:]) if x is not None and y == x + 1)
        return steps >= 0.8 * (len(spans) - 1)
    return False
