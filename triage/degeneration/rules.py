"""The rules of the verdict: one function per finding, in the order ``analyze()`` calls them.

Each rule reads what it needs from the shared ``Context`` (the text, its tokens, the thresholds,
what earlier rules measured), adds its metrics to ``c.mt`` and, when it fires, a ``Reason`` and a
``Highlight``.  Most loop findings set ``c.loop_fired``, and most loop rules after them then
stand down, so a loop is explained once, by the earliest rule that sees it.  Every threshold is a field of ``Thresholds``
(``thresholds.py``); the measurements themselves are in the metric modules (``tokens``,
``repetition``, ``lines``, ``markup``, ``turns``, ``counting``, ``near_verbatim``, ``nesting``).
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from . import counting as C
from . import near_verbatim as NV
from . import nesting as N
from .findings import LOOP_CODES, Highlight, Reason, pct, r4, short
from .lines import compression_ratio, line_char_offset, line_stats
from .markup import markup_balance, symbol_run, symbol_tail_run
from .messages import norm_words, requested_repetition
from .repetition import (Loop, char_tail_loop, longest_run, ngram_stats, tail_loop_tolerant, tail_phrase_count,
                         tail_repeat)
from .thresholds import Thresholds
from .tokens import Tokens, clean_logprobs, ids_array, token_texts
from .turns import confabulated_turns

_WORD_RE = re.compile(r"[^\W\d_]{2,}")  # a word of letters (≥ 2)


@dataclass
class Context:
    """What the rules of one analysis share: the input, its tokens, the metrics and findings being
    built, and what one rule measured that a later one reads."""
    text: str
    data: bytes                # the text as UTF-8
    toks: Tokens
    T: Thresholds
    finish_reason: str | None
    messages: object
    chat_template: str | None
    token_ids: object
    token_logprobs: object
    runaway: bool              # finish_reason == "length": the response hit max_tokens
    last_may_be_cut: bool = False  # the last token may be a word that max_tokens cut (measure_tail_loop)
    mt: dict = field(default_factory=dict)             # the metrics, in the order they are reported
    reasons: list[Reason] = field(default_factory=list)
    highlights: list[Highlight] = field(default_factory=list)
    loop_fired: bool = False   # a loop finding fired: the later loop rules stand down
    request: tuple[int, str] | None = None             # requested_repetition(messages)
    exempted: list[str] = field(default_factory=list)  # loop findings the request excused
    # the tail loop (measure_tail_loop), read by the tail-loop rule, the fuzzy loop and the logprobs
    loop: Loop | None = None
    loop_char: int | None = None        # where its first whole copy starts
    loop_unit: str = ""                 # one whole copy
    loop_period_toks: list[str] = field(default_factory=list)
    loop_structural: bool = False       # a copy is only markup / punctuation
    markup: dict = field(default_factory=dict)         # markup_balance(text)
    fuzzy_tail: tuple | None = None     # (window start, Loop) of the number-blind tail loop, when computed
    blind_runs: dict = field(default_factory=dict)     # min_copies → longest_run of the number-blind ids
    # arrays the near-verbatim and nesting rules share, set by the first that needs them
    first_cp: np.ndarray | None = None       # the first code point of each token
    newlines: np.ndarray | None = None       # where the text's newlines are
    after_newlines: np.ndarray | None = None  # the first token after each of them
    confab: dict | None = None          # confabulated_turns(...), for the end-marker rule
    model_loop: Loop | None = None      # the tail loop of the model's token ids
    model_ids: np.ndarray | None = None
    _n_req: list = field(default_factory=list)
    _blind: list = field(default_factory=list)

    @property
    def L(self) -> int:
        return len(self.toks)

    @cached_property
    def n_newlines(self) -> int:
        return self.text.count("\n")

    def n_requested(self) -> int | None:
        """``count_requested(messages)``, computed once."""
        if not self._n_req:
            self._n_req.append(C.count_requested(self.messages))
        return self._n_req[0]

    def number_blind(self) -> np.ndarray:
        """The token ids with every number the same token (0x5EED), computed once (read only)."""
        if not self._blind:
            a = self.toks.hashes.copy()
            a[self.toks.is_number] = 0x5EED
            self._blind.append(a)
        return self._blind[0]

    def requested(self, unit: str, copies: float) -> bool:
        """The user asked for N copies of this unit (its words are all in what the request
        names: the object of its repetition verb) and got at most about N: the answer, not a loop."""
        request = self.request
        if request is None:
            return False
        words = {w for w in norm_words(unit).split() if not w.isdigit()}  # (numbered copies)
        return bool(words) and words <= set(request[1].split()) and copies <= request[0] * 1.1 + 1

    def fire(self, code: str, message: str, severity: float, span: tuple[int, int] | None,
             highlight: tuple[int, int, str, str] | None = None) -> None:
        """Add a finding (and the highlight that shows it)."""
        self.reasons.append(Reason(code, message, severity, span))
        if highlight is not None:
            self.highlights.append(Highlight(*highlight))


# ---- measurements every rule may read ------------------------------------------------------------

def measure_text(c: Context) -> None:
    """Size, n-gram repetition, compression, finish reason; what the request asks to be repeated."""
    c.mt.update({"chars": len(c.text), "bytes": len(c.data), "tokens": c.L, "token_unit": "word/punct"})
    c.mt.update({k: r4(v) for k, v in ngram_stats(c.toks.hashes).items()})
    c.mt["compression_ratio"] = r4(compression_ratio(c.data))
    c.mt["finish_reason"] = c.finish_reason
    c.mt["runaway"] = c.runaway
    c.request = requested_repetition(c.messages)


def measure_tail_loop(c: Context) -> None:
    """The exact loop at the end of the tokens (``tail_loop``)."""
    text, toks, L = c.text, c.toks, c.L
    # the last token may be a fragment of a word cut by max_tokens only if it is a word token
    # that ends the text
    # (or a U+FFFD: a multi-byte character whose bytes max_tokens cut)
    last_may_be_cut = L > 0 and int(toks.ends[-1]) == len(text) and (
        text[-1].isalnum() or text[-1] == "_" or text[-1] == "\ufffd")
    c.last_may_be_cut = last_may_be_cut
    loop = c.loop = tail_loop_tolerant(toks.hashes, last_may_be_cut)
    loop_info = None
    if loop is not None:
        c.loop_char = int(toks.starts[loop.start])
        end_tok = L - loop.trimmed
        last_copy_char = int(toks.starts[end_tok - loop.period])
        c.loop_period_toks = token_texts(text, toks, end_tok - loop.period, end_tok)
        c.loop_unit = text[last_copy_char:int(toks.ends[end_tok - 1])]  # one whole copy
        c.loop_structural = _structural(c.loop_period_toks)
        loop_info = {"period": loop.period, "copies": r4(loop.copies), "covered_tokens": loop.covered,
                     "coverage": r4(loop.coverage), "start_token": loop.start, "start_char": c.loop_char,
                     "structural": c.loop_structural,
                     "unit": short(c.loop_unit, 80)}
    c.mt["tail_loop"] = loop_info


def measure_markup(c: Context) -> None:
    """Tag and code-fence balance (``markup_balance``)."""
    markup = c.markup = markup_balance(c.text)
    c.mt["markup"] = {"tags": markup["tags"], "excess_close": markup["excess_close"],
                      "excess_open": markup["excess_open"], "code_fences": markup["code_fences"],
                      "unbalanced_fence": markup["unbalanced_fence"]}


# ---- loops -----------------------------------------------------------------------------------

def check_tail_loop(c: Context) -> None:
    """Copies of one unit at the very end of the response."""
    loop, T, runaway = c.loop, c.T, c.runaway
    if loop is None:
        return
    copies, covered, cov = loop.copies, loop.covered, loop.coverage
    structural = c.loop_structural
    unbalanced = structural and _loop_unbalanced(c.loop_period_toks, copies, c.markup)
    msg = (f"tail loop: period {loop.period} tokens ×{copies:.0f}, covering the last "
           f"{pct(cov)} of the response ({covered} tokens) — repeating “{short(c.mt['tail_loop']['unit'], 50)}”")
    sev = 0.0
    if structural and not unbalanced:
        if copies >= T.loop_min_copies and covered >= T.structural_loop_min_tokens:
            sev = T.sev_loop
    elif copies >= T.loop_strong_copies and covered >= T.loop_strong_tokens:
        sev = T.sev_loop_strong
    elif copies >= T.loop_min_copies and covered >= T.loop_min_tokens and (cov >= T.loop_min_coverage or runaway):
        sev = T.sev_loop
    elif (runaway and copies >= T.loop_runaway_min_copies and covered >= T.loop_runaway_min_tokens
          and cov >= T.loop_runaway_min_coverage):
        sev = T.sev_loop
    elif (runaway and copies >= T.loop_cut_min_copies and covered >= T.loop_cut_min_tokens
          and cov >= T.loop_cut_min_coverage):
        sev = T.sev_loop
        msg += "; a third copy had begun when max_tokens cut it"
    if sev > 0 and c.requested(c.loop_unit, copies):
        c.exempted.append("tail_loop")
        sev = 0.0
    if sev > 0:
        if unbalanced:
            msg += "; the repeated closing tags have no matching opening tags"
        if runaway:
            msg += "; the response hit max_tokens inside the loop"
        c.loop_fired = True
        c.fire("tail_loop", msg, sev, (c.loop_char, len(c.text)),
               (c.loop_char, len(c.text), "loop", f"period {loop.period} ×{copies:.0f}"))


def check_fuzzy_loop(c: Context) -> None:
    """The tail loop with every number equal (``11. Learn… 12. Learn…``)."""
    text, toks, T, L = c.text, c.toks, c.T, c.L
    if c.loop_fired or L < T.fuzzy_min_tokens:
        return
    W = min(L, 8192)
    numbers = toks.is_number[L - W:]
    if W == L and not np.count_nonzero(numbers):
        fz = c.loop  # (no number to equate: the same sequence as the tail loop's)
    else:
        window = c.number_blind()[L - W:]  # every number is the same token
        fz = tail_loop_tolerant(window, c.last_may_be_cut)
        c.fuzzy_tail = (L - W, fz)
    if fz is None:
        return
    covered = fz.covered
    cov = covered / L
    fz_end = L - fz.trimmed
    unit_toks = token_texts(text, toks, fz_end - fz.period, fz_end)
    # (words of letters, not tag names: ``<td>2023-10-01</td>`` rows have none)
    alpha = sum(1 for k, t in enumerate(unit_toks) if len(t) > 1 and t.isalpha()
                and not (k and unit_toks[k - 1] in ("<", "/")))
    start_tok = L - W + fz.start
    fz_char = int(toks.starts[start_tok])
    c.mt["fuzzy_loop"] = {"period": fz.period, "copies": r4(fz.copies), "covered_tokens": covered,
                          "coverage": r4(cov), "start_char": fz_char, "alpha_tokens": alpha}
    massive = fz.copies >= T.fuzzy_massive_copies and cov >= T.fuzzy_massive_coverage
    fz_unit = text[int(toks.starts[fz_end - fz.period]):int(toks.ends[fz_end - 1])]
    if (fz.copies >= T.fuzzy_min_copies and covered >= T.fuzzy_min_tokens
            and cov >= T.fuzzy_min_coverage and alpha >= T.fuzzy_min_alpha
            and (c.runaway or massive or not T.fuzzy_needs_runaway)
            and not c.requested(fz_unit, fz.copies)):
        last = int(toks.starts[fz_end - fz.period])
        c.fire("fuzzy_loop",
               f"near loop (numbers ignored): period {fz.period} tokens ×{fz.copies:.0f}, covering the last "
               f"{pct(cov)} of the response — repeating “{short(text[last:], 50)}”",
               T.sev_fuzzy_loop, (fz_char, len(text)),
               (fz_char, len(text), "fuzzy_loop", f"period {fz.period} ×{fz.copies:.0f}"))
        c.loop_fired = True


def check_counting_loop(c: Context) -> None:
    """A template whose only change is a counter (``counting.counting_loop``)."""
    toks, T = c.toks, c.T
    if c.loop_fired or c.L < 8 or np.count_nonzero(toks.has_digit if toks.has_digit is not None else toks.is_number) < 3:  # (class7 counts)
        return
    cl = C.counting_loop(c.text, toks, T, c.runaway, c.n_requested, c.requested, c.fuzzy_tail, c.blind_runs,
                         c.number_blind())
    if cl is not None:
        c.mt["counting_loop"] = cl["info"]
        if cl["fire"]:
            c.fire("counting_loop", cl["message"], T.sev_counting_loop, cl["span"], (*cl["span"], "loop", cl["label"]))
            c.loop_fired = True


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
    enough = (items >= T.repeated_items_min if words >= T.repeated_items_min_words
              else items >= T.repeated_items_short_min)
    if enough and not c.requested(text[a:b], items):
        c.fire("counting_loop", f"counting loop: the same list item {items} times back to back, only its number "
               f"changing, from char {a} — “{short(text[a:b], 60)}”", T.sev_counting_loop, (a, b),
               (a, b, "loop", f"{items}× the same item"))
        c.loop_fired = True


def check_item_rotation(c: Context) -> None:
    """The same few list items or table rows again and again, not back to back (``counting.
    item_rotation``): two titles in turn for ``10 books``."""
    text, T = c.text, c.T
    if c.loop_fired or c.n_newlines < T.rotation_min_items - 1:
        return
    rot = C.item_rotation(text, T.rotation_min_items)
    if rot is None:
        return
    c.mt["item_rotation"] = rot.to_dict()
    if rot.distinct > T.rotation_max_distinct_share * rot.items or c.requested(rot.top, rot.top_count):
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
    run = C.longest_item_run(text)
    if run is None:
        return
    c.mt["item_run"] = {**run.to_dict(), "requested_count": n_req, "count_implied": implied}
    over = run.items > n_req * T.count_request_factor and run.items >= n_req + T.list_overrun_min_extra
    if implied:  # a set's size is a convention (10 or 12 rows), not the user's number
        over = run.items >= n_req * T.count_request_factor + T.list_overrun_min_extra
    going = runaway and not text[run.end:].strip()  # (still listing when max_tokens cut it)
    if over and (runaway or run.items >= T.list_overrun_factor * n_req):
        c.fire("counting_loop", f"list overrun: {run.items} items from char {run.start} where the request "
               f"asked for {n_req}" + (" (the size of the set it names)" if implied else "")
               + ("; still listing when the response hit max_tokens" if going else ""),
               T.sev_counting_loop, (run.start, run.end),
               (run.start, run.end, "loop", f"{run.items} items for {n_req}"))
        c.loop_fired = True


def check_line_runs(c: Context) -> None:
    """The same line again and again, in a row (content lines and short / structural ones)."""
    text, T, runaway = c.text, c.T, c.runaway
    ls = line_stats(text, T.line_run_min_chars)
    c.mt["lines"] = {"lines": ls.lines, "duplicate_share": r4(ls.duplicate_share), "longest_run": ls.run,
                     "longest_run_line": short(ls.run_line, 80), "structural_run": ls.structural_run,
                     "structural_run_line": short(ls.structural_run_line, 40)}
    for run, line, start_line, minimum, kind in (
            (ls.run, ls.run_line, ls.run_start_line, T.line_run_three, ""),
            (ls.structural_run, ls.structural_run_line, ls.structural_run_start_line,
             T.structural_line_run_min, "short ")):
        if run >= minimum and c.requested(line, run):
            c.exempted.append("line_run")
        elif run >= minimum:
            a = line_char_offset(text, start_line)
            b = _end_of_run(text, a, line, run)
            covers = (b - a) >= T.line_run_min_coverage * len(text)
            if kind == "" and run < T.line_run_min:
                if not covers:  # (three lines: only over 15 % of the response)
                    continue
            elif run < T.line_run_strong and not covers and not (runaway and not text[b:].strip()):
                continue
            c.fire("line_run", f"{kind}line repeated {run}× in a row: “{short(line, 60)}”", T.sev_line_run, (a, b),
                   (a, b, "line_run", f"{run}× same line"))


def check_repeat_run(c: Context) -> None:
    """A repeat run anywhere (a loop the model stopped, or left: ``is is is … is.``)."""
    text, toks, T = c.text, c.toks, c.T
    run_copies = int(min(T.run_min_copies, T.run_short_min_copies))  # (reported from there)
    if c.blind_runs.get(run_copies, True) is None:
        return  # (none with the numbers equated, so none here: these ids are equal less often)
    run = longest_run(toks.hashes, min_copies=run_copies, words=toks.is_word, word_share=T.run_min_word_share)
    if run is None:
        return
    unit_a, unit_b = int(toks.starts[run.start]), int(toks.ends[run.start + run.period - 1])
    c.mt["repeat_run"] = {"period": run.period, "copies": r4(run.copies), "covered_tokens": run.covered,
                          "start_char": unit_a, "unit": short(text[unit_a:unit_b], 80)}
    # prose, not markup or code: at least half of a copy's tokens are words of letters (the
    # closing tags of a nested page and nested `if (x) {` repeat legitimately; the tail loop,
    # the line runs and the markup balance judge floods of those)
    unit_words = toks.is_word[run.start:run.start + run.period]
    has_word = np.count_nonzero(unit_words) / unit_words.size >= T.run_min_word_share
    enough = (run.copies >= T.run_short_min_copies if run.period <= T.run_short_period
              else run.copies >= T.run_min_copies and run.covered >= T.run_min_tokens)
    fired = {r.code for r in c.reasons}
    if has_word and enough and not c.loop_fired and "line_run" not in fired:
        if c.requested(text[unit_a:unit_b], run.copies):
            c.exempted.append("repeat_run")
        else:
            end = int(toks.ends[run.start + run.covered - 1])
            c.fire("repeat_run", f"repeat run: “{short(text[unit_a:unit_b], 50)}” ×{run.copies:.0f} back to back "
                   f"({run.covered} tokens) at char {unit_a}", T.sev_repeat_run, (unit_a, end),
                   (unit_a, end, "loop", f"period {run.period} ×{run.copies:.0f}"))
            c.loop_fired = True


def check_record_run(c: Context) -> None:
    """A record or block said again and again, word for word (``{"make": "Ford", "model":
    "FoxCorp"}`` ×7 in a JSON array; the same two-line comment ×5)."""
    text, toks, T = c.text, c.toks, c.T
    if c.loop_fired or "line_run" in {r.code for r in c.reasons} or c.L < T.record_run_min_period * 2:
        return
    rec = longest_run(toks.hashes, min_copies=T.record_run_min_copies, words=toks.is_word, word_share=0.0)
    if rec is None or rec.period < T.record_run_min_period or rec.covered < T.loop_min_tokens:
        return
    unit_a, unit_b = int(toks.starts[rec.start]), int(toks.ends[rec.start + rec.period - 1])
    end = int(toks.ends[rec.start + rec.covered - 1])
    unit = text[unit_a:unit_b]
    words = set(_WORD_RE.findall(unit.lower()))
    if len(words) < T.record_run_min_words or end - unit_a < T.record_run_min_coverage * len(text):
        return
    c.mt["record_run"] = {"period": rec.period, "copies": r4(rec.copies), "covered_tokens": rec.covered,
                          "start_char": unit_a, "unit": short(unit, 80)}
    if c.requested(unit, rec.copies):
        c.exempted.append("record_run")
    else:
        c.fire("repeat_run", f"repeated block: “{short(unit, 50)}” ×{rec.copies:.0f} word for word, back "
               f"to back, at char {unit_a} ({(end - unit_a) / len(text):.0%} of the response)",
               T.sev_repeat_run, (unit_a, end), (unit_a, end, "loop", f"block ×{rec.copies:.0f}"))
        c.loop_fired = True


def check_char_loop(c: Context) -> None:
    """A loop at the end in characters (inside one token, or whitespace)."""
    text, T, runaway = c.text, c.T, c.runaway
    cl = char_tail_loop(text)
    if cl is None or cl.copies < 3:
        return
    unit = text[-cl.period:]
    c.mt["char_loop"] = {"period_chars": cl.period, "copies": r4(cl.copies), "covered_chars": cl.covered,
                         "unit": unit}
    subword = (runaway and sum(ch.isalpha() for ch in unit) >= 2 and cl.copies >= T.char_loop_subword_min_copies
               and cl.covered >= T.char_loop_subword_min_chars)
    if not c.loop_fired and (subword or (
            cl.copies >= T.char_loop_min_copies
            and cl.covered >= (T.char_loop_runaway_min_chars if runaway else T.char_loop_min_chars)
            and (runaway or cl.covered >= T.char_loop_min_coverage * len(text)))):
        if c.requested(unit, cl.copies):
            c.exempted.append("char_loop")
        else:
            shown = unit.encode("unicode_escape").decode() if not unit.strip() else unit
            c.fire("char_loop", f"tail loop in characters: “{short(shown, 30)}” ×{cl.copies:.0f}, the last "
                   f"{cl.covered} characters ({pct(cl.covered / len(text))} of the response)",
                   T.sev_char_loop, (cl.start, len(text)),
                   (cl.start, len(text), "loop", f"{cl.period} chars ×{cl.copies:.0f}"))
            c.loop_fired = True


def check_symbol_flood(c: Context) -> None:
    """A flood of a few symbols at the end (emoji repeated until max_tokens), or one the model
    left that fills a real part of the response."""
    text, T = c.text, c.T
    if c.loop_fired:
        return
    sf = symbol_tail_run(text) if c.runaway else None
    if sf is None:
        _check_symbol_run(c)
        return
    c.mt["symbol_flood"] = sf
    if sf["symbols"] >= T.symbol_flood_min and sf["symbols"] >= T.symbol_flood_per_kind * sf["kinds"]:
        if c.requested(text[sf["start"]:], sf["symbols"]):
            c.exempted.append("symbol_flood")
        else:
            c.fire("symbol_flood", f"symbol flood: {sf['symbols']} symbols of {sf['kinds']} kinds "
                   f"(“{sf['top']}” ×{sf['top_count']}) fill the last {len(text) - sf['start']} characters until "
                   f"max_tokens", T.sev_char_loop, (sf["start"], len(text)),
                   (sf["start"], len(text), "loop", f"{sf['symbols']} symbols"))
            c.loop_fired = True


def _check_symbol_run(c: Context) -> None:
    """A run of a few symbols anywhere over ≥ 15 % of the response: the flood the model left."""
    text, T = c.text, c.T
    sr = symbol_run(text, T.symbol_flood_min)
    if sr is None:
        return
    c.mt["symbol_run"] = sr
    a, b = sr["start"], sr["end"]
    if (sr["symbols"] >= T.symbol_flood_per_kind * sr["kinds"] and b - a >= T.symbol_run_min_coverage * len(text)
            and not c.requested(text[a:b], sr["symbols"])):
        c.fire("symbol_flood", f"symbol flood: {sr['symbols']} symbols of {sr['kinds']} kinds (“{sr['top']}” "
               f"×{sr['top_count']}) back to back from char {a}, {pct((b - a) / len(text))} of the response",
               T.sev_char_loop, (a, b), (a, b, "loop", f"{sr['symbols']} symbols"))
        c.loop_fired = True


def check_near_verbatim(c: Context) -> None:
    """Near-verbatim loop: echoes of recent sentences or lines (``near_verbatim.echo_run``)."""
    text, toks, T, L, runaway = c.text, c.toks, c.T, c.L, c.runaway
    # (cheap first: enough lines and sentences for the stretch to exist at all)
    n_nl = c.n_newlines
    if L < T.near_min_tokens or not (n_nl >= 2 or n_nl + text.count(". ") + text.count("! ")
                                     + text.count("? ") >= 2):
        return
    base = max(0, L - 16384)
    tok_cp = c.first_cp = toks.cp[toks.starts]
    newlines = c.newlines = (toks.cp == 10).nonzero()[0] if n_nl else _NO_INDEX
    if base == 0:
        c.after_newlines = toks.starts.searchsorted(newlines)  # the first token after each
    apart = toks.starts[1:] > toks.ends[:-1]  # whitespace between a token and the next
    bounds = NV.segment_bounds(toks.cp, toks.starts[base:], toks.ends[base:], newlines=newlines,
                               first_cp=tok_cp[base:], apart=apart[base:], after_newlines=c.after_newlines)
    prose, vocab = _prose_and_vocab(toks, tok_cp, apart)
    er = NV.echo_run(toks.hashes[base:], prose[base:], vocab[base:], toks.is_number[base:], bounds,
                     window=T.near_window, threshold=T.near_similarity, min_segments=3,
                     min_repeats=0 if runaway else 1, near_repeat=T.near_repeat_similarity,
                     blind=c.number_blind()[base:], stops=_STOP_CP[np.minimum(tok_cp[base:], 127)])
    if er is None:
        return
    info = er.to_dict(toks.starts[base:], toks.ends[base:])
    cov = er.tokens / L
    info["coverage"] = r4(cov)
    c.mt["near_verbatim"] = info
    # at the end: on the last content segment, or before a last sentence max_tokens cut
    at_end = er.at_end or (runaway and "\n" not in text[info["end_char"]:].strip()
                           and not _SENTENCE_END_RE.search(text, info["end_char"] + 1))
    info["at_end"] = at_end
    long_segments = er.mean_tokens >= T.near_long_segment_tokens
    enough = (er.tokens >= T.near_min_tokens and (cov >= T.near_min_coverage or (runaway and at_end))
              and (er.echoes >= T.near_min_echoes and er.copies >= T.near_min_copies
                   or long_segments and er.echoes >= 2 and er.copies >= T.near_long_min_copies
                   and er.chain >= T.near_long_min_copies))
    # still in a rotation said word for word when max_tokens cut it
    cut_rotation = (runaway and at_end and er.echoes >= T.near_cut_min_echoes and er.copies >= 2
                    and er.repeat_share >= T.near_cut_min_repeat_share and er.novel_share == 0)
    enough = enough or cut_rotation
    strong = (er.echoes >= T.near_strong_echoes and cov >= T.near_strong_coverage
              and er.copies >= T.near_min_copies)
    dry = er.novel_share <= (T.near_runaway_max_novel_share if runaway else T.near_max_novel_share)
    same = (er.repeat_share >= T.near_min_repeat_share
            or (runaway and at_end and er.novel_share <= T.near_max_novel_share))
    if c.loop_fired or not (enough or strong) or not dry or not same:
        return
    a, b = info["start_char"], info["end_char"]
    n_req = c.n_requested()
    # (N rounds asked for: at most N + 1 copies that the model finished are the answer;
    # a rotation still running when max_tokens cut it is not known to stop at N.  A round is a
    # block of lines, a verse or a joke: items that echo one another one or two at a time are
    # N items asked for that came out the same)
    asked_for = (n_req is not None and er.copies <= n_req + 1 and not (runaway and at_end)
                 and er.period >= T.near_round_min_segments)
    if not c.requested(text[a:b], er.echoes) and not asked_for:
        c.fire("near_verbatim_loop",
               f"near-verbatim loop: {er.echoes} of {er.segments} sentences/lines from char {a} echo one "
               f"of the {T.near_window} before them (token sets within Jaccard {T.near_similarity:g}), "
               f"{pct(cov)} of the response; {pct(er.repeat_share)} of them repeat an earlier one word for word and "
               f"only {pct(er.novel_share)} bring a new word — "
               f"e.g. “{short(text[a:b], 60)}”", T.sev_near_loop, (a, b),
               (a, b, "loop", f"{er.echoes} near-copies"))
        c.loop_fired = True


def check_nesting(c: Context) -> None:
    """Recursive nesting: tags, brackets or indentation climbing without coming back."""
    text, toks, T = c.text, c.toks, c.T
    if c.L < 16:
        return
    mins = {"tag": T.nest_tag_min, "bracket": T.nest_bracket_min, "indent": T.nest_indent_min}
    min_depth = int(T.nest_tag_min * T.nest_runaway_factor)
    n_nl = c.n_newlines
    n_brackets = text.count("{") + text.count("[")
    if c.first_cp is None and n_brackets >= min_depth:
        c.first_cp = toks.cp[toks.starts]
    ink = None
    if n_nl >= min_depth:
        if c.newlines is None:
            c.newlines = (toks.cp == 10).nonzero()[0]
        # the first character of each line that is not a space, tab, CR or LF is a token's
        # first unless the text has other whitespace (form feeds, no-break spaces …)
        if (not np.count_nonzero(_ODD_SPACE_8.take(toks.cp)) if toks.cp.dtype == np.uint8
                else _ODD_SPACE_RE.search(text) is None):
            ink = toks.starts
    climbs = N.deepest_climbs(text, toks.cp, c.markup.get("opens", {}), min_depth=min_depth,
                              newlines=c.newlines, token_starts=toks.starts, first_cp=c.first_cp, ink=ink,
                              n_newlines=n_nl, n_brackets=n_brackets, ink_after_newlines=c.after_newlines)
    if climbs:
        c.mt["nesting"] = {cl.kind: cl.to_dict() for cl in climbs}
    for cl in climbs:
        need = T.nest_rare_tag_min if cl.kind == "tag" and cl.name in N.RARELY_NESTED else mins[cl.kind]
        if c.runaway and cl.end >= 0.5 * len(text):
            need = int(need * T.nest_runaway_factor)
        n_req = c.n_requested()
        if cl.came_back:  # a deep structure that closes again is a document, unless it is very deep
            need = int(need * (T.nest_rare_came_back_factor if need == T.nest_rare_tag_min else 2))
        if cl.depth >= need and not (n_req is not None and cl.depth <= n_req * T.count_request_factor
                                     + T.count_request_slack):
            what = {"tag": f"<{cl.name}> opened inside <{cl.name}>", "bracket": "{ / [ opened inside { / [",
                    "indent": "lines indented further"}[cl.kind]
            c.fire("nesting", f"recursive nesting: {what} {cl.depth} levels deep without coming back up "
                   f"(from char {cl.start}) — “{short(text[cl.start:cl.end], 60)}”", T.sev_nesting,
                   (cl.start, cl.end), (cl.start, cl.end, "loop", f"{cl.depth} levels"))
            break


def check_runaway_repetition(c: Context) -> None:
    """Hit max_tokens while re-saying what it already said (no exact loop)."""
    if not c.runaway:  # (computed only here: it costs a sort and only matters for a runaway)
        return
    text, toks, T, L, ids = c.text, c.toks, c.T, c.L, c.toks.hashes
    tail_rep8, window, tail_twice8 = tail_repeat(ids, 8)
    tail_words = toks.is_word[L - window - 7:]
    word_share = np.count_nonzero(tail_words) / tail_words.size if L >= 8 and window else 0.0
    c.mt["tail_repeat_8"] = r4(tail_rep8)
    c.mt["tail_third_saying_8"] = r4(tail_twice8)
    c.mt["tail_word_share"] = r4(word_share)
    prose_tail = word_share >= T.runaway_prose_word_share
    phrase = tail_phrase_count(ids, toks.is_word, window=T.runaway_phrase_window) if not c.loop_fired else 0
    c.mt["tail_phrase_count"] = phrase
    if not c.loop_fired and L >= T.runaway_window_min_tokens and (
            (tail_rep8 >= T.runaway_any_repeat8 and tail_twice8 >= (
                T.runaway_min_third_saying if prose_tail else T.runaway_markup_min_third_saying))
            or (prose_tail and tail_rep8 >= T.runaway_prose_repeat8 and tail_twice8 >= T.runaway_min_third_saying)
            or (word_share >= T.runaway_mixed_word_share and tail_twice8 >= T.runaway_mixed_min_third_saying)):
        c.fire("runaway_repetition",
               f"hit max_tokens while repeating itself: {pct(tail_rep8)} of the 8-token sequences in the last "
               f"{window + 7} tokens had already appeared earlier in the response ({pct(tail_twice8)} at least "
               f"twice)", T.sev_runaway_repetition,
               (int(toks.starts[L - window - 7]), len(text)))
    elif not c.loop_fired and phrase >= T.runaway_phrase_min_count:
        a = int(toks.starts[max(0, L - T.runaway_phrase_window)])
        c.fire("runaway_repetition",
               f"hit max_tokens while circling on one phrase: a 7-token phrase occurs {phrase} times in the last "
               f"{min(L, T.runaway_phrase_window)} tokens", T.sev_runaway_repetition, (a, len(text)))


def check_runaway(c: Context) -> None:
    """finish_reason=length (weak on its own)."""
    if c.runaway:
        c.fire("runaway", "finish_reason=length: the response hit max_tokens", c.T.sev_runaway, None)


# ---- markup ----------------------------------------------------------------------------------

def check_markup_flood(c: Context) -> None:
    """Far more closing tags of one name than opening ones (``</div>`` ×300)."""
    markup, T = c.markup, c.T
    opens = markup.get("opens", {})
    for name, excess in sorted(markup["excess_close"].items(), key=lambda kv: -kv[1]):
        if excess >= T.markup_excess_close_min and markup["closes"][name] >= 2 * opens.get(name, 0):
            c.fire("markup_flood",
                   f"markup: {excess} more </{name}> than <{name}> "
                   f"({markup['closes'][name]} closing, {opens.get(name, 0)} opening)",
                   T.sev_markup_flood, None)
            break


def check_unbalanced_fence(c: Context) -> None:
    """A code fence never closed (weak; halved at max_tokens)."""
    if c.markup["unbalanced_fence"]:
        c.fire("unbalanced_fence",
               f"unbalanced code fence ({c.markup['code_fences']} fence lines): a code block "
               f"is never closed", c.T.sev_unbalanced_fence * (0.5 if c.runaway else 1.0), None)


# ---- turns -----------------------------------------------------------------------------------

def check_confabulated_turn(c: Context) -> None:
    """A turn the conversation does not have: a chat-template marker, a bare role line (markers
    stripped) or an invented role line (``turns.confabulated_turns``)."""
    text, T = c.text, c.T
    cf = c.confab = confabulated_turns(text, c.messages, T.confab_min_words, c.chat_template, cut=c.runaway)
    c.mt["confabulation"] = {"turn_markers": len(cf["markers"]), "end_markers": len(cf["end_markers"]),
                             "role_lines": len(cf["role_lines"]), "bare_role_lines": len(cf["bare_roles"])}
    if cf["markers"]:
        pos, marker, role = cf["markers"][0]
        after = text[pos + len(marker):pos + len(marker) + 200]
        nxt = [p for p, *_ in cf["markers"][1:] + [(e[0],) for e in cf["end_markers"]] if p > pos]
        end = min(nxt) if nxt else len(text)
        who = f"a new {role} turn" if role else "a new turn"
        c.fire("confabulated_turn",
               f"confabulated turn: chat-template marker {marker.strip()!r} at char {pos} opens "
               f"{who} the conversation does not have: “{short(after, 60)}”"
               + (f" ({len(cf['markers'])} turn markers in all)" if len(cf["markers"]) > 1 else ""),
               T.sev_confab_marker, (pos, end), (pos, end, "confabulated_turn", f"invented {role or 'turn'}"))
    elif cf["bare_roles"]:
        pos, role, rest, how = cf["bare_roles"][0]
        what = {"request": "a user turn with a request", "dialogue": "a user turn answered by an invented "
                "assistant turn", "answer": f"a second {role} turn", "system": "a system turn",
                "empty": "empty turns (role headers one after the other to the end)",
                "headers": "turn headers one after the other, then a turn",
                "cut": "a turn header that max_tokens cut"}.get(how, f"a {role} turn")
        c.fire("confabulated_turn",
               f"confabulated turn: the line {role!r} at char {pos} is a chat-template role whose "
               f"markers were stripped, opening {what} the conversation does not have: "
               f"“{short(rest, 60)}”"
               + (f" ({len(cf['bare_roles'])} role lines in all)" if len(cf["bare_roles"]) > 1 else ""),
               T.sev_confab_bare, (pos, len(text)), (pos, len(text), "confabulated_turn", f"invented {role} turn"))
    elif cf["role_lines"]:
        pos, line, rest = cf["role_lines"][0]
        c.fire("confabulated_turn",
               f"confabulated turn: line {line!r} at char {pos} starts a user turn whose text is "
               f"not in the conversation: “{short(rest, 60)}”",
               T.sev_confab_role, (pos, len(text)), (pos, len(text), "confabulated_turn", "invented user turn"))


def check_leaked_end_marker(c: Context) -> None:
    """An end-of-turn marker inside the response (weak; highlighted even when a turn marker is the
    finding)."""
    cf = c.confab
    if not cf["end_markers"]:
        return
    pos, marker = cf["end_markers"][0]
    if not cf["markers"]:
        c.reasons.append(Reason("leaked_end_marker",
                                f"end-of-turn marker {marker!r} inside the response at char {pos} "
                                f"(the stop condition did not fire)", c.T.sev_leaked_end_marker,
                                (pos, pos + len(marker))))
    c.highlights.append(Highlight(pos, pos + len(marker), "end_marker", marker))


# ---- model tokens and logprobs -----------------------------------------------------------------

def measure_model_tokens(c: Context) -> None:
    """n-gram metrics and the tail loop on the model's token ids, when the caller has them."""
    if c.token_ids is None:
        return
    try:
        mids = ids_array(list(c.token_ids))
    except (TypeError, ValueError, OverflowError):
        c.mt["model_tokens"] = {"error": "token_ids must be a sequence of integers"}
        return
    c.model_ids = mids
    mm = {"tokens": int(mids.size)}
    mm.update({k: r4(v) for k, v in ngram_stats(mids).items()})
    model_loop = c.model_loop = tail_loop_tolerant(mids)
    mm["tail_loop"] = None if model_loop is None else {
        "period": model_loop.period, "copies": r4(model_loop.copies),
        "covered_tokens": model_loop.covered, "coverage": r4(model_loop.coverage),
        "start_token": model_loop.start}
    c.mt["model_tokens"] = mm


