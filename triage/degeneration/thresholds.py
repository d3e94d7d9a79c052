"""Every threshold of the degeneration verdict, in one place, each with the reason for its value.

Units: "tokens" are the analysis tokens (word / punctuation tokens of the text, or the model's
token ids when the caller passes them); "copies" = covered tokens / period.

How the verdict is formed (see ``verdict.py``): each finding carries a severity in [0, 1];
the response's severity is the noisy-OR of its findings, 1 − Π(1 − s_i), and the response is
degenerate when that reaches ``DEGENERATE_AT``.  Findings that are weak on their own (a
response that hit max_tokens, an unbalanced code fence) have severities well under 0.5, so they
explain a verdict but cannot make one alone; two weak ones still stay under 0.5 (0.25 and 0.15 →
0.36); only a real repetition / confabulation finding can flip it.

The values were set from first principles (what each kind of legitimate text can and cannot
produce, noted below) and then checked against the labelled set in ``testdata/``: on it every
healthy-repetitive item (HTML templates, CSV, JSON fixtures, code, tables, poems with refrains)
sits at least a factor ~2 away from the threshold that would flag it (``python -m
triage.degeneration.evaluate --margins`` prints the margins).
"""

from __future__ import annotations

from dataclasses import dataclass, asdict


@dataclass(frozen=True)
class Thresholds:
    # ---- verdict ----------------------------------------------------------------------------
    degenerate_at: float = 0.5
    """noisy-OR severity at which a response is called degenerate."""

    # ---- tail loop (exact period at the end of the text) -------------------------------------
    loop_min_copies: float = 3.0
    """A loop must repeat at least 3 times.  Two copies of something at the end is common in
    healthy text (a song ending on its chorus twice, "Thanks! Thanks!", two identical table
    rows); three or more exact copies *at the very end* rarely is."""
    loop_min_tokens: int = 40
    """…and cover at least 40 tokens.  Legitimate exact tail repetitions are short: the closing
    tags of a nested HTML fragment (``</div>`` ×8 = 32 tokens), ``}}}}`` at the end of code, a
    ``la la la`` line.  A degenerate loop of a sentence (≈12–25 tokens) reaches 40 tokens within
    2–3 copies, a ``</div>`` loop (4 tokens) within 10 copies."""
    loop_strong_copies: float = 6.0
    """≥ 6 copies covering ≥ ``loop_strong_tokens`` is a loop whatever else the text is."""
    loop_strong_tokens: int = 120
    """120 tokens ≈ 80–100 words of pure repetition at the end of a response; no healthy item
    in the labelled set has an exact tail period covering more than ~40 tokens."""
    loop_min_coverage: float = 0.15
    """A loop below the strong tier (3–6 copies or 40–120 tokens) must cover ≥ 15 % of the
    response to count: a short loop at the end of a very long legitimate document is weak
    evidence on its own."""
    loop_runaway_min_copies: float = 4.0
    loop_runaway_min_tokens: int = 24
    loop_runaway_min_coverage: float = 0.5
    """A short response that hit max_tokens and is mostly a loop (≥ 4 copies over ≥ half of it,
    e.g. a three-item list cycling ``- large - huge - enormous`` until cut) is degenerate even
    below 40 tokens: max_tokens was small, the loop is still the whole answer."""
    structural_loop_min_tokens: int = 200
    """A loop made only of markup / punctuation (``</div>``, ``}``, ``|``) that does NOT leave the
    markup unbalanced is what a well-formed nested document ends with; it only counts when it is
    much longer than any real nesting depth (200 tokens = 50 ``</div>``).  An unbalanced
    structural loop (more ``</div>`` than ``<div>``) counts with the normal thresholds: that is
    the production ``</div>`` flood."""

    # ---- fuzzy tail loop (numbers normalised, catches "11. Learn… 12. Learn…") ---------------
    fuzzy_min_copies: float = 4.0
    fuzzy_min_tokens: int = 80
    fuzzy_min_coverage: float = 0.2
    """The fuzzy loop equates all numbers, which also makes rows of a numeric CSV identical;
    therefore it requires ≥ 4 copies, ≥ 80 tokens, ≥ 20 % coverage AND a period that contains
    at least ``fuzzy_min_alpha`` word tokens of letters (a CSV row of numbers has none)."""
    fuzzy_min_alpha: int = 3
    fuzzy_needs_runaway: bool = True
    """Unrolled code (``out[3] = scale(values[3])``) and templated lists are legitimately
    near-periodic once numbers are equated, so the fuzzy loop counts only in a response that hit
    max_tokens – where counter loops (``11. Learn a New Skill… 12. Learn a New Skill…``) are seen –
    unless it is massive (below)."""
    fuzzy_massive_copies: float = 20.0
    fuzzy_massive_coverage: float = 0.5
    """≥ 20 near-identical copies covering ≥ half the response count even without max_tokens."""

    # ---- repeated lines ----------------------------------------------------------------------
    line_run_min: int = 4
    """4 identical consecutive non-blank lines of prose/content.  Poems and songs repeat a line
    twice, rarely three times in a row; code, CSV and tables almost never repeat a content line
    verbatim consecutively."""
    line_run_min_chars: int = 12
    """Lines shorter than 12 characters (``},`` ``end`` ``</div>`` ``---`` ``|`` a one-word line)
    are *structural* and legitimately repeat in runs (closing braces of nested code, closing tags
    of nested HTML, separators)."""
    structural_line_run_min: int = 30
    """…so a run of short/structural lines only counts at 30: deeper than any real nesting."""

    # ---- a repeat run anywhere (not only at the end) ----------------------------------------
    run_short_period: int = 2
    run_short_min_copies: float = 20.0
    """A word of prose (or a two-token unit) repeated ≥ 20 times back to back anywhere
    (``The answer is is is … is.``): the model looped and then happened to stop. Healthy text
    repeats a word a handful of times (``no, no, no``, ``very very``, a ``na na`` refrain)."""
    run_min_copies: float = 8.0
    run_min_tokens: int = 40
    run_min_word_share: float = 0.5
    """A longer unit (≥ 3 tokens) ≥ 8 times back to back over ≥ 40 tokens. Units must be prose:
    at least half of a copy's tokens words of ≥ 2 letters. Separators (``=====``), zero-filled
    arrays, numeric rows, nested ``if (x) {`` and closing tags repeat legitimately. A request
    for N copies (``write 'hello' 50 times``) exempts up to N copies of a unit the user named,
    for this and the other repetition findings."""

    # ---- a loop at the end, in characters ----------------------------------------------------
    char_loop_min_chars: int = 200
    char_loop_runaway_min_chars: int = 100
    char_loop_min_copies: float = 20.0
    char_loop_min_coverage: float = 0.3
    """What word tokens cannot see: a run inside one token (``3.14159…0000000``, ``的的的…``) or
    whitespace (thousands of newlines). A unit of ≤ 16 characters repeated ≥ 20 times over the
    last ≥ 200 characters (≥ 100 if the response hit max_tokens) covering ≥ 30 % of the response
    or hitting max_tokens. A markdown rule is ~80 characters, and healthy responses do not end on
    hundreds of blank lines."""

    # ---- whole-text repetition (supporting signal) -------------------------------------------
    runaway_window_min_tokens: int = 128
    """The runaway-repetition check needs ≥ 128 tokens; it looks at the last quarter of the
    response (at least 64 tokens) and asks how much of it was already said: the share of its
    8-grams that occurred earlier in the response (``tail_repeat_8``)."""
    runaway_prose_word_share: float = 0.55
    runaway_prose_repeat8: float = 0.4
    """Prose (≥ 55 % of the window's tokens are words): a response that hit max_tokens and whose
    last quarter re-says ≥ 40 % of its 8-grams is running away in a near-loop ("The cat continued
    on, and she continued on…").  Healthy prose repeats < 30 % even when cut (checked on every
    README / docstring / licence of the labelled set cut at a random point)."""
    runaway_any_repeat8: float = 0.9
    """Code / markup / data repeat their structure legitimately: a JSON schema cut at max_tokens
    re-says up to ~85 % of its 8-grams.  For them only ≥ 90 % counts (growing ``nested-div-inner-
    inner…`` class names, a block of code re-emitted).  This is the tightest margin of the verdict
    and applies only to responses that hit max_tokens."""

    # ---- markup balance ----------------------------------------------------------------------
    markup_excess_close_min: int = 12
    """More than 12 surplus closing tags of one name (and more closes than twice the opens).
    Templates with ``{% if %}`` branches are off by a few; 12+ surplus ``</div>`` is a flood."""

    # ---- confabulated turns ------------------------------------------------------------------
    confab_min_words: int = 2
    """A role line (``User: …``) must be followed by ≥ 2 words of its own to be an invented turn."""

    # ---- logprobs ----------------------------------------------------------------------------
    near_zero_logprob: float = -0.1053605156578263  # log(0.9)
    """A token sampled with p ≥ 0.9 counts as 'certain'."""
    self_reinforcing_share: float = 0.8
    """≥ 80 % certain tokens inside a loop = the loop reinforces itself (greedy or T>0)."""

    # ---- severities of the findings ----------------------------------------------------------
    sev_loop_strong: float = 0.95
    sev_loop: float = 0.75
    sev_fuzzy_loop: float = 0.7
    sev_line_run: float = 0.7
    sev_repeat_run: float = 0.7
    sev_char_loop: float = 0.75
    sev_runaway_repetition: float = 0.6
    sev_markup_flood: float = 0.6
    sev_confab_marker: float = 0.9
    sev_confab_role: float = 0.8
    sev_leaked_end_marker: float = 0.3
    sev_runaway: float = 0.25
    sev_unbalanced_fence: float = 0.15
    sev_self_reinforcing_bonus: float = 0.5
    """Added noisy-OR-wise to a loop finding whose tokens are 'certain' (self-reinforcing)."""

    def to_dict(self) -> dict:
        return asdict(self)


DEFAULT = Thresholds()
