"""The rules for repetition said word for word: the tail loop (exact, and with numbers equated),
the same line again and again, a repeat run or a repeated block anywhere, a loop in characters,
a symbol flood."""

from __future__ import annotations

import re

import numpy as np

from ..findings import pct, r4, short
from ..lines import line_char_offset, line_stats
from ..markup import symbol_run, symbol_tail_run
from ..repetition import char_tail_loop, longest_run, tail_loop_tolerant
from ..tokens import token_texts
from .context import _WORD_RE, Context, _loop_unbalanced


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
    # counters in words too (``Step 9: This is the ninth step.``): every number word is the same
    # token here, where the loop must run to max_tokens or be massive (parallel sentences that
    # count ``the first coat``, ``the second coat`` in an answer are no loop)
    in_words = c.number_words()[L - W:] if c.runaway else None
    worded = in_words is not None and bool(in_words.any())
    if W == L and not np.count_nonzero(numbers) and not worded:
        fz = c.loop  # (no number to equate: the same sequence as the tail loop's)
    else:
        window = c.number_blind()[L - W:]  # every number is the same token
        if worded:
            window = window.copy()
            window[in_words] = 0x5EED
        fz = tail_loop_tolerant(window, c.last_may_be_cut)
        if not worded:  # (the counting check reads this digits-only loop again)
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
                # (three lines: only over 15 % of the response, and only a line of code or markup
                # that says something: prose says a line three times in refrains and cheers)
                if not covers or not _code_line_with_words(line):
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


_CHUNK_RE = re.compile(r"\S{30,}")
_PIECE_SEP_RE = re.compile(r"[-_/.:,=|;]+")


def identifier_stutter(text: str) -> tuple[int, int, int, str, int, int] | None:
    """The run of ≥ 30 characters without a space (an attribute value, a path, an identifier)
    whose most said piece (cut at ``-_/.:,=|;``, with a letter) is said most often: (times, pieces,
    different pieces, piece, start char, end char), or None.  Linear."""
    best = None
    for m in _CHUNK_RE.finditer(text):
        counts: dict[str, int] = {}
        pieces = 0
        for piece in _PIECE_SEP_RE.split(m.group()):
            if piece:
                pieces += 1
                counts[piece] = counts.get(piece, 0) + 1
        for piece, n in counts.items():
            if (best is None or n > best[0]) and n >= 3 and any(ch.isalpha() for ch in piece):
                best = (n, pieces, len(counts), piece, m.start(), m.end())
    return best


def check_identifier_stutter(c: Context) -> None:
    """One piece said again and again inside a word (``class="…-fused-fused-0f-fused-fused…"``,
    ``-d-d-d-d…``): a loop that word tokens see as one token or a few."""
    text, T = c.text, c.T
    if c.loop_fired or len(text) < 2 * T.stutter_min_copies:  # (a piece and a separator each time)
        return
    st = identifier_stutter(text)
    if st is None:
        return
    n, pieces, distinct, piece, a, b = st
    c.mt["identifier_stutter"] = {"piece": piece[:40], "times": n, "pieces": pieces, "distinct": distinct,
                                  "start_char": a, "end_char": b}
    if n < T.stutter_min_copies or n < T.stutter_min_share * pieces or distinct > T.stutter_max_distinct_share * pieces:
        return
    if c.requested(piece, n):
        c.exempted.append("char_loop")
        return
    c.fire("char_loop", f"stutter inside a word: “{short(piece, 30)}” {n} times among the {pieces} pieces of one "
           f"{b - a}-character run without a space, from char {a}", T.sev_char_loop, (a, b),
           (a, b, "loop", f"“{short(piece, 12)}” ×{n}"))
    c.loop_fired = True


def check_symbol_flood(c: Context) -> None:
    """A flood of a few symbols at the end (emoji repeated until max_tokens), or one the model
    left that fills a real part of the response."""
    text, T = c.text, c.T
    if c.loop_fired:
        return
    sf = symbol_tail_run(text) if c.runaway else None
    if sf is not None:
        c.mt["symbol_flood"] = sf
        if sf["symbols"] >= T.symbol_flood_min and sf["symbols"] >= T.symbol_flood_per_kind * sf["kinds"]:
            if c.requested(text[sf["start"]:], sf["symbols"]):
                c.exempted.append("symbol_flood")
                return
            c.fire("symbol_flood", f"symbol flood: {sf['symbols']} symbols of {sf['kinds']} kinds "
                   f"(“{sf['top']}” ×{sf['top_count']}) fill the last {len(text) - sf['start']} characters until "
                   f"max_tokens", T.sev_char_loop, (sf["start"], len(text)),
                   (sf["start"], len(text), "loop", f"{sf['symbols']} symbols"))
            c.loop_fired = True
            return
    _check_symbol_run(c)  # (the tail is not a flood: one may still fill the middle)


def _check_symbol_run(c: Context) -> None:
    """A run of a few symbols anywhere over ≥ 15 % of the response: the flood the model left."""
    text, T = c.text, c.T
    sr = symbol_run(text, T.symbol_flood_min)
    if sr is None:
        return
    c.mt["symbol_run"] = sr
    a, b = sr["start"], sr["end"]
    if sr["symbols"] >= T.symbol_flood_per_kind * sr["kinds"] and b - a >= T.symbol_run_min_coverage * len(text):
        if c.requested(text[a:b], sr["symbols"]):
            c.exempted.append("symbol_flood")
            return
        c.fire("symbol_flood", f"symbol flood: {sr['symbols']} symbols of {sr['kinds']} kinds (“{sr['top']}” "
               f"×{sr['top_count']}) back to back from char {a}, {pct((b - a) / len(text))} of the response",
               T.sev_char_loop, (a, b), (a, b, "loop", f"{sr['symbols']} symbols"))
        c.loop_fired = True


_CODE_MARKS = frozenset("<>{}[]();=#|")
_TAG_OR_ENTITY_RE = re.compile(r"</?[A-Za-z][\w-]*|&[A-Za-z]+;")


def _code_line_with_words(line: str) -> bool:
    """A line of code, markup or a table (it has one of ``<>{}[]();=#|``) with a word in it that is
    not a tag name or an entity: ``<label>Email:</label>``, ``# Usage: tar -czf``, ``| Blue | Blue |``;
    not ``[0, 0, 0, 0],`` (a row of data) nor ``<td>&nbsp;</td>`` (an empty cell), nor prose
    (``Glory, glory, hallelujah!``)."""
    if not any(ch in _CODE_MARKS for ch in line):
        return False
    return _WORD_RE.search(_TAG_OR_ENTITY_RE.sub(" ", line)) is not None


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