def check_logprob_evidence(c: Context) -> None:
    """Whether the first loop finding reinforces itself (its tokens near-certain): raises its
    severity or says it does not; without logprobs, says that they are absent."""
    text, T, model_loop, mids = c.text, c.T, c.model_loop, c.model_ids
    loops = [r for r in c.reasons if r.code in LOOP_CODES and r.span is not None]
    lp = None
    if c.token_logprobs is not None:
        lp = (clean_logprobs(c.token_logprobs) if isinstance(c.token_logprobs, (list, tuple, np.ndarray))
              else np.zeros(0))
    if lp is None or not lp.size:
        c.mt["logprobs"] = {"n": 0, "absent": True}
        if loops:
            loops[0].message += ("; no token logprobs with the response, so whether the loop reinforces itself "
                                 "(near-certain tokens) is not known")
        return
    certain = lp >= T.near_zero_logprob
    info: dict = {"n": int(lp.size), "mean": r4(lp.mean()), "certain_share": r4(certain.mean())}
    # the loop's tokens: exact for the tail loop with model token ids, else the share of the
    # logprobs that the loop's characters are of the text (proportional)
    in_loop = None
    if (model_loop is not None and mids is not None and mids.size == lp.size and loops
            and loops[0].code == "tail_loop"):
        in_loop = certain[model_loop.start:model_loop.total - model_loop.trimmed]
        info["loop_mapping"] = "model_tokens"
    elif loops and len(text):
        a, b = loops[0].span
        ka = int(math.floor(lp.size * a / len(text)))
        kb = max(ka + 1, int(math.ceil(lp.size * b / len(text))))
        in_loop = certain[ka:kb]
        info["loop_mapping"] = "proportional"
    elif c.loop_char is not None and len(text):
        in_loop = certain[int(math.floor(lp.size * c.loop_char / len(text))):]
        info["loop_mapping"] = "proportional"
    if in_loop is not None and in_loop.size:
        share = np.count_nonzero(in_loop) / in_loop.size
        info["loop_certain_share"] = r4(share)
        info["loop_tokens"] = int(in_loop.size)
        if loops:
            r = loops[0]
            if share >= T.self_reinforcing_share:
                r.severity = 1 - (1 - r.severity) * (1 - T.sev_self_reinforcing_bonus)
                r.message += (f"; self-reinforcing: {pct(share)} of the loop's tokens were sampled with "
                              f"p ≥ 0.9 (logprob ≥ {T.near_zero_logprob:.2f})")
            else:
                r.message += (f"; not self-reinforcing: {pct(share)} of the loop's tokens were sampled "
                              f"with p ≥ 0.9")
    c.mt["logprobs"] = info


