"""The verdict: what must be flagged, what must not, explanations, robustness and speed."""

import json
import math
import time

import pytest

from triage.degeneration import analyze, Thresholds


def _nested_html(depth=14, rows=30):
    out = ["<!DOCTYPE html>", "<html>", "<head><meta charset='utf-8'><title>Report</title></head>", "<body>"]
    for d in range(depth):
        out.append("  " * d + f'<div class="level-{d}">')
    for i in range(rows):
        out.append("  " * depth + f'<p id="row-{i}">Row {i}: value {i * 7 % 13}</p>')
    for d in reversed(range(depth)):
        out.append("  " * d + "</div>")
    out += ["</body>", "</html>"]
    return "\n".join(out)


def _markdown_table():
    rows = ["| # | Planet | Moons | Mass (Earths) |", "|---|---|---|---|"]
    for i, (p, m, mass) in enumerate([("Mercury", 0, 0.055), ("Venus", 0, 0.815), ("Earth", 1, 1.0),
                                      ("Mars", 2, 0.107), ("Jupiter", 95, 317.8), ("Saturn", 146, 95.2),
                                      ("Uranus", 28, 14.5), ("Neptune", 16, 17.1)]):
        rows.append(f"| {i + 1} | {p} | {m} | {mass} |")
    return "Here is the table:\n\n" + "\n".join(rows)


HEALTHY_REPETITIVE = {
    "nested_html": _nested_html(),
    "nested_html_fragment_ending_in_closers": "\n".join(
        ["<section>"] + ["<div>"] * 10 + ["<span>deep</span>"] + ["</div>"] * 10),
    "markdown_table": _markdown_table(),
    "numbered_list": "Steps:\n" + "\n".join(
        f"{i}. {verb} the {noun} and note the result in the log." for i, (verb, noun) in enumerate(
            ((v, n) for v in ("Check", "Clean", "Test", "Label", "Weigh", "Photograph") for n in
             ("pump", "valve", "filter", "hose", "gauge", "tank", "lid", "seal", "motor", "fan")), 1)),
    "unrolled_code": "\n".join(f"out[{i}] = scale(values[{i}], weights[{i}]) + bias[{i}]" for i in range(16)),
    "similar_code": "\n".join(f"    self.field_{i} = kwargs.get('field_{i}', None)" for i in range(80)),
    "json_records": json.dumps([{"id": i, "name": f"user{i}", "email": f"user{i}@example.com",
                                 "active": i % 3 == 0, "role": "member"} for i in range(200)], indent=2),
    "csv": "id,name,score,passed\n" + "\n".join(f"{i},student_{i},{(i * 37) % 100},{(i * 37) % 100 >= 50}"
                                              for i in range(300)),
    # pseudo-random 0/1 rows (a real data file is not periodic; (i * j) % 2 would be)
    "numeric_csv": "\n".join(",".join(str((i * 2654435761 + j * 40503) >> 7 & 1) for j in range(8))
                             for i in range(400)),
    "poem_with_refrain": "\n\n".join(
        f"{line}\nAnd still the river runs, the river runs to sea." for line in
        ["The morning breaks on silver stone,", "The farmer walks the field alone,",
         "The children sing an older tune,", "The evening pulls the rising moon,"]),
    "horizontal_rules": "Title\n" + "=" * 60 + "\n\nSome text.\n\n" + "-" * 80,
    "closing_braces": "function f() {\n" + "".join("  " * i + "if (x) {\n" for i in range(1, 9))
                      + "".join("  " * i + "}\n" for i in reversed(range(1, 9))) + "}\n",
}


@pytest.mark.parametrize("name", sorted(HEALTHY_REPETITIVE))
def test_legitimately_repetitive_is_not_flagged(name):
    a = analyze(HEALTHY_REPETITIVE[name], finish_reason="stop")
    assert not a.degenerate, (name, [r.message for r in a.reasons])


def test_div_flood_is_flagged_with_evidence_and_highlight():
    head = "Here is your page:\n<div class=\"card\"><p>Hello</p></div>\n<p>Footer</p>\n"
    text = head + "</div>" * 300
    a = analyze(text, finish_reason="length")
    assert a.degenerate and a.severity > 0.9
    msg = a.reasons[0].message
    assert msg.startswith("tail loop: period 4 tokens ×300, covering the last ")
    assert "no matching opening tags" in msg and "max_tokens" in msg
    loop = [h for h in a.highlights if h.kind == "loop"][0]
    assert loop.start == len(head) and loop.end == len(text)
    assert "markup_flood" in a.reason_codes and "runaway" in a.reason_codes


