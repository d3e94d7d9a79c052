"""``analyze()``: all metrics of one response, and the verdict that explains itself."""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field

import numpy as np

from . import counting as C
from . import near_verbatim as NV
from . import nesting as N
from .lines import compression_ratio, line_char_offset, line_stats
from .markup import fence_spans, in_spans, markup_balance, symbol_tail_run
from .messages import norm_words, requested_repetition
from .repetition import (char_tail_loop, longest_run, match_len, ngram_stats, tail_loop, tail_loop_tolerant,
                         tail_phrase_count, tail_repeat)
from .thresholds import DEFAULT, Thresholds
from .tokens import clean_logprobs, digit_blind_hashes, ids_array, token_arrays
from .turns import confabulated_turns

VERSION = "5"  # 5: implied set sizes, repeated blocks, mixed-prose third sayings, copies of one thing
# 3: bare role lines, counting loops, near-verbatim loops, nesting, logprob evidence (session 12)
# 2: repeat runs, character loops, CJK tokens, requested repetition (session 6)

LOOP_CODES = ("tail_loop", "fuzzy_loop", "counting_loop", "near_verbatim_loop", "repeat_run", "line_run",
              "char_loop", "symbol_flood", "nesting", "runaway_repetition")
# Every finding's code, loops first (the queue's reason filter offers them)
REASON_CODES = LOOP_CODES + ("confabulated_turn", "markup_flood", "leaked_end_marker", "unbalanced_fence",
                             "runaway", "empty")


@dataclass
class Reason:
    """One finding: a stable ``code``, a human-readable ``message`` with its evidence, the
    ``severity`` it contributes (0–1) and, where it has one, the character ``span`` it is about."""
    code: str
    message: str
    severity: float
    span: tuple[int, int] | None = None

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "severity": round(self.severity, 4),
                "span": list(self.span) if self.span else None}


@dataclass
class Highlight:
    """A character span of the response for the UI to mark (``text[start:end]``)."""
    start: int
    end: int
    kind: str      # "loop" | "fuzzy_loop" | "line_run" | "confabulated_turn" | "end_marker"
    label: str

    def to_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "kind": self.kind, "label": self.label}