# ---- the rest ------------------------------------------------------------------------------------

def record_exemptions(c: Context) -> None:
    """The repetition the request asked for, and the loop findings it excused."""
    if c.request is not None:
        c.mt["requested_repetition"] = {"count": c.request[0], "exempted": c.exempted}


def check_empty(c: Context) -> None:
    if not c.text.strip():
        c.fire("empty", "empty response" if not c.text else "response is only whitespace", 0.1, None)


# ---- helpers ---------------------------------------------------------------------------------

def _prose_and_vocab(toks: Tokens, first: np.ndarray | None = None,
                     apart: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per token: a prose word (a word, not a tag name after ``<`` / ``</`` nor an attribute name
    before ``=``), and vocabulary for novelty (numbers and tokens of three or more characters:
    words, identifiers — not punctuation, not ``a`` / ``in`` / ``It``).
    ``first`` (each token's first code point) and ``apart`` (whitespace between a token and the
    next) may be passed when already known."""
    cp, st, en = toks.cp, toks.starts, toks.ends
    prose = toks.is_word.copy()
    if st.size > 1:
        if first is None:
            first = cp[st]
        if apart is None:
            apart = st[1:] > en[:-1]
        # ("<", "/" and "=" are punctuation: tokens of one character)
        tagish = _TAGISH[first] if first.dtype == np.uint8 else (first == 60) | (first == 47)
        prose[1:] &= ~tagish[:-1] | apart
        prose[:-1] &= first[1:] != 61                              # before "="
    vocab = (en - st) > 2  # (words of one or two letters — a, in, it — bring nothing new)
    vocab |= toks.is_number
    return prose, vocab


_SENTENCE_END_RE = re.compile(r"[.!?。！？][\s\"')\]]")
_STOP_CP = np.zeros(128, dtype=bool)
_STOP_CP[[33, 46, 63]] = True  # "!" "." "?"


_TAGISH = np.zeros(256, dtype=bool)
_TAGISH[[60, 47]] = True   # "<" "/"
_NO_INDEX = np.zeros(0, dtype=np.int64)
# whitespace other than space, tab, CR and LF (vertical tab, form feed, the information separators,
# no-break and other Unicode spaces)
_ODD_SPACE_RE = re.compile(r"[^\S \t\r\n]")
_ODD_SPACE_8 = np.array([chr(c).isspace() and chr(c) not in " \t\r\n" for c in range(256)], dtype=bool)
_ODD_SPACE_8[128:] = False  # (uint8 code points are ASCII text's)


def _structural(period_toks) -> bool:
    """True when one copy of the loop is only markup / punctuation (tag names count as markup).
    Emoji and other symbols (category So) are content: nothing nests them."""
    prev = ""
    for t in period_toks:
        if ((t[0].isalnum() or t[0] == "_") and prev not in ("<", "/")) or (
                t[0] > "\u2000" and unicodedata.category(t[0]) == "So"):
            return False
        prev = t
    return True


def _loop_unbalanced(period_toks, copies: float, markup: dict) -> bool:
    """A structural loop of closing tags most of which have no opening tag."""
    names = [period_toks[i + 1].lower() for i in range(len(period_toks) - 1)
             if period_toks[i] == "/" and (i == 0 or period_toks[i - 1] == "<")]
    if not names:
        return False
    excess = sum(markup["excess_close"].get(n, 0) for n in set(names))
    return excess >= 0.5 * copies * len(names)


def _end_of_run(text: str, start: int, line: str, run: int) -> int:
    pos = start
    seen = 0
    n = len(text)
    while pos < n and seen < run:
        nl = text.find("\n", pos)
        end = n if nl < 0 else nl
        if text[pos:end].strip() == line:
            seen += 1
        pos = end + 1
    return min(pos - 1 if pos > start else start, n) if seen else start