def test_sentence_loop_message_matches_issue_format():
    intro = "Sure. " + " ".join(f"word{i}" for i in range(40)) + ". "
    sentence = "I am a creative AI that can create art . "
    text = intro + sentence * 87
    a = analyze(text, finish_reason="length")
    assert a.degenerate
    r = [r for r in a.reasons if r.code == "tail_loop"][0]
    assert "period 10 tokens ×87" in r.message
    # coverage is stated as a share of the response's tokens
    toks = a.metrics["tokens"]
    assert f"covering the last {100 * 870 / toks:.0f}%" in r.message


def test_runaway_alone_is_not_degenerate_but_explained():
    import random
    rng = random.Random(1)
    words = "the a kernel sampler loop token cache page query key value budget engineer reads writes".split()
    text = " ".join(" ".join(rng.choice(words) for _ in range(12)) + "." for _ in range(40))
    a = analyze(text, finish_reason="length")
    assert not a.degenerate
    assert a.reason_codes == ["runaway"] and 0 < a.severity < 0.5


def test_near_loop_with_counter_is_flagged():
    text = "Tips:\n" + "\n".join(f"{i}. Learn a New Skill: If you have to learn a new skill, it helps you grow."
                                 for i in range(1, 12))
    a = analyze(text, finish_reason="length")
    assert a.degenerate and "fuzzy_loop" in a.reason_codes


@pytest.mark.parametrize("tail", [
    "\n<|im_start|>user\nWrite a README for Butter<|im_end|>\n<|im_start|>assistant\n# Butter",
    "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAnd in German?",
    "\n[INST] Now do the same in Rust [/INST] fn main() {}",
    "\n\nUser: Thanks, can you also add tests?\n\nAssistant: Sure, here they are.",
    "\n\n### Instruction:\nTranslate this into French please.\n\n### Response:\nBonjour.",
])
def test_invented_user_turn_is_flagged(tail):
    answer = "The capital of France is Paris."
    msgs = [{"role": "user", "content": "What is the capital of France?"}]
    a = analyze(answer + tail, finish_reason="stop", messages=msgs)
    assert a.degenerate and "confabulated_turn" in a.reason_codes
    h = [h for h in a.highlights if h.kind == "confabulated_turn"][0]
    assert h.start >= len(answer)


def test_leaked_end_marker_alone_is_weak():
    a = analyze("Paris.<|im_end|>", finish_reason="stop")
    assert not a.degenerate and a.reason_codes == ["leaked_end_marker"]


def test_explaining_a_chat_template_is_not_a_turn():
    text = ("ChatML marks turns with special tokens:\n\n```\n<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\nHi!<|im_end|>\n```\n\nThe `<|im_start|>` token opens a turn.")
    a = analyze(text, finish_reason="stop", messages=[{"role": "user", "content": "How does ChatML work?"}])
    assert not a.degenerate and a.reasons == []


def test_logprobs_mark_a_self_reinforcing_loop():
    text = "Intro sentence with several words in it. " + "the loop goes on and on . " * 30
    n = 10 + 7 * 30
    a = analyze(text, finish_reason="length", token_logprobs=[-2.0] * 10 + [-0.01] * (n - 10))
    lp = a.metrics["logprobs"]
    assert lp["n"] == n and lp["loop_certain_share"] > 0.95 and lp["loop_mapping"] == "proportional"
    assert "self-reinforcing" in a.reasons[0].message
    ids = [1, 2, 3] + [7, 8, 9] * 40
    a2 = analyze(text, token_ids=ids, token_logprobs=[-3.0] * 3 + [-0.001] * 120)
    assert a2.metrics["logprobs"]["loop_mapping"] == "model_tokens"
    assert a2.metrics["model_tokens"]["tail_loop"]["period"] == 3
    assert a2.metrics["logprobs"]["loop_certain_share"] == 1.0
    assert a2.metrics["logprobs"]["mean"] == pytest.approx((-9.0 - 0.12) / 123, abs=1e-4)


def test_verdict_does_not_depend_on_token_ids():
    text = "Hello there. " + "Again and again we go. " * 20
    a = analyze(text, finish_reason="length")
    b = analyze(text, finish_reason="length", token_ids=list(range(150)))
    assert a.degenerate == b.degenerate and a.reason_codes == b.reason_codes


def test_thresholds_are_configurable():
    text = "Start here. " + "one two three four five . " * 4
    assert not analyze(text).degenerate
    lax = Thresholds(loop_min_tokens=10, loop_min_copies=2.0)
    assert analyze(text, thresholds=lax).degenerate