@dataclass
class Analysis:
    degenerate: bool
    severity: float
    reasons: list[Reason] = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    highlights: list[Highlight] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-serialisable form (plain dicts, lists, str, int, float, bool, None)."""
        return {"degenerate": self.degenerate, "severity": round(self.severity, 4),
                "reasons": [r.to_dict() for r in self.reasons], "metrics": self.metrics,
                "highlights": [h.to_dict() for h in self.highlights], "version": VERSION}

    @property
    def reason_codes(self) -> list[str]:
        return [r.code for r in self.reasons]


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _short(s: str, n: int = 60) -> str:
    s = " ".join(s[: 4 * n + 8].split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _r(x: float) -> float:
    return round(float(x), 4)


_WORD_RE = re.compile(r"[^\W\d_]{2,}")  # a word of letters (≥ 2)


def analyze(text, *, finish_reason: str | None = None, messages=None, token_ids=None,
            token_logprobs=None, chat_template: str | None = None, thresholds: Thresholds = DEFAULT) -> Analysis:
    """Measure one response and judge whether it is degenerate.

    Parameters (all but ``text`` keyword-only):
      text            the response (str; bytes are decoded as UTF-8 with replacement).
      finish_reason   "stop" / "length" / None.  "length" (hit max_tokens) is a weak finding on
                      its own and strengthens a loop.
      messages        the conversation that led to the response, OpenAI style
                      ``[{"role": ..., "content": ...}]`` (content may be a list of text parts).
                      Used to tell an invented turn from a quoted one.
      token_ids       the model's token ids of the response, when known: n-gram metrics and the
                      tail loop are then also reported on model tokens (``metrics["model_tokens"]``)
                      and logprobs are mapped to the loop exactly.
      token_logprobs  logprob of each generated token (same order as token_ids).
      chat_template   the model's chat template family (``chatml``, ``llama3``, ``gemma``) or its
                      source, for the role names of bare role lines (default: user / assistant /
                      system, plus the roles of ``messages``).
      thresholds      a ``Thresholds`` (default ``thresholds.DEFAULT``).

    The verdict depends only on the text, finish_reason and messages (so a response gets the same
    verdict whether or not the caller had token ids), except that logprobs showing a
    self-reinforcing loop raise the severity of a loop finding.

    Raises TypeError only when ``text`` is neither str nor bytes.  Never quadratic: every metric
    is linear in the length (numpy sorts, n log n, for unique n-gram counts).
    """
    T = thresholds
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = bytes(text).decode("utf-8", "replace")
    if not isinstance(text, str):
        raise TypeError(f"text must be str or bytes, not {type(text).__name__}")
    if finish_reason is not None and not isinstance(finish_reason, str):
        finish_reason = str(finish_reason)

    reasons: list[Reason] = []
    highlights: list[Highlight] = []
    data = text.encode("utf-8", "surrogatepass")

    toks = token_arrays(text)
    L = len(toks)
    ids = toks.hashes
    mt: dict = {"chars": len(text), "bytes": len(data), "tokens": L, "token_unit": "word/punct"}
    mt.update({k: _r(v) for k, v in ngram_stats(ids).items()})
    mt["compression_ratio"] = _r(compression_ratio(data))
    mt["finish_reason"] = finish_reason
    runaway = finish_reason == "length"
    mt["runaway"] = runaway
    request = requested_repetition(messages)
    exempted: list[str] = []
    _n_req: list = []

    def n_requested() -> int | None:
        """``count_requested(messages)``, computed once."""
        if not _n_req:
            _n_req.append(C.count_requested(messages))
        return _n_req[0]

    def requested(unit: str, copies: float) -> bool:
        """The user asked for N copies of this unit (its words are all in what the request
        names: the object of its repetition verb) and got at most about N: the answer, not a loop."""
        if request is None:
            return False
        words = {w for w in norm_words(unit).split() if not w.isdigit()}  # (numbered copies)
        return bool(words) and words <= set(request[1].split()) and copies <= request[0] * 1.1 + 1

    # ---- tail loop ---------------------------------------------------------------------------
    # the last token may be a fragment of a word cut by max_tokens only if it is a word token
    # that ends the text
    # (or a U+FFFD: a multi-byte character whose bytes max_tokens cut)
    last_may_be_cut = L > 0 and int(toks.ends[-1]) == len(text) and (
        text[-1].isalnum() or text[-1] == "_" or text[-1] == "\ufffd")
    loop = tail_loop_tolerant(ids, last_may_be_cut)
    loop_info = None
    loop_char = None
    structural = False
    if loop is not None:
        loop_char = int(toks.starts[loop.start])
        end_tok = L - loop.trimmed
        last_copy_char = int(toks.starts[end_tok - loop.period])
        period_toks = _token_texts(text, toks, end_tok - loop.period, end_tok)
        loop_unit = text[last_copy_char:int(toks.ends[end_tok - 1])]  # one whole copy
        structural = _structural(period_toks)
        loop_info = {"period": loop.period, "copies": _r(loop.copies), "covered_tokens": loop.covered,
                     "coverage": _r(loop.coverage), "start_token": loop.start, "start_char": loop_char,
                     "structural": structural,
                     "unit": _short(loop_unit, 80)}
    mt["tail_loop"] = loop_info

    # ---- markup ------------------------------------------------------------------------------
    markup = markup_balance(text)
    mt["markup"] = {"tags": markup["tags"], "excess_close": markup["excess_close"],
                    "excess_open": markup["excess_open"], "code_fences": markup["code_fences"],
                    "unbalanced_fence": markup["unbalanced_fence"]}

    loop_fired = False
    if loop is not None:
        copies, covered, cov = loop.copies, loop.covered, loop.coverage
        unbalanced = structural and _loop_unbalanced(period_toks, copies, markup)
        msg = (f"tail loop: period {loop.period} tokens ×{copies:.0f}, covering the last "
               f"{_pct(cov)} of the response ({covered} tokens) — repeating “{_short(loop_info['unit'], 50)}”")
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
        if sev > 0 and requested(loop_unit, copies):
            exempted.append("tail_loop")
            sev = 0.0
        if sev > 0:
            if unbalanced:
                msg += "; the repeated closing tags have no matching opening tags"
            if runaway:
                msg += "; the response hit max_tokens inside the loop"
            loop_fired = True
            reasons.append(Reason("tail_loop", msg, sev, (loop_char, len(text))))
            highlights.append(Highlight(loop_char, len(text), "loop", f"period {loop.period} ×{copies:.0f}"))

    _nb: list = []

    def number_blind() -> np.ndarray:
        """The token ids with every number the same token (0x5EED), computed once (read only)."""
        if not _nb:
            a = ids.copy()
            a[toks.is_number] = 0x5EED
            _nb.append(a)
        return _nb[0]

    # ---- fuzzy tail loop (numbers equated) ---------------------------------------------------
    fuzzy_tail = None  # (window start, Loop) of the number-blind tail loop, when computed
    if not loop_fired and L >= T.fuzzy_min_tokens:
        W = min(L, 8192)
        numbers = toks.is_number[L - W:]
        if W == L and not np.count_nonzero(numbers):
            fz = loop  # (no number to equate: the same sequence as the tail loop's)
        else:
            window = number_blind()[L - W:]  # every number is the same token
            fz = tail_loop_tolerant(window, last_may_be_cut)
            fuzzy_tail = (L - W, fz)
        if fz is not None:
            covered = fz.covered
            cov = covered / L
            fz_end = L - fz.trimmed
            unit_toks = _token_texts(text, toks, fz_end - fz.period, fz_end)
            # (words of letters, not tag names: ``<td>2023-10-01</td>`` rows have none)
            alpha = sum(1 for k, t in enumerate(unit_toks) if len(t) > 1 and t.isalpha()
                        and not (k and unit_toks[k - 1] in ("<", "/")))
            start_tok = L - W + fz.start
            fz_char = int(toks.starts[start_tok])
            mt["fuzzy_loop"] = {"period": fz.period, "copies": _r(fz.copies), "covered_tokens": covered,
                                "coverage": _r(cov), "start_char": fz_char, "alpha_tokens": alpha}
            massive = fz.copies >= T.fuzzy_massive_copies and cov >= T.fuzzy_massive_coverage
            fz_unit = text[int(toks.starts[fz_end - fz.period]):int(toks.ends[fz_end - 1])]
            if (fz.copies >= T.fuzzy_min_copies and covered >= T.fuzzy_min_tokens
                    and cov >= T.fuzzy_min_coverage and alpha >= T.fuzzy_min_alpha
                    and (runaway or massive or not T.fuzzy_needs_runaway)
                    and not requested(fz_unit, fz.copies)):
                last = int(toks.starts[fz_end - fz.period])
                reasons.append(Reason(
                    "fuzzy_loop",
                    f"near loop (numbers ignored): period {fz.period} tokens ×{fz.copies:.0f}, covering the last "
                    f"{_pct(cov)} of the response — repeating “{_short(text[last:], 50)}”",
                    T.sev_fuzzy_loop, (fz_char, len(text))))
                highlights.append(Highlight(fz_char, len(text), "fuzzy_loop", f"period {fz.period} ×{fz.copies:.0f}"))
                loop_fired = True

    # ---- counting loop (a template whose only change is a counter) ---------------------------
    blind_runs: dict = {}  # min_copies → longest_run of the number-blind ids, where computed
    if not loop_fired and L >= 8 and np.count_nonzero(toks.is_number) >= 3:
        cl = _counting_loop(text, toks, T, runaway, n_requested, requested, fuzzy_tail, blind_runs, number_blind())
        if cl is not None:
            mt["counting_loop"] = cl["info"]
            if cl["fire"]:
                reasons.append(Reason("counting_loop", cl["message"], T.sev_counting_loop, cl["span"]))
                highlights.append(Highlight(*cl["span"], "loop", cl["label"]))
                loop_fired = True

    # ---- the same list item again and again, only its number changing ------------------------
    if not loop_fired and "\n" in text:
        ri = C.repeated_items(text)
        if ri is not None:
            items, words, a, b = ri
            mt["repeated_items"] = {"items": items, "words": words, "start_char": a, "end_char": b}
            if items >= T.repeated_items_min and words >= T.repeated_items_min_words and not requested(text[a:b], items):
                reasons.append(Reason(
                    "counting_loop", f"counting loop: the same list item {items} times back to back, only its number "
                    f"changing, from char {a} — “{_short(text[a:b], 60)}”", T.sev_counting_loop, (a, b)))
                highlights.append(Highlight(a, b, "loop", f"{items}× the same item"))
                loop_fired = True

    # ---- a list far past the count asked for (``12 fruits`` answered with 33 until max_tokens) --
    n_req, implied = n_requested(), False
    if n_req is None and not loop_fired and "\n" in text:
        n_req = C.count_implied(messages)
        implied = n_req is not None
    if not loop_fired and ("\n" in text) and n_req is not None:
        run = C.longest_item_run(text)
        if run is not None:
            mt["item_run"] = {**run.to_dict(), "requested_count": n_req, "count_implied": implied}
            over = run.items > n_req * T.count_request_factor and run.items >= n_req + T.list_overrun_min_extra
            if implied:  # a set's size is a convention (10 or 12 rows), not the user's number
                over = run.items >= n_req * T.count_request_factor + T.list_overrun_min_extra
            going = runaway and not text[run.end:].strip()  # (still listing when max_tokens cut it)
            if over and (runaway or run.items >= T.list_overrun_factor * n_req):
                reasons.append(Reason(
                    "counting_loop", f"list overrun: {run.items} items from char {run.start} where the request "
                    f"asked for {n_req}" + (" (the size of the set it names)" if implied else "") + ("; still listing when the response hit max_tokens" if going else ""),
                    T.sev_counting_loop, (run.start, run.end)))
                highlights.append(Highlight(run.start, run.end, "loop", f"{run.items} items for {n_req}"))
                loop_fired = True

    # ---- lines -------------------------------------------------------------------------------
    ls = line_stats(text, T.line_run_min_chars)
    mt["lines"] = {"lines": ls.lines, "duplicate_share": _r(ls.duplicate_share), "longest_run": ls.run,
                   "longest_run_line": _short(ls.run_line, 80), "structural_run": ls.structural_run,
                   "structural_run_line": _short(ls.structural_run_line, 40)}
    for run, line, start_line, minimum, kind in (
            (ls.run, ls.run_line, ls.run_start_line, T.line_run_min, ""),
            (ls.structural_run, ls.structural_run_line, ls.structural_run_start_line,
             T.structural_line_run_min, "short ")):
        if run >= minimum and requested(line, run):
            exempted.append("line_run")
        elif run >= minimum:
            a = line_char_offset(text, start_line)
            b = _end_of_run(text, a, line, run)
            if (run < T.line_run_strong and (b - a) < T.line_run_min_coverage * len(text)
                    and not (runaway and not text[b:].strip())):
                continue
            reasons.append(Reason("line_run", f"{kind}line repeated {run}× in a row: “{_short(line, 60)}”",
                                  T.sev_line_run, (a, b)))
            highlights.append(Highlight(a, b, "line_run", f"{run}× same line"))

    # ---- a repeat run anywhere (a loop the model stopped, or left) ------------------------------
    run_copies = int(min(T.run_min_copies, T.run_short_min_copies))  # (reported from there)
    if blind_runs.get(run_copies, True) is None:
        run = None  # (none with the numbers equated, so none here: these ids are equal less often)
    else:
        run = longest_run(ids, min_copies=run_copies, words=toks.is_word, word_share=T.run_min_word_share)
    if run is not None:
        unit_a, unit_b = int(toks.starts[run.start]), int(toks.ends[run.start + run.period - 1])
        mt["repeat_run"] = {"period": run.period, "copies": _r(run.copies), "covered_tokens": run.covered,
                            "start_char": unit_a, "unit": _short(text[unit_a:unit_b], 80)}
        # prose, not markup or code: at least half of a copy's tokens are words of letters (the
        # closing tags of a nested page and nested `if (x) {` repeat legitimately; the tail loop,
        # the line runs and the markup balance judge floods of those)
        unit_words = toks.is_word[run.start:run.start + run.period]
        has_word = np.count_nonzero(unit_words) / unit_words.size >= T.run_min_word_share
        enough = (run.copies >= T.run_short_min_copies if run.period <= T.run_short_period
                  else run.copies >= T.run_min_copies and run.covered >= T.run_min_tokens)
        fired = {r.code for r in reasons}
        if has_word and enough and not loop_fired and "line_run" not in fired:
            if requested(text[unit_a:unit_b], run.copies):
                exempted.append("repeat_run")
            else:
                end = int(toks.ends[run.start + run.covered - 1])
                reasons.append(Reason(
                    "repeat_run", f"repeat run: “{_short(text[unit_a:unit_b], 50)}” ×{run.copies:.0f} back to back "
                    f"({run.covered} tokens) at char {unit_a}", T.sev_repeat_run, (unit_a, end)))
                highlights.append(Highlight(unit_a, end, "loop", f"period {run.period} ×{run.copies:.0f}"))
                loop_fired = True

    # ---- a record or block said again and again, word for word (``{"make": "Ford", "model":
    # "FoxCorp"}`` ×7 in a JSON array; the same two-line comment ×5) ---------------------------
    if not loop_fired and "line_run" not in {r.code for r in reasons} and L >= T.record_run_min_period * 2:
        rec = longest_run(ids, min_copies=T.record_run_min_copies, words=toks.is_word, word_share=0.0)
        if rec is not None and rec.period >= T.record_run_min_period and rec.covered >= T.loop_min_tokens:
            unit_a, unit_b = int(toks.starts[rec.start]), int(toks.ends[rec.start + rec.period - 1])
            end = int(toks.ends[rec.start + rec.covered - 1])
            unit = text[unit_a:unit_b]
            words = set(_WORD_RE.findall(unit.lower()))
            if (len(words) >= T.record_run_min_words and end - unit_a >= T.record_run_min_coverage * len(text)):
                mt["record_run"] = {"period": rec.period, "copies": _r(rec.copies), "covered_tokens": rec.covered,
                                    "start_char": unit_a, "unit": _short(unit, 80)}
                if requested(unit, rec.copies):
                    exempted.append("record_run")
                else:
                    reasons.append(Reason(
                        "repeat_run", f"repeated block: “{_short(unit, 50)}” ×{rec.copies:.0f} word for word, back "
                        f"to back, at char {unit_a} ({(end - unit_a) / len(text):.0%} of the response)",
                        T.sev_repeat_run, (unit_a, end)))
                    highlights.append(Highlight(unit_a, end, "loop", f"block ×{rec.copies:.0f}"))
                    loop_fired = True

    # ---- a loop at the end in characters (inside one token, or whitespace) ---------------------
    cl = char_tail_loop(text)
    if cl is not None and cl.copies >= 3:
        unit = text[-cl.period:]
        mt["char_loop"] = {"period_chars": cl.period, "copies": _r(cl.copies), "covered_chars": cl.covered,
                           "unit": unit}
        subword = (runaway and sum(ch.isalpha() for ch in unit) >= 2 and cl.copies >= T.char_loop_subword_min_copies
                   and cl.covered >= T.char_loop_subword_min_chars)
        if not loop_fired and (subword or (
                cl.copies >= T.char_loop_min_copies
                and cl.covered >= (T.char_loop_runaway_min_chars if runaway else T.char_loop_min_chars)
                and (runaway or cl.covered >= T.char_loop_min_coverage * len(text)))):
            if requested(unit, cl.copies):
                exempted.append("char_loop")
            else:
                shown = unit.encode("unicode_escape").decode() if not unit.strip() else unit
                reasons.append(Reason(
                    "char_loop", f"tail loop in characters: “{_short(shown, 30)}” ×{cl.copies:.0f}, the last "
                    f"{cl.covered} characters ({_pct(cl.covered / len(text))} of the response)",
                    T.sev_char_loop, (cl.start, len(text))))
                highlights.append(Highlight(cl.start, len(text), "loop", f"{cl.period} chars ×{cl.copies:.0f}"))
                loop_fired = True

    # ---- a flood of a few symbols at the end (emoji repeated until max_tokens) ------------------
    if not loop_fired and runaway:
        sf = symbol_tail_run(text)
        if sf is not None:
            mt["symbol_flood"] = sf
            if sf["symbols"] >= T.symbol_flood_min and sf["symbols"] >= T.symbol_flood_per_kind * sf["kinds"]:
                if requested(text[sf["start"]:], sf["symbols"]):
                    exempted.append("symbol_flood")
                else:
                    reasons.append(Reason(
                        "symbol_flood", f"symbol flood: {sf['symbols']} symbols of {sf['kinds']} kinds "
                        f"(“{sf['top']}” ×{sf['top_count']}) fill the last {len(text) - sf['start']} characters until "
                        f"max_tokens", T.sev_char_loop, (sf["start"], len(text))))
                    highlights.append(Highlight(sf["start"], len(text), "loop", f"{sf['symbols']} symbols"))
                    loop_fired = True

    # ---- near-verbatim loop (echoes of recent sentences or lines) ------------------------------
    # (cheap first: enough lines and sentences for the stretch to exist at all)
    n_nl = text.count("\n")
    tok_cp = None  # the first code point of each token, once needed
    newlines = None  # where the text's newlines are, once needed
    after_newlines = None  # the first token after each of them, once needed
    if L >= T.near_min_tokens and (n_nl >= 2 or n_nl + text.count(". ") + text.count("! ") + text.count("? ")
                                   >= 2):
        base = max(0, L - 16384)
        tok_cp = toks.cp[toks.starts]
        newlines = (toks.cp == 10).nonzero()[0] if n_nl else _NO_INDEX
        if base == 0:
            after_newlines = toks.starts.searchsorted(newlines)  # the first token after each
        apart = toks.starts[1:] > toks.ends[:-1]  # whitespace between a token and the next
        bounds = NV.segment_bounds(toks.cp, toks.starts[base:], toks.ends[base:], newlines=newlines,
                                   first_cp=tok_cp[base:], apart=apart[base:], after_newlines=after_newlines)
        prose, vocab = _prose_and_vocab(toks, tok_cp, apart)
        er = NV.echo_run(ids[base:], prose[base:], vocab[base:], toks.is_number[base:], bounds, window=T.near_window,
                         threshold=T.near_similarity, min_segments=3, min_repeats=0 if runaway else 1,
                         near_repeat=T.near_repeat_similarity, blind=number_blind()[base:],
                         stops=_STOP_CP[np.minimum(tok_cp[base:], 127)])
        if er is not None:
            info = er.to_dict(toks.starts[base:], toks.ends[base:])
            cov = er.tokens / L
            info["coverage"] = _r(cov)
            mt["near_verbatim"] = info
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
            if not loop_fired and (enough or strong) and dry and same:
                a, b = info["start_char"], info["end_char"]
                n_req = n_requested()
                # (N rounds asked for: at most N + 1 copies that the model finished are the answer;
                # a rotation still running when max_tokens cut it is not known to stop at N)
                asked_for = n_req is not None and er.copies <= n_req + 1 and not (runaway and at_end)
                if not requested(text[a:b], er.echoes) and not asked_for:
                    reasons.append(Reason(
                        "near_verbatim_loop",
                        f"near-verbatim loop: {er.echoes} of {er.segments} sentences/lines from char {a} echo one "
                        f"of the {T.near_window} before them (token sets within Jaccard {T.near_similarity:g}), "
                        f"{_pct(cov)} of the response; {_pct(er.repeat_share)} of them repeat an earlier one word for word and "
                        f"only {_pct(er.novel_share)} bring a new word — "
                        f"e.g. “{_short(text[a:b], 60)}”", T.sev_near_loop, (a, b)))
                    highlights.append(Highlight(a, b, "loop", f"{er.echoes} near-copies"))
                    loop_fired = True

    # ---- recursive nesting -------------------------------------------------------------------
    if L >= 16:
        mins = {"tag": T.nest_tag_min, "bracket": T.nest_bracket_min, "indent": T.nest_indent_min}
        min_depth = int(T.nest_tag_min * T.nest_runaway_factor)
        n_brackets = text.count("{") + text.count("[")
        if tok_cp is None and n_brackets >= min_depth:
            tok_cp = toks.cp[toks.starts]
        ink = None
        if n_nl >= min_depth:
            if newlines is None:
                newlines = (toks.cp == 10).nonzero()[0]
            # the first character of each line that is not a space, tab, CR or LF is a token's
            # first unless the text has other whitespace (form feeds, no-break spaces …)
            if (not np.count_nonzero(_ODD_SPACE_8.take(toks.cp)) if toks.cp.dtype == np.uint8
                    else _ODD_SPACE_RE.search(text) is None):
                ink = toks.starts
        climbs = N.deepest_climbs(text, toks.cp, markup.get("opens", {}), min_depth=min_depth,
                                  newlines=newlines, token_starts=toks.starts, first_cp=tok_cp, ink=ink,
                                  n_newlines=n_nl, n_brackets=n_brackets, ink_after_newlines=after_newlines)
        if climbs:
            mt["nesting"] = {c.kind: c.to_dict() for c in climbs}
        for c in climbs:
            need = T.nest_rare_tag_min if c.kind == "tag" and c.name in N.RARELY_NESTED else mins[c.kind]
            if runaway and c.end >= 0.5 * len(text):
                need = int(need * T.nest_runaway_factor)
            n_req = n_requested()
            if c.came_back:  # a deep structure that closes again is a document, unless it is very deep
                need = int(need * (T.nest_rare_came_back_factor if need == T.nest_rare_tag_min else 2))
            if c.depth >= need and not (n_req is not None and c.depth <= n_req * T.count_request_factor
                                        + T.count_request_slack):
                what = {"tag": f"<{c.name}> opened inside <{c.name}>", "bracket": "{ / [ opened inside { / [",
                        "indent": "lines indented further"}[c.kind]
                reasons.append(Reason(
                    "nesting", f"recursive nesting: {what} {c.depth} levels deep without coming back up "
                    f"(from char {c.start}) — “{_short(text[c.start:c.end], 60)}”", T.sev_nesting, (c.start, c.end)))
                highlights.append(Highlight(c.start, c.end, "loop", f"{c.depth} levels"))
                break

    # ---- runaway with near-repetition --------------------------------------------------------
    if runaway:  # (computed only here: it costs a sort and only matters for a runaway)
        tail_rep8, window, tail_twice8 = tail_repeat(ids, 8)
        tail_words = toks.is_word[L - window - 7:]
        word_share = np.count_nonzero(tail_words) / tail_words.size if L >= 8 and window else 0.0
        mt["tail_repeat_8"] = _r(tail_rep8)
        mt["tail_third_saying_8"] = _r(tail_twice8)
        mt["tail_word_share"] = _r(word_share)
        prose_tail = word_share >= T.runaway_prose_word_share
        phrase = tail_phrase_count(ids, toks.is_word, window=T.runaway_phrase_window) if not loop_fired else 0
        mt["tail_phrase_count"] = phrase
        if not loop_fired and L >= T.runaway_window_min_tokens and (
                (tail_rep8 >= T.runaway_any_repeat8 and tail_twice8 >= (
                    T.runaway_min_third_saying if prose_tail else T.runaway_markup_min_third_saying))
                or (prose_tail and tail_rep8 >= T.runaway_prose_repeat8 and tail_twice8 >= T.runaway_min_third_saying)
                or (word_share >= T.runaway_mixed_word_share and tail_twice8 >= T.runaway_mixed_min_third_saying)):
            reasons.append(Reason(
                "runaway_repetition",
                f"hit max_tokens while repeating itself: {_pct(tail_rep8)} of the 8-token sequences in the last "
                f"{window + 7} tokens had already appeared earlier in the response ({_pct(tail_twice8)} at least "
                f"twice)", T.sev_runaway_repetition,
                (int(toks.starts[L - window - 7]), len(text))))
        elif not loop_fired and phrase >= T.runaway_phrase_min_count:
            a = int(toks.starts[max(0, L - T.runaway_phrase_window)])
            reasons.append(Reason(
                "runaway_repetition",
                f"hit max_tokens while circling on one phrase: a 7-token phrase occurs {phrase} times in the last "
                f"{min(L, T.runaway_phrase_window)} tokens", T.sev_runaway_repetition, (a, len(text))))
        reasons.append(Reason("runaway", "finish_reason=length: the response hit max_tokens", T.sev_runaway))

    # ---- markup flood ------------------------------------------------------------------------
    opens = markup.get("opens", {})
    for name, excess in sorted(markup["excess_close"].items(), key=lambda kv: -kv[1]):
        if excess >= T.markup_excess_close_min and markup["closes"][name] >= 2 * opens.get(name, 0):
            reasons.append(Reason("markup_flood",
                                  f"markup: {excess} more </{name}> than <{name}> "
                                  f"({markup['closes'][name]} closing, {opens.get(name, 0)} opening)",
                                  T.sev_markup_flood))
            break
    if markup["unbalanced_fence"]:
        reasons.append(Reason("unbalanced_fence",
                              f"unbalanced code fence ({markup['code_fences']} fence lines): a code block "
                              f"is never closed", T.sev_unbalanced_fence * (0.5 if runaway else 1.0)))

    # ---- confabulated turns ------------------------------------------------------------------
    cf = confabulated_turns(text, messages, T.confab_min_words, chat_template, cut=runaway)
    mt["confabulation"] = {"turn_markers": len(cf["markers"]), "end_markers": len(cf["end_markers"]),
                           "role_lines": len(cf["role_lines"]), "bare_role_lines": len(cf["bare_roles"])}
    if cf["markers"]:
        pos, marker, role = cf["markers"][0]
        after = text[pos + len(marker):pos + len(marker) + 200]
        nxt = [p for p, *_ in cf["markers"][1:] + [(e[0],) for e in cf["end_markers"]] if p > pos]
        end = min(nxt) if nxt else len(text)
        who = f"a new {role} turn" if role else "a new turn"
        reasons.append(Reason("confabulated_turn",
                              f"confabulated turn: chat-template marker {marker.strip()!r} at char {pos} opens "
                              f"{who} the conversation does not have: “{_short(after, 60)}”"
                              + (f" ({len(cf['markers'])} turn markers in all)" if len(cf["markers"]) > 1 else ""),
                              T.sev_confab_marker, (pos, end)))
        highlights.append(Highlight(pos, end, "confabulated_turn", f"invented {role or 'turn'}"))
    elif cf["bare_roles"]:
        pos, role, rest, how = cf["bare_roles"][0]
        what = {"request": "a user turn with a request", "dialogue": "a user turn answered by an invented "
                "assistant turn", "answer": f"a second {role} turn", "system": "a system turn",
                "empty": "empty turns (role headers one after the other to the end)",
                "headers": "turn headers one after the other, then a turn",
                "cut": "a turn header that max_tokens cut"}.get(how, f"a {role} turn")
        reasons.append(Reason("confabulated_turn",
                              f"confabulated turn: the line {role!r} at char {pos} is a chat-template role whose "
                              f"markers were stripped, opening {what} the conversation does not have: "
                              f"“{_short(rest, 60)}”"
                              + (f" ({len(cf['bare_roles'])} role lines in all)" if len(cf["bare_roles"]) > 1 else ""),
                              T.sev_confab_bare, (pos, len(text))))
        highlights.append(Highlight(pos, len(text), "confabulated_turn", f"invented {role} turn"))
    elif cf["role_lines"]:
        pos, line, rest = cf["role_lines"][0]
        reasons.append(Reason("confabulated_turn",
                              f"confabulated turn: line {line!r} at char {pos} starts a user turn whose text is "
                              f"not in the conversation: “{_short(rest, 60)}”",
                              T.sev_confab_role, (pos, len(text))))
        highlights.append(Highlight(pos, len(text), "confabulated_turn", "invented user turn"))
    if cf["end_markers"]:
        pos, marker = cf["end_markers"][0]
        if not cf["markers"]:
            reasons.append(Reason("leaked_end_marker",
                                  f"end-of-turn marker {marker!r} inside the response at char {pos} "
                                  f"(the stop condition did not fire)", T.sev_leaked_end_marker,
                                  (pos, pos + len(marker))))
        highlights.append(Highlight(pos, pos + len(marker), "end_marker", marker))

    # ---- model tokens and logprobs ------------------------------------------------------------
    model_loop = mids = None
    if token_ids is not None:
        try:
            mids = ids_array(list(token_ids))
        except (TypeError, ValueError, OverflowError):
            mids = None
            mt["model_tokens"] = {"error": "token_ids must be a sequence of integers"}
        if mids is not None:
            mm = {"tokens": int(mids.size)}
            mm.update({k: _r(v) for k, v in ngram_stats(mids).items()})
            model_loop = tail_loop_tolerant(mids)
            mm["tail_loop"] = None if model_loop is None else {
                "period": model_loop.period, "copies": _r(model_loop.copies),
                "covered_tokens": model_loop.covered, "coverage": _r(model_loop.coverage),
                "start_token": model_loop.start}
            mt["model_tokens"] = mm
    loops = [r for r in reasons if r.code in LOOP_CODES and r.span is not None]
    lp = None
    if token_logprobs is not None:
        lp = clean_logprobs(token_logprobs) if isinstance(token_logprobs, (list, tuple, np.ndarray)) else np.zeros(0)
    if lp is not None and lp.size:
        certain = lp >= T.near_zero_logprob
        info: dict = {"n": int(lp.size), "mean": _r(lp.mean()), "certain_share": _r(certain.mean())}
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
        elif loop_char is not None and len(text):
            in_loop = certain[int(math.floor(lp.size * loop_char / len(text))):]
            info["loop_mapping"] = "proportional"
        if in_loop is not None and in_loop.size:
            share = np.count_nonzero(in_loop) / in_loop.size
            info["loop_certain_share"] = _r(share)
            info["loop_tokens"] = int(in_loop.size)
            if loops:
                r = loops[0]
                if share >= T.self_reinforcing_share:
                    r.severity = 1 - (1 - r.severity) * (1 - T.sev_self_reinforcing_bonus)
                    r.message += (f"; self-reinforcing: {_pct(share)} of the loop's tokens were sampled with "
                                  f"p ≥ 0.9 (logprob ≥ {T.near_zero_logprob:.2f})")
                else:
                    r.message += (f"; not self-reinforcing: {_pct(share)} of the loop's tokens were sampled "
                                  f"with p ≥ 0.9")
        mt["logprobs"] = info
    else:
        mt["logprobs"] = {"n": 0, "absent": True}
        if loops:
            loops[0].message += ("; no token logprobs with the response, so whether the loop reinforces itself "
                                 "(near-certain tokens) is not known")

    if request is not None:
        mt["requested_repetition"] = {"count": request[0], "exempted": exempted}
    if not text.strip():
        reasons.append(Reason("empty", "empty response" if not text else "response is only whitespace", 0.1))

    sev = 1.0
    for r in reasons:
        sev *= 1.0 - max(0.0, min(1.0, r.severity))
    severity = 1.0 - sev
    reasons.sort(key=lambda r: -r.severity)
    return Analysis(degenerate=severity >= T.degenerate_at, severity=severity, reasons=reasons,
                    metrics=mt, highlights=highlights)


def _counting_loop(text: str, toks, T: Thresholds, runaway: bool, n_requested, requested,
                   fuzzy_tail=None, blind_runs: dict | None = None, blind: np.ndarray | None = None) -> dict | None:
    """The counting-loop finding (see ``counting.py``): the number-blind periodic stretch at the
    end (or before a short closing: ``]``, a fence), else the longest number-blind repeat run
    anywhere; judged by its number columns, its words and the count the request asked for."""
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
                (hash(C.DIGITS_RE.sub("#", text[a:b])) for a, b in zip(toks.starts[where].tolist(),
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
            cands.append((first, fz.period, whole))
    if run_wanted:
        # a counter anywhere (a loop the model left, then wrapped up): ≥ 8 copies of ≤ 32 tokens
        run = longest_run(ids, min_copies=T.count_anywhere_min_copies)
        if blind_runs is not None:
            blind_runs[T.count_anywhere_min_copies] = run  # (the number-blind longest run, for the caller)
        if run is not None:
            cands.append((run.start, run.period, int(run.copies)))
    best = None
    n_req = n_requested()
    spans = None
    for first, period, whole in cands:
        if whole < 3:
            continue
        # the longest counting suffix (halving): a few real items may come before the counter
        # took over (``7 × 3, 7 × 9, … then 7 × 8, 7 × 8, …``)
        first0, whole0 = first, whole
        while True:
            cols = C.columns(text, toks.starts, toks.ends, toks.is_number, first, period, whole, mixed)
            if cols.counting or whole < 2 * T.count_words_min_copies:
                break
            half = whole // 2
            first += (whole - half) * period
            whole = half
        past = (not cols.counting and n_req is not None and period >= 2
                and whole0 > n_req * T.count_request_factor + T.count_request_slack
                and C.prose_words(_token_texts(text, toks, first0, first0 + period)) >= 1)  # (a template, not numbers)
        if past:
            # one template far past the count asked for, whatever its numbers do (48 numbers
            # when 20 were asked): the counter is not the point, the count is
            first, whole = first0, whole0
            cols = C.columns(text, toks.starts, toks.ends, toks.is_number, first, period, whole, mixed)
        elif not cols.counting:
            continue
        a = int(toks.starts[first])
        b = int(toks.ends[first + whole * period - 1])
        unit_toks = _token_texts(text, toks, first + (whole - 1) * period, first + whole * period)
        words = C.prose_words(unit_toks)
        wordy = words >= T.count_words_min and words >= T.count_words_share * period
        if spans is None:
            spans = fence_spans(text) if ("```" in text or "~~~" in text) else []
        in_code = in_spans(a, spans)
        cov = whole * period / L
        far = n_req is not None and whole > n_req * T.count_request_factor + T.count_request_slack
        if wordy:
            fire = (whole >= T.count_code_min_copies and runaway) if in_code else whole >= T.count_words_min_copies
        else:
            fire = False
        if (n_req is None or far) and not cols.computed:
            # (a number and its separator, ``| 20``, is a row of a table up to a few dozen)
            fire = fire or (runaway and whole >= (T.count_runaway_min_copies if period > 2
                                                  else T.count_runaway_short_min_copies))
        fire = fire or (far and not in_code)
        if past and not far:
            fire = False
        unit = text[int(toks.starts[first + (whole - 1) * period]):b]
        if fire and requested(unit, whole):
            fire = False
        info = {"period": period, "copies": whole, "covered_tokens": whole * period, "coverage": _r(cov),
                "start_char": a, "prose_words": words, "requested_count": n_req, "in_code": in_code,
                **cols.to_dict()}
        asked = f"; the request asked for {n_req}" if n_req is not None else ""
        if past:
            msg = (f"counting loop: {whole} items of one template (period {period} tokens) from char {a}, "
                   f"{_pct(cov)} of the response, far past the {n_req} the request asked for — “{_short(unit, 60)}”")
        else:
            msg = (f"counting loop: {whole} items of one template (period {period} tokens) from char {a}, "
                   f"{_pct(cov)} of the response, in which only a counter changes ({cols.counters} counter, "
                   f"{cols.constants} constant number columns{', last value ' + str(cols.last_counter) if cols.last_counter is not None else ''})"
                   f"{asked} — “{_short(unit, 60)}”")
        info["past_request"] = past
        got = {"fire": fire, "info": info, "message": msg, "span": (a, b),
               "label": f"{whole} items" + ("" if past else ", counter only")}
        if fire:
            return got
        best = best or got
    return best


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


def _prose_and_vocab(toks, first: np.ndarray | None = None,
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


def _closing_trims(text: str, toks) -> list[int]:
    """How many tokens to leave off the end to reach a loop that a short closing follows: none, or
    the trailing punctuation-only tokens (``]``, ``}``, a code fence; at most 12)."""
    L = len(toks)
    trims = [0]
    k = 0
    while k < min(12, L - 1):
        t = text[int(toks.starts[L - 1 - k]):int(toks.ends[L - 1 - k])]
        if t[0].isalnum() or t[0] == "_":
            break
        k += 1
    if k:
        trims.append(k)
    return trims


def _token_texts(text: str, toks, i: int, j: int) -> list[str]:
    st = toks.starts[i:j].tolist()
    en = toks.ends[i:j].tolist()
    return [text[a:b] for a, b in zip(st, en)]


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
