"""The rules for repetition that is not word for word: near-verbatim echoes of recent sentences,
recursive nesting, a response cut by max_tokens while re-saying itself, and the cut itself."""

from __future__ import annotations

import re

import numpy as np

from .. import near_verbatim as NV
from .. import nesting as N
from ..findings import pct, r4, short
from ..repetition import tail_phrase_count, tail_repeat
from ..tokens import Tokens
from .context import Context


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
    # one or two sentences or lines with a slot changing, outside verse, a list of the count asked
    # for and a schedule or a paradigm asked for
    n_req = c.n_requested()
    slot = (er.period <= T.near_slot_max_period and er.copies >= T.near_slot_min_copies
            and er.echoes >= T.near_slot_min_echoes and cov >= T.near_slot_min_coverage
            and er.mean_tokens >= T.near_slot_min_segment_tokens and er.novel_share <= T.near_slot_max_novel_share
            and not (n_req is not None and er.copies <= n_req + 1) and not c.verse_asked and not c.sequence_asked)
    strong = (er.echoes >= T.near_strong_echoes and cov >= T.near_strong_coverage
              and er.copies >= T.near_min_copies)
    dry = er.novel_share <= (T.near_runaway_max_novel_share if runaway else T.near_max_novel_share)
    same = (er.repeat_share >= T.near_min_repeat_share
            or (runaway and at_end and er.novel_share <= T.near_max_novel_share))
    if c.loop_fired or not (slot or (enough or strong) and dry and same):
        return
    a, b = info["start_char"], info["end_char"]
    # (N rounds asked for: at most N + 1 copies that the model finished are the answer;
    # a rotation still running when max_tokens cut it is not known to stop at N.  A round is a
    # block of lines, a verse or a joke: items that echo one another one or two at a time are
    # N items asked for that came out the same)
    asked_for = (n_req is not None and er.copies <= n_req + 1 and not (runaway and at_end)
                 and er.period >= T.near_round_min_segments)
    asked_for = asked_for or c.sequence_answered
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