@pytest.mark.parametrize("text", [
    "", "   \n\t ", "\x00\x01\x02\xff", "\ud800\udfff lone surrogates \udc80", "a\u0301\u0301\u0301" * 50,
    "\u202e\u2066 rtl \u2069", "\U0001F600" * 1000, "\ufeff BOM", "日本語のテキスト。" * 200,
    bytes(range(256)).decode("latin-1"), "\r\n" * 1000, "<" * 5000, "</" * 5000, "[INST]" * 300,
    "User:" * 300, "```" * 301, "<|im_start|>" * 200, "0" * 100000,
])
def test_odd_inputs_never_crash_and_serialise(text):
    a = analyze(text, finish_reason="length", messages=[{"role": "user"}, "x", 3, {"content": [{"text": 1}]}],
                token_ids=[0, -1, 2 ** 62], token_logprobs=[None, "a", float("nan"), 1e308, -1e308])
    s = json.dumps(a.to_dict(), allow_nan=False)
    assert json.loads(s)["severity"] == pytest.approx(a.severity, abs=1e-4)
    assert 0.0 <= a.severity <= 1.0
    for h in a.highlights:
        assert 0 <= h.start <= h.end <= len(text)


def test_bytes_are_decoded_and_other_types_rejected():
    assert analyze(b"\xff\xfe binary junk \x00").metrics["chars"] > 0
    with pytest.raises(TypeError):
        analyze(12)


def test_empty_response_is_reported():
    a = analyze("")
    assert not a.degenerate and a.reason_codes == ["empty"] and a.metrics["tokens"] == 0


def _best(f, n=5):
    """Best-of-n CPU time of this process (wall time on a shared, loaded machine is mostly the
    time spent waiting for a core)."""
    best = math.inf
    for _ in range(n):
        t = time.process_time()
        f()
        best = min(best, time.process_time() - t)
    return best


def test_speed_100kb_and_1mb_div_flood():
    from triage.degeneration.cli import probes
    (_, text100k, fr), (_, flood, fr2) = probes()
    analyze(text100k)
    t100 = _best(lambda: analyze(text100k, finish_reason=fr))
    # issue target: 20 ms; the margin absorbs a loaded shared CI machine
    assert t100 < 0.06, f"100 KB took {t100 * 1e3:.1f} ms"
    tflood = _best(lambda: analyze(flood, finish_reason=fr2), 2)
    assert tflood < 1.0, f"1 MB </div> flood took {tflood:.2f} s"


