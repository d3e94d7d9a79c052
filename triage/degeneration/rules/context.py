"""What the rules of one analysis share (``Context``: the input, its tokens, the metrics and findings
being built, what one rule measured that a later one reads) and the measurements every rule may
read (size and n-gram repetition, the exact tail loop, the markup balance)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .. import counting as C
from ..findings import Highlight, Reason, r4, short
from ..lines import compression_ratio
from ..markup import markup_balance
from ..messages import norm_words, requested_repetition, sequence_requested, verse_requested
from ..repetition import Loop, ngram_stats, tail_loop_tolerant
from ..thresholds import Thresholds
from ..tokens import Tokens, number_words, token_texts


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
    _number_words: list = field(default_factory=list)
    _item_runs: list = field(default_factory=list)

    @property
    def L(self) -> int:
        return len(self.toks)

    @cached_property
    def n_newlines(self) -> int:
        return self.text.count("\n")

    @cached_property
    def verse_asked(self) -> bool:
        """``verse_requested(messages)``: the request asks for a song, a poem, a rhyme …"""
        return verse_requested(self.messages)

    @cached_property
    def sequence_asked(self) -> bool:
        """``sequence_requested(messages)``: the request asks for alternation, a schedule or rota, a
        conjugation or a trace, whose answer is a sequence of near-identical lines."""
        return sequence_requested(self.messages)

    @property
    def sequence_answered(self) -> bool:
        """A sequence was asked for and the response ended by itself: its near-identical lines,
        counted lines or items in turn are the answer (a rota still going at the cut is not)."""
        return not self.runaway and self.sequence_asked

    def n_requested(self) -> int | None:
        """``count_requested(messages)``, computed once."""
        if not self._n_req:
            self._n_req.append(C.count_requested(self.messages))
        return self._n_req[0]

    def item_runs(self) -> list:
        """``counting.item_runs(text)``, computed once (the list overrun and the rotation read it)."""
        if not self._item_runs:
            self._item_runs.append(C.item_runs(self.text))
        return self._item_runs[0]

    def number_words(self) -> np.ndarray:
        """``tokens.number_words(toks)``: the counters in words, computed once (read only)."""
        if not self._number_words:
            self._number_words.append(number_words(self.toks))
        return self._number_words[0]

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
