"""Every threshold of the degeneration verdict, in one place, each with the reason for its value.

Units: "tokens" are the analysis tokens (word / punctuation tokens of the text, or the model's
token ids when the caller passes them); "copies" = covered tokens / period.

How the verdict is formed (``analyze.py``, the rules in ``rules/``): each finding carries a
severity in [0, 1]; the response's severity is the noisy-OR of its findings, 1 − Π(1 − s_i), and
the response is degenerate when that reaches ``DEGENERATE_AT``.  Findings that are weak on their own (a
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
    loop_cut_min_copies: float = 2.2
    loop_cut_min_tokens: int = 100
    loop_cut_min_coverage: float = 0.5
    """Two whole copies of a long block and a third begun (a fifth of it or more) when max_tokens
    cut the response, over ≥ 100 tokens and half of it: the model was writing the block a third
    time (a ``main()`` re-emitted twice and started again).  The labelling rule counts it as three
    copies; a passage restated once before the cut has no third beginning."""
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
    line_run_min_coverage: float = 0.15
    line_run_strong: int = 8
    """…covering ≥ 15 % of the response, or reaching its end at max_tokens, unless it is ≥ 8
    lines: four identical rows in a long answer that then moves on is a slip, not a loop (the
    labelling rule of the held-out set)."""
    line_run_three: int = 3
    """Three identical lines of code, markup or a table that say something count too when they
    cover ≥ 15 % of the response (the labelling rule's loop: three copies over about 15 %):
    ``<label>Email:</label>`` ×3 as the whole of a short form.  Healthy code repeats a line three
    times (``stack.pop();``, ``return function() {``) in a small part of a longer answer (under 6 %
    in every labelled set); prose says a line three times in a refrain or a cheer (``Glory, glory,
    hallelujah!``), and rows of zeros or empty cells say nothing: none of those count."""
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

    record_run_min_copies: int = 5
    record_run_min_period: int = 6
    record_run_min_words: int = 2
    record_run_min_coverage: float = 0.15
    """A block of ≥ 6 tokens with ≥ 2 distinct words in it (a JSON record, a table row, a two-line
    comment), said word for word ≥ 5 times back to back over ≥ 15 % of the response and ≥ 40 tokens
    (``loop_min_tokens``), is a loop
    even when it is mostly punctuation (the repeat run above wants prose).  Data and code do not
    repeat a whole record or statement verbatim five times in a row: the records differ in a
    name or a value, the unrolled statements in an index.  Checked on every labelled set: the only
    healthy items with such a run repeat what the user asked to be repeated (``write 'I will not
    talk in class' 20 times``), which the request exemption covers."""
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

    char_loop_subword_min_copies: float = 6.0
    char_loop_subword_min_chars: int = 30
    """A piece of a word that the response repeats until max_tokens (``LONG_LONG_LONG_…``,
    ``bakery-bakery-…``): ≥ 6 copies of a unit with ≥ 2 letters over ≥ 30 characters.  A separator
    or a run of zeros has no letters."""
    stutter_min_copies: int = 24
    stutter_min_share: float = 0.25
    stutter_max_distinct_share: float = 0.3
    """A word that says one piece again and again (an attribute value, a path, an identifier: one
    run of ≥ 30 characters without a space, cut at ``-_/.:,=|;``): one piece with a letter ≥ 24
    times and ≥ 25 % of its pieces, among few different ones (≤ 30 % of the pieces:
    ``-fused-fused-0f-fused…``, ``-d-d-d…``).  Minified code and CSS repeat a name among many
    different ones (jQuery: 61 % different, Bootstrap's CSS 41 %)."""

    symbol_flood_min: int = 24
    symbol_flood_per_kind: float = 6.0
    """Emoji and other symbols (Unicode So) that, with only spaces and separators between them,
    fill the end of a response that hit max_tokens: ≥ 24 of them and ≥ 6 per distinct symbol
    (``🎉🎉🎉💬🎉…``, ``⏱⏱⏵|⏱⏵|…``).  A healthy answer's emoji are few or varied (a list of ten
    emoji has ten kinds); a glitch among them does not break the run the way it breaks an exact
    period."""

    symbol_run_min_coverage: float = 0.15
    """The same flood anywhere (the model left it and went on) counts when it fills ≥ 15 % of the
    response's characters: a hundred ``🌞`` before the answer goes on.  Emoji in a healthy answer are
    a few at a time; share grids (🟩⬛), star ratings and box drawing are not emoji here."""
    # ---- whole-text repetition (supporting signal) -------------------------------------------
    runaway_window_min_tokens: int = 128
    """The runaway-repetition check needs ≥ 128 tokens; it looks at the last quarter of the
    response (at least 64 tokens) and asks how much of it was already said: the share of its
    8-grams that occurred earlier in the response (``tail_repeat_8``)."""
    runaway_prose_word_share: float = 0.55
    runaway_prose_repeat8: float = 0.3
    """Prose (≥ 55 % of the window's tokens are words): a response that hit max_tokens and whose
    last quarter re-says ≥ 40 % of its 8-grams is running away in a near-loop ("The cat continued
    on, and she continued on…").  Healthy prose repeats < 30 % even when cut (checked on every
    README / docstring / licence of the labelled set cut at a random point)."""
    runaway_min_third_saying: float = 0.06
    """…and either only counts when some of the window (≥ 6 % of its 8-grams) is said for the third
    time or more: a response cut while restating a passage once (a list repeated under a new
    heading, a JSON object restarted) re-says up to 100 % of its tail, each 8-gram for the
    second time, and two copies are not a loop (the labelling rule)."""
    runaway_markup_min_third_saying: float = 0.6
    """Markup, code and data re-use their own 8-grams row after row (``</td></tr> <tr><td>``), so
    a table or a JSON object restated once already says a third of its tail a third time; for
    them most of the window (≥ 60 %) must be a third saying."""
    runaway_mixed_word_share: float = 0.4
    runaway_mixed_min_third_saying: float = 0.5
    """Between prose and markup (40–55 % words: quoted dialogue, ``I'm`` split in three, lists with
    numbers), half of the window said a third time or more is a loop: the healthy items there
    (lists cut while restating, a cut template) stay under 0.39."""
    runaway_phrase_window: int = 128
    runaway_phrase_min_count: int = 4
    """…or one phrase (7 tokens, ≥ 5 of them words) said 4 or more times in the last 128 tokens of a
    response cut by max_tokens: the model circling on one clause (``…produce antibodies that can
    fight off the disease, and it is designed to produce antibodies that can fight off the disease.
    The immune system is trained to produce antibodies that can fight off the``).  Healthy text
    cut by max_tokens says a 7-word phrase at most two or three times in so short a stretch."""
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

    # ---- counting loop (a template whose only change is a counter) ----------------------------
    count_words_min: int = 3
    count_words_share: float = 0.4
    count_words_min_copies: int = 5
    """A copy that says something in words (≥ 3 prose words, ≥ 40 % of its tokens: ``Step 41: add
    the flour.``, not a JSON record's keys) repeated ≥ 5 times with only a counter changing is the
    same sentence numbered: nothing a request for a list wants."""
    count_anywhere_min_copies: int = 8
    """Not at the end (the model counted, then wrapped up): ≥ 8 copies of ≤ 32 tokens."""
    count_code_min_copies: int = 12
    """Inside a code block the same statement with an index (unrolled code, test cases) is
    legitimate; there it needs ≥ 12 copies and a response that hit max_tokens."""
    count_runaway_min_copies: int = 10
    """A template without words (``| 41 | 41 | 41 |``) that hit max_tokens: ≥ 10 items of one
    counter.  A table with two distinct progressions (``7 × 3 = 21``: 3 and 21) is computed, not
    counted, and is not judged by this."""
    """Without max_tokens and without a count in the request there is no telling a counter-only
    table from data someone generated: not judged."""
    count_runaway_short_min_copies: int = 24
    """…but a unit of one number and its separator (``| 20``, ``61,``) is a table row or a list of
    numbers up to a few dozen: 24 of them."""
    count_copied_min_columns: int = 3
    """Rows in which one counter value is copied into every number cell (``| 10 | 10 | 10 | 10 |``
    then ``| 12 | 12 | 12 | 12 |``), ≥ 3 such cells and ≥ ``count_words_min_copies`` rows: the
    columns say nothing the first does not.  A computed table's columns differ (``n``, ``n²``);
    a zero-filled one does not count."""
    count_constant_min_digits: int = 4
    """Items that are only their counter and one number of ≥ 4 digits copied into every one
    (``1. 123456789012``, ``2. 123456789012``), ≥ ``count_words_min_copies`` of them: the same item
    numbered, even at the count asked for (a list of zeros or of one price is not: short numbers)."""
    count_request_factor: float = 1.5
    count_request_slack: int = 2
    """With a count in the request (``10 products``, ``1 to 20``): more than 1.5 × N + 2 items is
    far past what was asked; at most that is the answer (unless the items are one sentence)."""
    repeated_items_min: int = 3
    repeated_items_min_words: int = 3
    """Three list items back to back with the same words (≥ 3 of them), only the number changing
    (``11. Learn a new skill`` … ``13. Learn a new skill``): the labelling rule's counting loop.
    A healthy list does not say one item three times."""
    repeated_items_short_min: int = 4
    """An item of one or two words (a name: ``1. Goldfish`` … ``7. Goldfish``, ``**Schnack**``)
    said four or more times back to back is the same loop: a list asked for names, kinds or
    steps never gives one of them four times running.  Answers and statuses (``True``, ``Done``,
    ``Yes``) repeat legitimately and do not count."""
    rotation_min_items: int = 8
    rotation_max_distinct_share: float = 0.3
    """A list or table of ≥ 8 items back to back of which at most 30 % are different (their text
    with the numbers kept): the same few items in rotation (``The Nightingale`` / ``The Black
    Swan`` for ten books, five colours for nine vegetables).  A real list repeats an item now and
    then: a list of ocean animals that names fish six times among fifteen still keeps a third of
    them different (labelled healthy), the other healthy lists and tables of the labelled sets
    keep ≥ 46 % (rows of numbers differ in their values)."""
    rotation_min_echoes: int = 5
    """…or, after items that differ, ≥ 5 items back to back each the same as the one two or three
    before it (``Zorath`` / ``Zorath II`` / ``Zorath`` …, after a first title that was real): a
    strict rotation of two or three items, which a list that names fish six times among other
    animals never keeps up."""
    list_overrun_min_extra: int = 5
    list_overrun_factor: float = 3.0
    """A list of one kind of item (numbered, one bullet, ``key:`` labels) longer than 1.5 × and
    ≥ 5 items past the count the request asked for in a response that hit max_tokens (or ≥ 3 ×
    the count even if it stopped): the model did not stop where it was asked to."""

    # ---- near-verbatim loop (echoes of recent sentences / lines) ----------------------------
    near_similarity: float = 0.5
    near_window: int = 8
    """A segment (line or sentence) is an echo when its set of tokens and neighbouring pairs is
    within Jaccard 0.5 of one of the 8 content segments before it: one word swapped in a 5-word
    sentence is 0.57 (order counts, so a salad of the same few words is not an echo); a rotation
    of up to 8 sentences is seen."""
    near_repeat_similarity: float = 0.8
    """An echo this close (about one word in twenty changed) counts as said again, like a
    word-for-word repeat."""
    near_long_segment_tokens: float = 15.0
    near_long_min_copies: float = 3.0
    """Long sentences (≥ 15 tokens on average) need only 3 copies (2 echoes), as an exact loop
    does; short ones need 8 echoes in 4 rotations (below)."""
    near_min_echoes: int = 8
    near_min_tokens: int = 45
    near_min_coverage: float = 0.3
    """≥ 8 echoes over ≥ 45 tokens, covering ≥ 30 % of the response or reaching its end at
    max_tokens."""
    near_min_copies: float = 4.0
    """…in ≥ 4 rotations (echoes per rotation + 1): a knock-knock joke tells its block three times."""
    near_max_novel_share: float = 0.1
    near_runaway_max_novel_share: float = 0.15
    """…and at most 10 % of the echoes bring a word not seen before (15 % when the response hit
    max_tokens).  A loop re-uses its words (calm / still); verses of a song and parallel list
    items bring a new one each (Old MacDonald's animals: ~40 % of its echoing lines; a cumulative
    rhyme that stops by itself: ~14 %)."""
    near_min_repeat_share: float = 0.3
    """…and the stretch says the same things again: ≥ 30 % of its echoes repeat an earlier
    sentence word for word (numbers aside), or it runs to max_tokens bringing almost nothing new
    (≤ 10 %).  A systematic list (6 verbs × 10 nouns) echoes without ever repeating an item."""
    near_cut_min_echoes: int = 4
    near_cut_min_repeat_share: float = 0.5
    """A response that hit max_tokens inside a rotation of sentences — ≥ 4 echoes, ≥ 2 whole
    rotations after the first, half of them said word for word and none bringing a new word, up
    to the sentence that max_tokens cut — is still looping; healthy prose cut by max_tokens brings
    new words."""
    near_round_min_segments: int = 3
    """A request for N rounds (``4 rounds of the breathing exercise``, ``5 knock-knock jokes``)
    excuses up to N + 1 rotations of a block of ≥ 3 sentences or lines.  A rotation of one or two
    lines is not a round: ``10 books`` answered with two titles in turn, ``8 ways`` with one tip
    said six times, are the items asked for coming out the same."""
    near_strong_echoes: int = 16
    near_strong_coverage: float = 0.5
    near_slot_min_copies: float = 4.0
    near_slot_min_echoes: int = 4
    near_slot_min_coverage: float = 0.3
    near_slot_max_novel_share: float = 0.3
    near_slot_max_period: int = 2
    near_slot_min_segment_tokens: float = 8.0
    """A sentence or line said again and again with one slot changing (``func f(prefix: String)``,
    ``func f(prefix: [Double])``, …; ``The keeper's mother / brother / great-grandfather had been
    killed``): each echo brings a new word, so the novelty bound above lets it go.  Outside verse
    (a song, a poem, a chant: ``Old MacDonald``'s cow, duck, pig is the song), a sequence asked
    for (alternate two medicines, a rota, a conjugation, a trace) and a list of the count asked
    for, a rotation of one or two sentences or lines of ≥ 8 tokens, ≥ 4 copies over ≥ 30 % of the
    response where at most 3 echoes in 10 bring a new word, is that loop.  Verses of three or more
    lines are a song's stanzas, not a slot."""

    # ---- recursive nesting --------------------------------------------------------------------
    nest_tag_min: int = 10
    nest_bracket_min: int = 14
    nest_indent_min: int = 12
    """Depth of one climb (levels opened inside each other without coming back up) of the same
    element, of brackets, of indentation.  Real pages nest a handful of ``div``s or ``ul``s, JSON
    configs a handful of objects, code a handful of blocks."""
    nest_rare_tag_min: int = 5
    nest_rare_came_back_factor: float = 1.5
    """Elements that do not nest in themselves in real pages (``table``, ``a``, ``form``, headings,
    inline formatting): 5 levels (7 when closed again)."""
    nest_runaway_factor: float = 0.7
    """A response that hit max_tokens with the climb in its second half: 70 % of that depth."""

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
    sev_confab_bare: float = 0.85
    sev_counting_loop: float = 0.75
    sev_near_loop: float = 0.75
    sev_nesting: float = 0.7
    sev_leaked_end_marker: float = 0.3
    sev_runaway: float = 0.25
    sev_unbalanced_fence: float = 0.15
    sev_self_reinforcing_bonus: float = 0.5
    """Added noisy-OR-wise to a loop finding whose tokens are 'certain' (self-reinforcing)."""

    def to_dict(self) -> dict:
        return asdict(self)


DEFAULT = Thresholds()