@pytest.mark.parametrize("make", [
    lambda n: "</div>" * n,                                  # one long loop
    lambda n: ("ab " * 3 + "c ") * n,                        # many candidate periods
    lambda n: "x " * n + "y",                                # a loop broken by the last token
    lambda n: " ".join(str(i % 97) for i in range(n)),       # numbers: fuzzy loop everywhere
    lambda n: "\n".join(["same line here ok"] * n),          # one long line run
    lambda n: "### User\nhello there\n" * (n // 4),          # role headings, no assistant heading
])
def test_time_is_linear(make):
    # 8× the input: linear is ~8× (up to ~16× with cache effects and n log n sorts), quadratic 64×
    small, big = make(25_000), make(200_000)
    analyze(small)
    ts = _best(lambda: analyze(small), 3)
    tb = _best(lambda: analyze(big), 3)
    assert tb / ts < 32, f"8× input took {tb / ts:.1f}× the time"


# ---- loops word tokens do not show at the end, and requested repetition ------------------------

def test_a_loop_the_model_left_is_flagged_where_it_is():
    text = "Water boils at 100 degrees Celsius at sea level. The reason is " + "is " * 40 + "pressure."
    a = analyze(text, finish_reason="stop")
    assert a.degenerate and a.reasons[0].code == "repeat_run"
    start, end = a.reasons[0].span
    assert text[start:end].split() == ["is"] * 41  # ("The reason is" + 40 more)
    assert a.metrics["repeat_run"]["period"] == 1 and a.metrics["repeat_run"]["copies"] == 41
    # a few repeats in prose are style, not a loop
    assert not analyze("No, no, no, no! That is very, very wrong.", finish_reason="stop").degenerate


@pytest.mark.parametrize("text,finish", [
    ("Pi to 20 decimal places is 3.14159265358979323846" + "0" * 1500, "length"),
    ("答案是：" + "的" * 800, "length"),
    ("Here is your haiku:\n\nAn old silent pond\nA frog jumps into the pond\nSplash! Silence again" + "\n" * 2000,
     "length"),
    ("Sure!" + "!" * 400, "stop"),
], ids=["zeros-inside-a-number", "cjk-character", "newline-flood", "exclamation-flood"])
def test_character_loops_inside_one_token_or_whitespace_are_flagged(text, finish):
    a = analyze(text, finish_reason=finish)
    assert a.degenerate, [r.message for r in a.reasons]
    assert any(r.code in ("char_loop", "tail_loop") for r in a.reasons)
    assert a.metrics["char_loop"]["copies"] >= 20


def test_short_runaway_that_is_mostly_a_loop_is_flagged():
    text = 'Synonyms for "big":\n' + "- large\n- huge\n- enormous\n" * 6 + "- lar"
    a = analyze(text, finish_reason="length")
    assert a.degenerate and a.reasons[0].code == "tail_loop"
    # stopped, the same three items said six times are still the same few items in rotation
    stopped = analyze(text, finish_reason="stop")
    assert stopped.degenerate and "items in rotation" in stopped.reasons[0].message


def test_requested_repetition_is_the_answer_until_it_runs_past_the_count():
    ask = [{"role": "user", "content": "Write the word 'hello' 50 times."}]
    a = analyze(" ".join(["hello"] * 50), finish_reason="stop", messages=ask)
    assert not a.degenerate and a.metrics["requested_repetition"]["count"] == 50
    assert a.metrics["requested_repetition"]["exempted"]
    lines = [{"role": "user", "content": "Repeat the sentence 'I will not talk in class.' twenty times."}]
    assert not analyze("\n".join(["I will not talk in class."] * 20), messages=lines).degenerate
    # asked for 5, looped to max_tokens: still a loop
    five = [{"role": "user", "content": "Say 'I love pizza' 5 times."}]
    assert analyze(" ".join(["I love pizza."] * 300), finish_reason="length", messages=five).degenerate
    # a count in the request does not excuse a loop of something the user did not ask for
    other = [{"role": "user", "content": "List 50 countries."}]
    assert analyze("Countries: " + "France, " * 60, finish_reason="length", messages=other).degenerate
    assert analyze(" ".join(["hello"] * 50), finish_reason="stop").degenerate  # nobody asked


def test_requested_chat_format_examples_are_not_invented_turns():
    ask = [{"role": "user", "content": "Write 2 example User/Assistant exchanges about tea, each starting with "
                                        "'User:' and 'Assistant:'."}]
    text = ("Example 1\nUser: How hot should the water be for green tea?\nAssistant: About 80 °C.\n\n"
            "Example 2\nUser: How long should black tea steep?\nAssistant: Three to five minutes.")
    assert not analyze(text, messages=ask).degenerate
    plain = [{"role": "user", "content": "How hot should the water be for green tea?"}]
    assert analyze("About 80 °C.\n\nUser: And for black tea, how long should it steep?\nAssistant: Five minutes.",
                   messages=plain).degenerate


def test_a_cjk_loop_inside_a_clause_is_flagged_and_cjk_prose_is_not():
    head = "复利的意思是利滚利：每一期产生的利息会加入本金，下一期一起计算利息。而单利只有一万五千元。"
    looped = head + "所以" * 50 + "时间越长，复利和单利的差距就越大。"
    a = analyze(looped, finish_reason="stop")
    assert a.degenerate and a.reasons[0].code == "repeat_run"
    assert not analyze(head + "所以时间越长，差距就越大。哈哈哈，慢慢来，天天向上。", finish_reason="stop").degenerate


def test_a_count_in_the_request_that_is_not_a_repetition_request_excuses_nothing():
    """Reviewer's cases: multiplication and speed-ups are not requests to repeat."""
    math = [{"role": "user", "content": "What is 500 times 3?"}]
    assert analyze("Sure. " + "is " * 200, finish_reason="stop", messages=math).degenerate
    speed = [{"role": "user", "content": "Why is it 50x faster?"}]
    assert analyze("Sure. " + "it is faster " * 40, finish_reason="length", messages=speed).degenerate
    # the object of the request, not any word of it: "hello" was asked for, "world" was not
    ask = [{"role": "user", "content": "Write the word 'hello' 50 times, then say hello world once."}]
    assert analyze(" ".join(["world"] * 50), finish_reason="stop", messages=ask).degenerate


def test_every_finding_code_is_listed_in_reason_codes():
    """The queue's reason filter offers REASON_CODES: a new finding must be added there."""
    import re
    from pathlib import Path

    from triage.degeneration import REASON_CODES
    source = "\n".join(p.read_text(encoding="utf-8") for p in Path(__file__).resolve().parents[1].rglob("*.py")
                       if "tests" not in p.parts and "testdata" not in p.parts)
    emitted = set(re.findall(r'(?:Reason|\.fire)\(\s*"([a-z_]+)"', source))
    assert emitted and emitted <= set(REASON_CODES), emitted - set(REASON_CODES)
