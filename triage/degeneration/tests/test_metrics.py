"""Unit tests of the individual metrics, several against brute-force references."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from triage.degeneration import lines, markup, repetition, tokens, turns

text_chars = st.text(alphabet=st.sampled_from(list("ab c,.<>/\n\t_1٣é日本ー々・カ한\U0001F600\u0301\ud800\udfff\x00")) | st.characters(), max_size=300)


@settings(max_examples=200, deadline=None)
@given(text_chars)
def test_vectorised_tokens_equal_regex(text):
    tk = tokens.token_arrays(text)
    got = [text[a:b] for a, b in zip(tk.starts.tolist(), tk.ends.tolist())]
    assert got == tokens.TOKEN_RE.findall(text)
    # equal tokens <-> equal hashes
    by_tok = {}
    for h, t in zip(tk.hashes.tolist(), got):
        by_tok.setdefault(t, set()).add(h)
    assert all(len(v) == 1 for v in by_tok.values())
    assert len(set(tk.hashes.tolist())) == len(by_tok)
    assert tk.is_number.tolist() == [t.isdecimal() for t in got]


def test_token_hashes_consistent_across_chunks(monkeypatch):
    monkeypatch.setattr(tokens, "_CHUNK", 64)
    text = " ".join(["alpha", "beta", "gamma</div>", "x" * 200, "alpha", "beta"] * 30)
    tk = tokens.token_arrays(text)
    toks = tokens.TOKEN_RE.findall(text)
    ids = {}
    for h, t in zip(tk.hashes.tolist(), toks):
        assert ids.setdefault(t, h) == h


def brute_ngram(tokens, n):
    grams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    if not grams:
        return 0.0, 0.0
    return 1 - len(set(grams)) / len(grams), len(set(grams)) / len(tokens)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=400))
def test_ngram_stats_match_brute_force(seq):
    got = repetition.ngram_stats(tokens.ids_array(seq))
    for n in range(1, 5):
        rep, dist = brute_ngram(seq, n)
        assert got[f"seq_rep_{n}"] == pytest.approx(rep)
        assert got[f"distinct_{n}"] == pytest.approx(dist)


def test_seq_rep_known_values():
    got = repetition.ngram_stats(tokens.ids_array([1, 2, 1, 2]))
    assert got["seq_rep_1"] == 0.5 and got["distinct_1"] == 0.5
    assert got["seq_rep_2"] == pytest.approx(1 / 3)       # ab ba ab
    assert got["distinct_2"] == pytest.approx(2 / 4)      # Li et al.: unique / tokens


def brute_tail_loop(seq):
    L = len(seq)
    r = seq[::-1]
    best = None
    for p in range(1, L // 2 + 1):
        z = 0
        while p + z < L and r[z] == r[p + z]:
            z += 1
        # two copies, and at least 3 matching tokens: the detector's candidate filter compares the
        # last 3 tokens (for L ≥ 6), so tails like "x x x" / "x y x y" are below its resolution
        if z < p or z < (3 if L >= 6 else 2):
            continue
        if best is None or p + z > best[1]:
            best = (p, p + z)
    return best


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2), max_size=80), st.lists(st.integers(0, 2), min_size=1, max_size=6),
       st.integers(0, 12), st.integers(0, 5))
def test_tail_loop_matches_brute_force(prefix, unit, copies, cut):
    seq = prefix + unit * copies
    if cut and len(seq) > cut:
        seq = seq[:-cut]
    got = repetition.tail_loop(tokens.ids_array(seq))
    exp = brute_tail_loop(seq)
    assert (None if got is None else (got.period, got.covered)) == exp


def test_tail_loop_div_flood_shortest_period():
    tk = tokens.token_arrays("<html><body>" + "</div>" * 500)
    loop = repetition.tail_loop(tk.hashes)
    # the ">" of <body> continues the period backwards; the loop starts at the first whole copy
    assert loop.period == 4 and loop.covered == 2001 and loop.start == len(tk) - 2000


def test_tail_loop_tolerates_a_cut_last_word():
    tk = tokens.token_arrays("Intro text here. " + "</div>" * 100 + "</d")
    assert repetition.tail_loop(tk.hashes) is None or repetition.tail_loop(tk.hashes).covered < 10
    loop = repetition.tail_loop_tolerant(tk.hashes)
    assert loop.period == 4 and loop.trimmed == 1 and loop.covered >= 400


def test_line_stats_runs_and_duplicates():
    text = "intro line here\n\nsame line again!\nsame line again!\n\nsame line again!\n}\n}\n}\nend"
    ls = lines.line_stats(text, 12)
    assert ls.run == 3 and ls.run_line == "same line again!"
    assert ls.structural_run == 3 and ls.structural_run_line == "}"
    assert ls.lines == 8                      # blank lines are not counted
    assert ls.duplicate_share == pytest.approx(1 - 4 / 8)
    assert lines.line_char_offset(text, ls.run_start_line) == text.index("same")


def test_markup_balance_nested_and_flood():
    nested = "<div>" * 20 + "<br><img src=x/><input type=text>" + "</div>" * 20
    m = markup.markup_balance(nested)
    assert m["excess_close"] == {} and m["excess_open"] == {}
    m = markup.markup_balance("<div><p>hi</p></div>" + "</div>" * 30)
    assert m["excess_close"] == {"div": 30}
    m = markup.markup_balance("```python\nx = 1\n```\ntext\n```\nunclosed")
    assert m["code_fences"] == 3 and m["unbalanced_fence"]
    assert not markup.markup_balance("````\n```\nstill inside\n````\n")["unbalanced_fence"]


def test_compression_ratio():
    assert lines.compression_ratio(b"") == 0.0
    assert lines.compression_ratio(b"</div>" * 1000) > 50
    rnd = np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes()
    assert lines.compression_ratio(rnd) < 1.05


def test_confabulated_turn_markers_and_code():
    text = "Paris.<|im_end|>\n<|im_start|>user\nNow write a poem<|im_end|>"
    cf = turns.confabulated_turns(text, [{"role": "user", "content": "Capital of France?"}], 2)
    assert [(m[2]) for m in cf["markers"]] == ["user"]
    assert len(cf["end_markers"]) == 2
    explained = "ChatML wraps turns like this:\n```\n<|im_start|>user\nhi<|im_end|>\n```\nand `<|im_start|>` inline."
    cf = turns.confabulated_turns(explained, None, 2)
    assert cf["markers"] == [] and cf["end_markers"] == []


def test_role_lines_need_unknown_text():
    msgs = [{"role": "user", "content": "Summarise: User: please reset my password now"}]
    quoting = "The ticket says:\nUser: please reset my password now\nso reset it."
    assert turns.confabulated_turns(quoting, msgs, 2)["role_lines"] == []
    invented = "Sure, done.\n\nUser: Thanks! Now write me a README for Butter.\n\nAssistant: Of course."
    assert len(turns.confabulated_turns(invented, msgs, 2)["role_lines"]) == 1
    # without messages a lone "User:" line (e.g. a field list) is not a turn; a dialogue is
    assert turns.confabulated_turns("Fields:\nUser: the owner of the key\nScope: read", None, 2)["role_lines"] == []
    assert len(turns.confabulated_turns(invented, None, 2)["role_lines"]) == 1
    asked = [{"role": "user", "content": "Write a short dialogue between a user and a support bot."}]
    assert turns.confabulated_turns(invented, asked, 2)["role_lines"] == []


def test_clean_logprobs():
    out = tokens.clean_logprobs([-0.5, None, float("nan"), 0.2, "x", True, float("-inf")])
    assert out.tolist() == [-0.5, 0.0, -1e4]
    # all numbers (the usual case) takes the numpy path: same rules
    assert tokens.clean_logprobs([-0.5, float("nan"), 0.2, float("-inf"), float("inf"), -3, -2e4]).tolist() == [
        -0.5, 0.0, -1e4, -3.0, -2e4]
    assert tokens.clean_logprobs((-1, 0)).tolist() == [-1.0, 0.0]
    assert tokens.clean_logprobs(np.array([-0.25, np.nan, 1.0], dtype=np.float32)).tolist() == [-0.25, 0.0]
    assert tokens.clean_logprobs(np.array([[-2, 0]])).tolist() == [-2.0, 0.0]  # any numeric array, flattened
    assert np.signbit(tokens.clean_logprobs([-0.0, -1.0])[0])  # -0.0 kept, as the per-item path keeps it


def test_token_arrays_ascii_and_unicode_paths_agree():
    # an ASCII text takes a one-byte path; one non-ASCII character switches to code points
    text = "Call 555-0100 now_2 x1 12345 the end... a __init__ 3rd 42"
    a, b = tokens.token_arrays(text), tokens.token_arrays(text + " é")
    T = len(a)
    for field in ("starts", "ends", "is_number", "is_word", "hashes"):
        assert getattr(a, field).tolist() == getattr(b, field)[:T].tolist(), field
    assert [text[s:e] for s, e in zip(a.starts, a.ends)] == tokens.tokenize(text)
    assert [text[s:e] for s, e in zip(a.starts[a.is_number], a.ends[a.is_number])] == ["555", "0100", "12345", "42"]
    assert [text[s:e] for s, e in zip(a.starts[a.is_word], a.ends[a.is_word])] == ["Call", "the", "end", "__init__"]


def test_longest_run_finds_back_to_back_copies_anywhere(monkeypatch):
    import random

    seq = tokens.token_arrays("Intro words here. " + "I think " * 12 + "the answer is 42. The end.").hashes
    run = repetition.longest_run(seq)
    assert (run.period, run.copies, run.start) == (2, 12, 4)
    assert repetition.longest_run(tokens.token_arrays("all different words in this short sentence").hashes) is None
    # the one-pass 2-D version (typical responses) equals the per-period loop (long ones)
    rng = random.Random(0)
    for _ in range(200):
        seq = _random_run_sequence(rng, max_n=300, symbols=5, loop_chance=0.4, max_unit=8, max_copies=30, max_tail=9)
        for min_copies in (2, 3, 8):
            two_d = repetition.longest_run(seq, min_copies=min_copies)
            monkeypatch.setattr(repetition, "_RUN_2D_MAX_TOKENS", -1)
            assert repetition.longest_run(seq, min_copies=min_copies) == two_d
            monkeypatch.undo()


def _random_run_sequence(rng, *, max_n, symbols, loop_chance, max_unit, max_copies, max_tail):
    """Random ids from a few symbols (chance repeats everywhere), often with a loop spliced in."""
    n = rng.randint(1, max_n)
    seq = np.array([rng.randint(0, rng.randint(1, symbols)) for _ in range(n)], dtype=np.uint64)
    if rng.random() < loop_chance:
        unit = seq[:rng.randint(1, max_unit)]
        seq = np.concatenate((seq[:rng.randint(0, n)], np.tile(unit, rng.randint(2, max_copies)),
                              seq[:rng.randint(0, max_tail)]))
    return seq


def _longest_run_brute(seq, min_copies, words):
    """For each period: the row of matches, the longest run in it, and the word filter."""
    best = None
    n = len(seq)
    for p in range(1, min(32, n // min_copies) + 1):
        row = [seq[i] == seq[i + p] if i + p < n else False for i in range(n)]
        if words is not None and sum(r and w for r, w in zip(row, words)) < (min_copies - 1) * p // 2:
            continue
        i = 0
        while i < n:
            if not row[i]:
                i += 1
                continue
            j = i
            while j < n and row[j]:
                j += 1
            if j - i >= (min_copies - 1) * p and (best is None or j - i + p > best[2]):
                best = (p, i, j - i + p)
            i = j
    return best


def test_longest_run_sampled_first_look_finds_what_every_comparison_finds(monkeypatch):
    # the first look at every (min_copies - 1)-th position only, for long inputs, must keep
    # every period that has a long enough run: against a brute force, sampled or not
    import random

    rng = random.Random(1)
    for trial in range(150):
        seq = _random_run_sequence(rng, max_n=700, symbols=6, loop_chance=0.7, max_unit=14, max_copies=40, max_tail=20)
        words = np.array([rng.random() < 0.6 for _ in range(seq.size)])
        for min_copies in (2, 3, 8):
            for w in (None, words):
                want = _longest_run_brute(seq.tolist(), min_copies, None if w is None else w.tolist())
                for sample_above in (0, 10 ** 9):
                    monkeypatch.setattr(repetition, "_RUN_SAMPLE_ABOVE", sample_above)
                    run = repetition.longest_run(seq, min_copies=min_copies, words=w)
                    got = None if run is None else (run.period, run.start, run.covered)
                    assert got == want, (trial, min_copies, w is None, sample_above)


def test_char_tail_loop_sees_inside_tokens_and_whitespace():
    run = repetition.char_tail_loop("3.14159" + "0" * 300)
    assert (run.period, run.covered) == (1, 300)
    assert repetition.char_tail_loop("abc" + "\n" * 100).covered == 100
    assert repetition.char_tail_loop("xy" + "ab" * 50).period == 2
    assert repetition.char_tail_loop("An ordinary sentence that ends the way sentences do.") is None


def test_cjk_characters_are_tokens_of_their_own():
    assert tokens.tokenize("复利的意思abc是ドキドキ。한국어 word") == [
        "复", "利", "的", "意", "思", "abc", "是", "ド", "キ", "ド", "キ", "。", "한국어", "word"]
    tk = tokens.token_arrays("所以所以 very")
    assert tk.is_word.tolist() == [True, True, True, True, True]


def test_role_headings_are_turns_only_when_an_assistant_heading_follows():
    msgs = [{"role": "user", "content": "How do I stash changes in git?"}]
    turn = "Use git stash.\n\n### User\nThanks! And how do I undo a commit?\n\n### Assistant\nUse git reset."
    assert len(turns.confabulated_turns(turn, msgs, 2)["role_lines"]) == 1
    docs = "## Models\n\n### User\nThe User model stores the account and its role.\n\n### Order\nAn order."
    assert turns.confabulated_turns(docs, msgs, 2)["role_lines"] == []
