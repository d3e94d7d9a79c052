"""The four shapes of issue 19 (bare role lines, counting loops, near-verbatim loops, recursive
nesting) and the logprob evidence: each positive next to the healthy text it must not be
confused with.  Examples are written here from the shapes' definitions, not taken from the
held-out set (test_heldout.py measures that one)."""

import json
import random

import pytest

from triage.degeneration import analyze


def _codes(a):
    return [r.code for r in a.reasons]


def _ask(q):
    return [{"role": "user", "content": q}]


# ---- invented turns with the chat markers stripped -------------------------------------------

@pytest.mark.parametrize("text, how", [
    ("The capital of France is Paris.\nuser\nWhat is the capital of Spain?\nassistant\nMadrid.", "dialogue"),
    ("Boil the egg for nine minutes.\nuser\n\nCan you also tell me how to poach one?", "request"),
    # Llama 3: no newline between the end of a turn and the next header
    ("Glad I could help!user\n\nNow write me a poem about the sea.", "request"),
    ("Here is the answer: 42.\nsystem\nYou are a helpful assistant named Orbit, made by Acme.\nuser\nhi", "system"),
    ("That is all you need to know about tides.\nsystem\n\nuser\n", "empty"),
])
def test_bare_role_lines_open_invented_turns(text, how):
    a = analyze(text, finish_reason="stop", messages=_ask("Answer my question."))
    assert a.degenerate, [r.message for r in a.reasons]
    r = a.reasons[0]
    assert r.code == "confabulated_turn" and "markers were stripped" in r.message
    start = r.span[0]
    assert text[start:].split()[0].rstrip("!.") in ("user", "system", "assistant") or "user" in text[start:start + 8]
    assert any(h.kind == "confabulated_turn" for h in a.highlights)
    assert a.metrics["confabulation"]["bare_role_lines"] >= 1


def test_gemma_role_names_come_from_the_template_family():
    text = "Rome was founded in 753 BC, says the legend.\nmodel\nRome was also the capital of an empire."
    assert not analyze(text, messages=_ask("When was Rome founded?")).degenerate  # 'model' is no ChatML role
    a = analyze(text, messages=_ask("When was Rome founded?"), chat_template="gemma")
    assert a.degenerate and "second model turn" in a.reasons[0].message
    # the template's source works as well as its family name
    assert analyze(text, messages=_ask("When?"), chat_template="{{ '<start_of_turn>' + role }}").degenerate


@pytest.mark.parametrize("text, request_", [
    # a field named `user` followed by its description (a heading, not a turn)
    ("Connection parameters:\n\nhost\nThe server to connect to.\nuser\nThe role name to connect as.\n", "Explain the libpq parameters."),
    # inside a code block
    ("The template renders like this:\n\n```\n<|im_start|>user\nuser\nWhat is 2+2?\nassistant\n4\n```\n", "Show ChatML."),
    # the response opens with a role label (some servers prefix it)
    ("assistant\nThe capital of France is Paris.", "What is the capital of France?"),
    # a dialogue the user asked for, naming the roles as its speakers
    ("Here is an example:\n\nuser\nHow do I reset my password?\nassistant\nClick 'Forgot password'.",
     "Write an example chat between a user and an assistant about passwords."),
    # quoting the real conversation back
    ("You asked:\nuser\nWhat is the capital of France?\nThe answer is Paris.", "What is the capital of France?"),
    ("Run it as a superuser\nand check the logs.", "How do I run it?"),
])
def test_bare_role_lines_that_are_not_turns(text, request_):
    a = analyze(text, finish_reason="stop", messages=_ask(request_))
    assert "confabulated_turn" not in _codes(a), [r.message for r in a.reasons]


# ---- counting loops ---------------------------------------------------------------------------

def test_a_table_of_one_counter_at_max_tokens_is_a_counting_loop():
    rows = "".join(f"| {i} | {i} | {i} |\n" for i in range(9, 60))
    text = "| Planet | Moons | AU |\n|---|---|---|\n| Mercury | 0 | 0.39 |\n| Venus | 0 | 0.72 |\n" + rows
    a = analyze(text, finish_reason="length", messages=_ask("Make a table of the planets."))
    assert a.degenerate and a.reasons[0].code == "counting_loop", [r.message for r in a.reasons]
    cl = a.metrics["counting_loop"]
    assert cl["counter_columns"] >= 3 and cl["data_columns"] == 0


def test_the_same_sentence_numbered_is_a_counting_loop_even_when_it_stops():
    text = "Here is how to bake bread:\n" + "\n".join(f"Step {i}: add the flour to the bowl." for i in range(1, 15))
    a = analyze(text, finish_reason="stop", messages=_ask("Give me step-by-step instructions to bake bread."))
    assert "counting_loop" in _codes(a)


def test_records_far_past_the_requested_count_are_a_counting_loop():
    recs = ",\n".join(f'  {{"id": {i}, "name": "Lamp", "price": 19.99}}' for i in range(1, 45))
    a = analyze("[\n" + recs + "\n]", finish_reason="stop",
                messages=_ask("Write a JSON array of 10 products with id, name and price."))
    assert "counting_loop" in _codes(a)
    assert a.metrics["counting_loop"]["requested_count"] == 10


def test_a_counter_inside_identifiers_counts():
    tests = "\n\n".join(f"def test_case_{i}():\n    assert add(2, 3) == 5" for i in range(5, 30))
    a = analyze("```python\n" + tests, finish_reason="length", messages=_ask("Write pytest tests for add()."))
    assert "counting_loop" in _codes(a), [r.message for r in a.reasons]


def test_a_count_that_skips_numbers_is_still_a_counter():
    nums = [i for i in range(1, 120) if i % 10 != 5]  # (15, 25, 35 … skipped)
    text = "The numbers are " + ", ".join(map(str, nums))
    a = analyze(text, finish_reason="length", messages=_ask("List the numbers from 1 to 20."))
    assert "counting_loop" in _codes(a)


@pytest.mark.parametrize("text, finish, request_", [
    ("| n | n² |\n|---|---|\n" + "".join(f"| {i} | {i * i} |\n" for i in range(1, 21)), "stop",
     "List the numbers from 1 to 20 with their squares."),
    # a computed table cut by max_tokens: two steps (1 and 7), not one counter
    ("".join(f"| 7 | × | {i} | = | {7 * i} |\n" for i in range(1, 13)), "length", "Write the multiplication table of 7."),
    ("Here you go:\n" + "\n".join(f"{i}. I will not talk in class." for i in range(1, 21)), "stop",
     "Write 'I will not talk in class' 20 times, numbered."),
    ("```python\n" + "\n".join(f"out[{i}] = scale(values[{i}])" for i in range(16)) + "\n```", "stop", "Unroll the loop."),
    ("| Month | Days |\n|---|---|\n" + "".join(f"| {m} | {d} |\n" for m, d in zip(
        "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])),
     "stop", "Make a table of the months and their days."),
])
def test_tables_and_lists_that_count_legitimately(text, finish, request_):
    a = analyze(text, finish_reason=finish, messages=_ask(request_))
    assert not a.degenerate, [r.message for r in a.reasons]


# ---- near-verbatim loops ----------------------------------------------------------------------

def _rotation(n, seed=3):
    rng = random.Random(seed)
    variants = ["The river is calm tonight.", "The river is still tonight.", "The river is quiet tonight."]
    return " ".join(rng.choice(variants) for _ in range(n))


def test_a_sentence_with_one_word_alternating_is_a_near_verbatim_loop():
    text = "Night falls over the valley and the lanterns come on one by one. " + _rotation(40)
    a = analyze(text, finish_reason="length", messages=_ask("Write a story about a river at night."))
    assert a.degenerate
    assert a.reasons[0].code in ("near_verbatim_loop", "tail_loop"), [r.message for r in a.reasons]
    nv = a.metrics["near_verbatim"]
    assert nv["echo_segments"] >= 30 and nv["novel_share"] <= 0.1


def test_three_long_near_copies_at_max_tokens():
    base = ("It is a good idea to keep a spare wheel and a working jack in the boot of every car that "
            "you drive on long trips")
    text = ("Changing a tyre takes ten minutes. Loosen the nuts first, then lift the car. "
            f"{base}. {base.replace('good', 'great')}. In the end, {base[0].lower() + base[1:]}")
    a = analyze(text, finish_reason="length", messages=_ask("How do I change a flat tire?"))
    assert "near_verbatim_loop" in _codes(a), [r.message for r in a.reasons]


def _old_macdonald():
    return "\n\n".join(
        f"Old MacDonald had a farm, E-I-E-I-O.\nAnd on his farm he had a {a}, E-I-E-I-O.\n"
        f"With a {s} {s} here and a {s} {s} there.\nHere a {s}, there a {s}, everywhere a {s} {s}.\n"
        f"Old MacDonald had a farm, E-I-E-I-O."
        for a, s in [("cow", "moo"), ("duck", "quack"), ("pig", "oink"), ("sheep", "baa"), ("horse", "neigh")])


@pytest.mark.parametrize("text, request_", [
    (_old_macdonald(), "Sing Old MacDonald with five animals."),
    ("Checklist:\n" + "\n".join(f"{i}. {v} the {n} and note the result in the log." for i, (v, n) in enumerate(
        ((v, n) for v in ("Check", "Clean", "Test", "Label") for n in ("pump", "valve", "filter", "hose", "gauge")), 1)),
     "Give me a maintenance checklist."),
    ("- Eat more vegetables.\n- Eat more fruit.\n- Eat more fish.\n- Eat more beans.\n- Eat more nuts.\n"
     "- Eat more grains.\n- Eat more seeds.\n- Eat more greens.\n- Eat more berries.\n- Eat more lentils.",
     "How can I eat better?"),
])
def test_refrains_and_parallel_lists_are_not_near_verbatim_loops(text, request_):
    a = analyze(text, finish_reason="stop", messages=_ask(request_))
    assert not a.degenerate, [r.message for r in a.reasons]


def test_a_requested_number_of_rounds_is_not_a_loop():
    rnd = ("Breathe in slowly through your nose and count to four.\n"
           "Hold your breath gently and count to seven.\nBreathe out through your mouth and count to eight.\n")
    text = "Sit comfortably.\n\n" + "".join(f"Round {i}.\n{rnd}\n" for i in range(1, 5)) + "Now relax."
    a = analyze(text, finish_reason="stop", messages=_ask("Write a 4-7-8 breathing script for 4 rounds."))
    assert not a.degenerate, [r.message for r in a.reasons]


# ---- recursive nesting ------------------------------------------------------------------------

def test_lists_nested_deeper_and_deeper_are_a_loop_in_depth():
    text = "<ul>\n" + "".join("  " * i + f"<li>Group {i}\n" + "  " * i + "<ul>\n" for i in range(25))
    a = analyze(text, finish_reason="length", messages=_ask("Write a nested HTML list of animals."))
    assert "nesting" in _codes(a), [r.message for r in a.reasons]
    assert a.metrics["nesting"]["tag"]["depth"] >= 25


def test_json_children_deeper_and_deeper():
    text = '{"name": "root", ' + "".join(f'"children": [{{"name": "folder {i}", ' for i in range(20))
    a = analyze(text, finish_reason="length", messages=_ask("Describe a folder tree as JSON."))
    assert "nesting" in _codes(a)


def test_tables_inside_tables_need_only_a_few_levels():
    text = "".join(f"<table><tr><td>Month {i}</td><td>\n" for i in range(8)) + "".join(
        "</td></tr></table>\n" for _ in range(8))
    a = analyze(text, finish_reason="stop", messages=_ask("Write an HTML table of the months."))
    assert "nesting" in _codes(a)


@pytest.mark.parametrize("text", [
    # a requested depth, closed again
    "\n".join("  " * d + f'<div class="level-{d}">' for d in range(14)) + "\n" + "  " * 14 + "deep\n"
    + "\n".join("  " * d + "</div>" for d in reversed(range(14))),
    # placeholders of CLI help: never closed, not elements
    "\n".join(f"  {c} <target>   perform {c} on <target>" for c in ("click", "dblclick", "hover", "focus", "check",
                                                                       "uncheck", "fill", "press", "select", "drag",
                                                                       "drop", "tap")),
    json.dumps({"a": {"b": {"c": {"d": {"e": [1, 2, {"f": "g"}]}}}}}, indent=2),
])
def test_healthy_nesting_is_not_a_loop(text):
    a = analyze(text, finish_reason="stop", messages=_ask("Write a page with 14 nested divs."))
    assert "nesting" not in _codes(a), [r.message for r in a.reasons]


# ---- logprob evidence -------------------------------------------------------------------------

def test_near_certain_loop_tokens_are_reported_as_self_reinforcing():
    text = "Night falls over the valley. " + _rotation(40)
    base = analyze(text, finish_reason="length")
    n = 400
    certain = analyze(text, finish_reason="length", token_logprobs=[-2.0] * 20 + [-0.01] * (n - 20))
    unsure = analyze(text, finish_reason="length", token_logprobs=[-1.5] * n)
    assert "no token logprobs" in base.reasons[0].message
    assert "self-reinforcing" in certain.reasons[0].message and certain.severity > base.severity
    assert "not self-reinforcing" in unsure.reasons[0].message
    assert unsure.degenerate == base.degenerate == certain.degenerate
    assert certain.metrics["logprobs"]["loop_certain_share"] > 0.9
    assert base.metrics["logprobs"] == {"n": 0, "absent": True}


# ---- round 3: the shapes heldout2 missed (written here from their definitions) ----------------

def test_a_role_line_inside_a_fence_left_open_still_opens_a_turn():
    # fences whose parity went wrong: the third ``` meant to close a block, so `system` and `user`
    # stand in a block that never closes
    text = ("```\n<p>One</p>\n```\n<p>Two</p>\n```\nsystem\nYou are an AI assistant that rewrites text politely.\n"
            "user\nPlease rewrite my email to the landlord.")
    a = analyze(text, finish_reason="length", messages=_ask("Write an HTML snippet."))
    assert a.degenerate and "confabulated_turn" in _codes(a)
    # a closed block still protects what it quotes
    quoted = "```\nsystem\nYou are an AI assistant that rewrites text politely.\nuser\nRewrite my email.\n```\nThat is ChatML."
    assert "confabulated_turn" not in _codes(analyze(quoted, messages=_ask("Show a ChatML example.")))


def test_marked_turn_after_an_unclosed_fence():
    text = '```python\n{"title": "Dune"}<|im_end|>\n<|im_start|>user\nWrite me a letter to my aunt.'
    a = analyze(text, finish_reason="length", messages=_ask("Give me a JSON book."))
    assert a.degenerate and a.reasons[0].code == "confabulated_turn"


@pytest.mark.parametrize("request_", [
    "Your response should contain at least 3 sentences. Describe a sunset.",
    "You're a retired detective. Tell me about your last case.",
    "Dear Sam, thanks for the invitation to the party on Friday.",
])
def test_stripped_turn_headers_one_after_the_other(request_):
    text = f"The tea is ready once it has steeped for four minutes.\nsystem\n\nuser\n{request_}"
    a = analyze(text, finish_reason="length", messages=_ask("How do I make tea?"))
    assert a.degenerate and a.reasons[0].code == "confabulated_turn", [r.message for r in a.reasons]
    assert "turn headers" in a.reasons[0].message


def test_a_field_list_of_role_names_is_not_a_turn():
    text = ("The API accepts three roles:\n\nsystem\nSets the behaviour of the model.\n\nuser\n"
            "The person asking.\n\nassistant\nThe model's earlier replies.\n")
    assert not analyze(text, messages=_ask("What roles does the chat API accept?")).degenerate


def test_a_flood_of_emoji_until_max_tokens():
    text = "Happy birthday! " + "🎉" * 40 + "💬" + "🎉" * 30 + "\ufffd"
    a = analyze(text, finish_reason="length", messages=_ask("Write a birthday message."))
    assert a.degenerate and "symbol_flood" in _codes(a)
    # a few varied emoji at the end of a healthy answer are not a flood
    ok = "Have a wonderful day, full of cake and friends! 🎂🎈🎁🥳🎉"
    assert not analyze(ok, finish_reason="stop", messages=_ask("Write a birthday message.")).degenerate


def test_a_list_far_past_the_requested_count_until_max_tokens():
    items = "\n".join(f"{i}. {w}" for i, w in enumerate(
        "Apple Banana Cherry Grape Lemon Lime Mango Melon Kiwi Peach Pear Plum Fig Date Guava Papaya Quince "
        "Apricot Olive Orange Berry Nectarine Tangerine Pomelo Lychee".split(), 1))
    a = analyze("Here are 8 fruits:\n" + items + "\n26. Coco", finish_reason="length", messages=_ask("List 8 fruits."))
    assert a.degenerate and "counting_loop" in _codes(a) and "list overrun" in a.reasons[0].message
    # about the count asked for is the answer, cut or not
    few = "\n".join(f"{i}. {w}" for i, w in enumerate("Apple Banana Cherry Grape Lemon Lime Mango Melon Kiwi".split(), 1))
    assert not analyze(few, finish_reason="length", messages=_ask("List 8 fruits.")).degenerate


def test_a_passage_said_twice_at_max_tokens_is_not_a_loop_but_three_times_is():
    para = ("Packing list: sunscreen, a hat, two towels, sandals, a book, water bottles, snacks for the drive, "
            "a first-aid kit and a charger for the phone. ")
    intro = ("A beach holiday goes best when you pack the day before and keep the essentials in one bag. "
             "Check the weather, the tides and the opening hours of the beach cafe before you leave home. ")
    twice = intro + para + "Other essentials:\n" + para
    assert "runaway_repetition" not in _codes(analyze(twice, finish_reason="length", messages=_ask("Packing list?")))
    thrice = intro + para + "Also:\n" + para + "And:\n" + para + "Also:\n" + para
    assert analyze(thrice, finish_reason="length", messages=_ask("Packing list?")).degenerate


def test_short_formula_sentences_said_over_and_over():
    variants = ["Therefore, x = 5.", "So the answer is x = 5.", "Thus, x = 5.", "Therefore, the solution is x = 5."]
    rng = random.Random(3)
    tail = "\n".join(rng.choice(variants) for _ in range(30))
    text = "Solve 2(x + 3) = 16.\n\n1. Divide by 2: x + 3 = 8.\n2. Subtract 3: x = 5.\n\n" + tail
    a = analyze(text, finish_reason="stop", messages=_ask("Solve 2(x + 3) = 16."))
    assert a.degenerate and a.reasons[0].code in ("near_verbatim_loop", "repeat_run", "line_run")
    # a worked solution with a few short sentences is not
    ok = ("Divide by 2. Then x + 3 = 8.\nSubtract 3. Then x = 5.\nCheck: 2(5 + 3) = 16. Correct.\n"
          "Therefore, x = 5.")
    assert not analyze(ok, finish_reason="stop", messages=_ask("Solve 2(x + 3) = 16.")).degenerate


def test_a_rotation_still_running_when_max_tokens_cut_it():
    # the same three sentences, a word or two changing each time (not an exact period)
    rot = ["I am here to help you. I am a highly skilled AI designed to assist you with your needs. I can answer anything. ",
           "I am here to assist you. I am a highly skilled AI designed to help you in your dreams. I can answer everything. ",
           "I am here to help you. I am a highly skilled AI designed to help you with your needs. I can answer anything. "]
    text = ("Here are three films for a rainy day: Amelie, Paddington and Spirited Away, each warm and gentle. "
            "Amelie is a Parisian fairy tale; Paddington is a bear in London; Spirited Away is a bathhouse fantasy. "
            "## About me\n" + "".join(rot) + "I am here to help you. I am a highly")
    a = analyze(text, finish_reason="length", messages=_ask("Recommend three movies for a rainy day."))
    assert a.degenerate and a.reasons[0].code == "near_verbatim_loop", [r.message for r in a.reasons]


# ---- round 4: the shapes heldout3 missed (written here from their definitions) ----------------

def test_the_same_list_item_three_times_with_new_numbers():
    item = "**Baking soda**: used for baking and made of high-quality baking soda."
    text = ("Here are 5 kitchen tools:\n\n1. **Whisk**: beats eggs and cream.\n\n2. **Ladle**: serves soup.\n\n"
            + "".join(f"{i}. {item}\n\n" for i in (3, 4, 5)) + "These are a few of them.")
    a = analyze(text, finish_reason="stop", messages=_ask("List 5 kitchen tools."))
    assert a.degenerate and "same list item 3 times" in a.reasons[0].message
    # nearly the same words (a word or two changed) count too
    near = ("1. The bluefin is a large fish found in the Mediterranean Sea that can grow up to five feet long.\n"
            "2. The bluefin is a large fish found in the Mediterranean Sea that can grow up to five feet in length.\n"
            "3. The bluefin is a large fish found in the Mediterranean Sea which can grow up to five feet long.\n")
    assert analyze(near, finish_reason="stop", messages=_ask("List 20 ocean animals.")).degenerate
    # items that share a template but say different things are a list
    ok = "\n".join(f"{i}. **{w}**: a tool used for {u}." for i, (w, u) in enumerate(
        [("Whisk", "beating eggs"), ("Ladle", "serving soup"), ("Grater", "grating cheese")], 1))
    assert not analyze(ok, finish_reason="stop", messages=_ask("List 3 kitchen tools.")).degenerate


def test_table_rows_far_past_the_requested_count():
    rows = "".join(f"| {c} | USD |\n" for c in ["China", "India", "Brazil", "Mexico", "Japan", "Chile"] * 5)
    text = "| Country | Currency |\n|---|---|\n" + rows + "| Peru |"
    a = analyze(text, finish_reason="length", messages=_ask("Make a table of 8 countries with their currency."))
    assert a.degenerate and "counting_loop" in _codes(a)
    ok = "| Country | Currency |\n|---|---|\n" + "".join(
        f"| {c} | {m} |\n" for c, m in [("China", "CNY"), ("India", "INR"), ("Brazil", "BRL"), ("Japan", "JPY"),
                                         ("Mexico", "MXN"), ("Chile", "CLP"), ("Peru", "PEN"), ("Kenya", "KES")])
    assert not analyze(ok, finish_reason="stop", messages=_ask("Make a table of 8 countries.")).degenerate


def test_a_role_header_cut_by_max_tokens_after_a_finished_answer():
    text = "Water the seedling every morning and give it a stake once it is a foot tall.\nsystem"
    a = analyze(text, finish_reason="length", messages=_ask("How do I plant a tomato seedling?"))
    assert a.degenerate and "max_tokens cut" in a.reasons[0].message
    # the same line when the response stopped by itself is not judged a turn
    assert not analyze(text, finish_reason="stop", messages=_ask("How do I plant a tomato seedling?")).degenerate


def test_a_table_restated_once_at_max_tokens_is_two_copies():
    rows = "".join(f"<tr><th>{s}</th><td>{d}</td></tr>\n" for s, d in [
        ("Aries", "March 21"), ("Taurus", "April 20"), ("Gemini", "May 21"), ("Cancer", "June 21"),
        ("Leo", "July 23"), ("Virgo", "August 23"), ("Libra", "September 23"), ("Scorpio", "October 23")])
    text = "<table>\n" + rows + "</table>\n\nThis is the table of the zodiac signs:\n\n<table>\n" + rows[:-40]
    a = analyze(text, finish_reason="length", messages=_ask("Write an HTML table of the 12 zodiac signs."))
    assert "runaway_repetition" not in _codes(a) and not a.degenerate, [r.message for r in a.reasons]


def test_numbered_html_rows_of_dates_are_not_a_near_loop():
    rows = "".join(f"  <tr>\n    <td>{i}</td>\n    <td>2023-0{i}-01</td>\n  </tr>\n" for i in range(1, 8))
    a = analyze("<table>\n" + rows, finish_reason="length", messages=_ask("Write an HTML table of the 12 zodiac signs."))
    assert "fuzzy_loop" not in _codes(a)


def test_a_row_of_consecutive_numbers_is_a_table_row():
    text = "| Table of 9 |\n| " + " | ".join(str(i) for i in range(1, 11)) + " |\n| " + " | ".join(
        str(i) for i in range(10, 22)) + " |\n| 20 | 21 | 22"
    assert "counting_loop" not in _codes(analyze(text, finish_reason="length",
                                                 messages=_ask("Make a markdown table of the multiplication table of 9.")))


# ---- round 5: the shapes heldout4 missed (written here from their definitions) ----------------

def test_a_times_table_that_runs_far_past_its_rows():
    """"The multiplication table of 7" names no number but has 10 or 12 rows; 30 rows of one
    template until max_tokens is a counting loop. 12 rows is the table."""
    ask = _ask("Make a markdown table of the multiplication table of 7.")
    head = "| n | 7 × n |\n|---|---|\n"
    runaway = head + "".join(f"| {i} | {(i * 3) % 11} |\n" for i in range(1, 31)) + "| 31 |"
    a = analyze(runaway, finish_reason="length", messages=ask)
    assert a.degenerate and "the size of the set it names" in a.reasons[0].message, [r.message for r in a.reasons]
    table = head + "".join(f"| {i} | {7 * i} |\n" for i in range(1, 13))
    assert not analyze(table, finish_reason="stop", messages=ask).degenerate
    # an implied count is looser than a number the user gave: a few rows past it is not a loop
    planets = "| Planet | Moons |\n|---|---|\n" + "".join(
        f"| {p} | {m} |\n" for p, m in [("Mercury", 0), ("Venus", 0), ("Earth", 1), ("Mars", 2), ("Jupiter", 95),
                                         ("Saturn", 146), ("Uranus", 28), ("Neptune", 16), ("Pluto", 5),
                                         ("Ceres", 0), ("Eris", 1), ("Haumea", 2), ("Makemake", 1)])
    assert not analyze(planets, finish_reason="length", messages=_ask("Make a table of the planets.")).degenerate


def test_the_same_record_again_and_again_in_a_json_array():
    rec = '    {\n        "make": "Ford",\n        "model": "Focus"\n    },\n'
    text = ('[\n    {\n        "make": "Toyota",\n        "model": "Corolla"\n    },\n' + rec * 7
            + '    {\n        "make": "Honda",\n        "model": "Civic"\n    }\n]\n')
    a = analyze(text, finish_reason="stop", messages=_ask("Write a JSON array of 7 cars with make and model."))
    assert a.degenerate and "repeated block" in a.reasons[0].message, [r.message for r in a.reasons]
    # records that differ in a value are data, however alike
    ok = "[\n" + "".join(f'    {{\n        "make": "Ford",\n        "model": "Focus",\n        "year": {y}\n    }},\n'
                         for y in range(2001, 2009)) + "]\n"
    assert not analyze(ok, finish_reason="stop", messages=_ask("Write a JSON array of 8 cars.")).degenerate


def test_two_lines_said_in_rotation_with_quotes_until_max_tokens():
    """Dialogue lines split into many short tokens (``I'm``, quotes) sit between prose and markup:
    half of the tail said a third time is a loop there too."""
    lines = ['"Team, I\'m going to Mars. I\'m going to Mars.', '"Sounds good, we\'re going to Mars. We\'re going to Mars.']
    text = ("Title: Mission to Mars\n\nThe crew gathers in the hangar before the launch.\n\n"
            + "\n\n".join(lines[i % 2] for i in range(14)) + '\n\n"Sounds nice, we\'re')
    a = analyze(text, finish_reason="length", messages=_ask("Write an interview with an astronaut."))
    assert a.degenerate, [r.message for r in a.reasons]


def test_two_sentences_each_said_twice_are_not_three_copies():
    """A A' B B' (two steps each doubled) is two copies of two things, not a loop of three."""
    a1 = "Remove the tire from the bike by loosening the nuts on the axle with a wrench."
    b1 = "Replace the tire with the new one and tighten the nuts on the axle again firmly."
    text = ("Here are the steps to change a bicycle tire:\n\n1. Shift to the smallest gear.\n"
            f"2. {a1}\n3. {a1}\n4. {b1}\n5. {b1}\n6. Pump the tire to the pressure on its side.")
    a = analyze(text, finish_reason="stop", messages=_ask("Give me the steps to change a bicycle tire."))
    assert not a.degenerate, [r.message for r in a.reasons]
    three = text.replace(f"4. {b1}", f"4. {a1}")
    assert analyze(three, finish_reason="stop", messages=_ask("Give me the steps to change a bicycle tire.")).degenerate


# ---- round 6: the shapes heldout5 missed (written here from their definitions) ----------------

def test_three_identical_lines_over_a_sixth_of_the_response():
    """Three copies back to back over about 15 % is the labelling rule's loop; the same three lines
    in a small part of a long answer (code that pops three times) are not."""
    form = ('```html\n<form action="/send" method="post">\n    <label>Email:</label>\n    <label>Email:</label>\n'
            '    <label>Email:</label>\n</form>\n```\n\nThis form asks for the email address.')
    a = analyze(form, finish_reason="stop", messages=_ask("Write an HTML contact form with name, email and message."))
    assert a.degenerate and "line_run" in _codes(a), [r.message for r in a.reasons]
    code = '''```python
class Stack:
    """A last-in, first-out stack on a Python list."""

    def __init__(self, items=None):
        self._items = list(items or [])

    def push(self, item):
        self._items.append(item)
        return len(self._items)

    def peek(self):
        if not self._items:
            raise IndexError("peek from an empty stack")
        return self._items[-1]

    def drop_three(self):
        """Remove the top three items (the caller checked there are three)."""
        self._items.pop()
        self._items.pop()
        self._items.pop()

    def __len__(self):
        return len(self._items)

    def __repr__(self):
        return f"Stack({self._items!r})"
```

`drop_three` pops three times; `peek` raises on an empty stack instead of returning None, so a
caller cannot mistake an empty stack for one whose top item is None. Use `len(stack)` to check
the size before dropping.
'''
    assert not analyze(code, finish_reason="stop", messages=_ask("Write a Python stack helper.")).degenerate


def test_two_copies_of_a_block_and_a_third_begun_at_the_cut():
    block = ("int main() {\n    Registry registry;\n    for (auto& entry : registry) {\n"
             "        if (entry.empty()) {\n            std::cerr << \"Cannot have an empty entry\" << std::endl;\n"
             "            return 0;\n        }\n        std::cout << entry << std::endl;\n    }\n    return 0;\n}\n\n")
    text = "#include <iostream>\n\nclass Registry {};\n\n" + block * 2 + block[:len(block) // 3]
    ask = _ask("Write a C++ program that prints a registry.")
    a = analyze(text, finish_reason="length", messages=ask)
    assert a.degenerate and "a third copy had begun" in a.reasons[0].message, [r.message for r in a.reasons]
    # the same block restated once and stopped (or cut right after the second copy) is two copies
    assert not analyze("#include <iostream>\n\n" + block * 2, finish_reason="length", messages=ask).degenerate


def test_one_name_four_times_in_a_list_of_names():
    ask = _ask("Give me 7 names for a pet goldfish.")
    same = "".join(f"{i}. Goldfish\n" for i in range(1, 8))
    a = analyze(same, finish_reason="stop", messages=ask)
    assert a.degenerate and a.reasons[0].code == "counting_loop", [r.message for r in a.reasons]
    names = "".join(f"{i}. {n}\n" for i, n in enumerate(["Bubbles", "Goldie", "Finn", "Nemo", "Sunny", "Flash",
                                                          "Comet"], 1))
    assert not analyze(names, finish_reason="stop", messages=ask).degenerate
    # three short items (a checklist's answers) are not enough
    check = "- Passport: yes\n- Tickets: yes\n- Keys:\n- Yes\n- Yes\n- Yes\n- Charger: no\n- Snacks: packed\n"
    assert not analyze(check, finish_reason="stop", messages=_ask("Make a packing checklist.")).degenerate


def test_the_same_few_items_in_rotation():
    """Ten books asked, two titles in turn: at most a third of the items are different."""
    ask = _ask("Give me a numbered list of 10 books every teenager should read.")
    titles = ['"The Lantern" by Ann Hale', '"The Quiet Sea" by Tom Reyes', '"The Lantern" by Tom Reyes']
    rotating = "Here are 10 books:\n\n" + "".join(f"{i}. {titles[(i * 7) % 3]}\n" for i in range(1, 11))
    a = analyze(rotating, finish_reason="stop", messages=ask)
    assert a.degenerate and "items in rotation" in a.reasons[0].message, [r.message for r in a.reasons]
    books = ["Holes", "Wonder", "Matilda", "Hatchet", "Coraline", "Dune", "Emma", "Beloved", "Ivanhoe", "Kidnapped"]
    # a real list repeats an item now and then (a country, a colour) and keeps most of them different
    some = "Here are 10 books:\n\n" + "".join(f"{i}. {b}\n" for i, b in enumerate(books[:7] + ["Holes", "Wonder",
                                                                                              "Dune"], 1))
    assert not analyze(some, finish_reason="stop", messages=ask).degenerate
    # rows of data with the same words differ in their numbers: not a rotation
    readings = "| city | temperature | humidity |\n|---|---|---|\n" + "".join(
        f"| Oslo | {t} | {h} |\n" for t, h in zip(range(3, 13), range(60, 90, 3)))
    assert not analyze(readings, finish_reason="stop", messages=_ask("Make a table of weather readings.")).degenerate


def test_one_number_copied_into_every_cell_of_counting_rows():
    ask = _ask("Make a markdown table of the multiplication table of 8.")
    rows = "".join("| " + " | ".join([str(v)] * 7) + " |\n" for v in range(10, 28, 2))
    text = "| Multiplication table of 8 |\n| 1 | 2 | 3 | 4 | 5 | 6 | 7 |\n" + rows
    a = analyze(text, finish_reason="stop", messages=ask)
    assert a.degenerate and a.reasons[0].code == "counting_loop", [r.message for r in a.reasons]
    # a computed table's columns differ
    table = "| n | 8n | 16n | 24n |\n|---|---|---|---|\n" + "".join(
        f"| {n} | {8 * n} | {16 * n} | {24 * n} |\n" for n in range(1, 13))
    assert not analyze(table, finish_reason="stop", messages=ask).degenerate


def test_an_emoji_flood_the_model_left():
    ask = _ask("Say 'good night' in ten languages.")
    text = "Good night in ten languages! " + "🌙 " * 90 + "\n\nFrench: Bonne nuit\nGerman: Gute Nacht\nSpanish: Buenas noches"
    a = analyze(text, finish_reason="stop", messages=ask)
    assert a.degenerate and "symbol_flood" in _codes(a), [r.message for r in a.reasons]
    # a divider or a drawn board is made of drawing characters, not emoji
    divider = "Here is a divider:\n\n" + "─" * 60 + "\n\nPaste it between sections."
    assert not analyze(divider, finish_reason="stop", messages=_ask("Give me a divider line.")).degenerate
    few = "Good night! 🌙✨ " + "Sleep well, dream of stars. " * 3 + "🌟🌟🌟"
    assert not analyze(few, finish_reason="stop", messages=ask).degenerate


def test_rows_counted_far_past_the_request_in_a_fence_until_max_tokens():
    """Two alternating CSV rows per copy are two items each time: 34 rows for 14 students."""
    ask = _ask("Create a CSV of 14 students with name, age and grade.")
    rows = "".join(f"John,{20 + 2 * i},12\nJane,{21 + 2 * i},12\n" for i in range(17))
    text = "```\nname,age,grade\n" + rows + "John,60"
    a = analyze(text, finish_reason="length", messages=ask)
    assert a.degenerate and a.reasons[0].code == "counting_loop", [r.message for r in a.reasons]
    # fourteen rows, stopped: the answer
    ok = "```\nname,age,grade\n" + "".join(f"{n},{12 + i % 5},{'ABCD'[i % 4]}\n" for i, n in enumerate(
        ["Ana", "Ben", "Cai", "Dee", "Eli", "Fay", "Gus", "Hal", "Ivy", "Jon", "Kim", "Lou", "Max", "Nia"])) + "```\n"
    assert not analyze(ok, finish_reason="stop", messages=ask).degenerate


# ---- round 7: the shapes heldout6 missed (written here from their definitions) ----------------

def test_a_counter_inside_a_name_until_max_tokens():
    """``<room>room1</room>``, ``<room>room2</room>`` … the counter is inside the name, no number
    stands alone: still one template counting until max_tokens."""
    ask = _ask("Write an XML document describing a hotel with rooms and guests.")
    text = "<hotel>\n<name>Seaside</name>\n" + "".join(f"<room>room{i}</room>\n" for i in range(1, 41)) + "<ro"
    a = analyze(text, finish_reason="length", messages=ask)
    assert a.degenerate and a.reasons[0].code == "counting_loop", [r.message for r in a.reasons]
    rooms = "<hotel>\n" + "".join(f"<room>room{i}</room>\n" for i in range(1, 5)) + "</hotel>\n"
    assert not analyze(rooms, finish_reason="stop", messages=ask).degenerate


def test_a_list_that_names_one_item_often_but_keeps_a_third_different():
    """Fifteen ocean animals with fish six times among them is a poor list, not a rotation (the
    labelling rule: no item three times back to back); two or three items in turn is."""
    ask = _ask("List 15 animals that live in the ocean.")
    # five different of fifteen: a third, just over the rule's 30 %
    names = ["Fish", "Shark", "Whale", "Fish", "Seal", "Fish", "Fish", "Crab", "Fish", "Crab", "Shark",
             "Fish", "Whale", "Shark", "Seal"]
    assert len(set(names)) == 5
    poor = "".join(f"{i}. {n}\n" for i, n in enumerate(names, 1))
    assert not analyze(poor, finish_reason="stop", messages=ask).degenerate
    turn = "".join(f"{i}. {['Fish', 'Shark', 'Whale'][i % 3]}\n" for i in range(1, 16))
    assert analyze(turn, finish_reason="stop", messages=ask).degenerate



# ---- what a review of rounds 6 and 7 found (written from the definitions) -------------------

def test_three_identical_lines_of_prose_or_data_are_not_a_loop():
    """Three identical lines count only in code or markup that says something: a hymn's refrain,
    a cheer, a row of zeros and an empty table row are healthy."""
    hymn = ("Mine eyes have seen the glory of the coming of the Lord.\n"
            "Glory, glory, hallelujah!\nGlory, glory, hallelujah!\nGlory, glory, hallelujah!\n"
            "His truth is marching on.")
    cheer = "Congratulations to the team!\nHip hip, hooray!\nHip hip, hooray!\nHip hip, hooray!\nWell done, all."
    zeros = "```python\ngrid = [\n    [0, 0, 0, 0],\n    [0, 0, 0, 0],\n    [0, 0, 0, 0],\n]\n```"
    empty = "<table>\n<tr>\n<td>&nbsp;</td>\n<td>&nbsp;</td>\n<td>&nbsp;</td>\n</tr>\n</table>"
    for text in (hymn, cheer, zeros, empty):
        a = analyze(text, finish_reason="stop", messages=_ask("Write it, please."))
        assert not a.degenerate, (text, [r.message for r in a.reasons])


def test_an_emoji_flood_in_the_middle_of_a_response_cut_by_max_tokens():
    """The tail ending in one symbol must not hide the flood before it."""
    text = "🌞" * 100 + " Good morning! Here is your plan for the day: a walk, a swim and lunch before work 🎉"
    for finish in ("stop", "length"):
        a = analyze(text, finish_reason=finish, messages=_ask("Plan my morning."))
        assert a.degenerate and "symbol_flood" in _codes(a), (finish, [r.message for r in a.reasons])


def test_share_grids_and_star_ratings_are_not_floods():
    grid = "Wordle 512 4/6\n\n" + "\n".join(["⬛⬛🟨⬛🟩", "🟩⬛⬛🟨⬛", "🟩🟩⬛🟩🟩", "🟩🟩🟩🟩🟩"] * 2) + "\n\nGot it!"
    stars = "Ratings:\n" + "\n".join(f"Film {i}: " + "★" * (i % 5 + 1) + "☆" * (4 - i % 5) for i in range(8))
    for text in (grid, stars):
        assert not analyze(text, finish_reason="stop", messages=_ask("Share it.")).degenerate, text


def test_answers_and_statuses_repeat_legitimately():
    quiz = "1. True\n2. True\n3. True\n4. True\n5. False\n"
    todo = "1. Book the van: Done\n2. Done\n3. Done\n4. Done\n5. Done\n6. Change the address: pending\n"
    for text in (quiz, todo):
        assert not analyze(text, finish_reason="stop", messages=_ask("Answer the five questions.")).degenerate, text


# ---- round 8: the shapes sets 1-7 still missed (written here from their definitions) ----------

def test_a_line_said_again_with_one_slot_changing():
    """One code line or sentence said again and again, only a type or a name changing each time:
    every copy brings a new word, yet nothing else changes.  Outside verse it is a loop."""
    ask = _ask("Write a Swift struct for a temperature that converts between Celsius and Fahrenheit.")
    types = ["String", "[String]", "Double", "[Double]", "Float", "[Float]", "Int"]
    body = "".join(f"    func convertWithUnit(unit: {t}) -> Temperature? {{\n        return Temperature(unit: unit)\n"
                   "    }\n\n" for t in types)
    text = "```swift\nstruct Temperature {\n    var celsius: Double\n" + body + "}\n```\n"
    a = analyze(text, finish_reason="stop", messages=ask)
    assert a.degenerate and a.reasons[0].code == "near_verbatim_loop", [r.message for r in a.reasons]
    # the same lines as a song's verses, asked for: the song
    song = "".join(f"Oh the {t} goes round and round, all the way to town today\n" for t in
                   ["wheel", "wiper", "horn", "door", "bell", "light", "seat"])
    assert not analyze(song, finish_reason="stop", messages=_ask("Write a song for toddlers about a bus.")).degenerate


def test_parallel_items_with_a_new_word_each_are_not_a_slot_loop():
    """A list whose items share a template but each say something of their own is an answer."""
    ask = _ask("Explain what each HTTP method does.")
    methods = [("GET", "reads a resource without changing it"), ("POST", "creates a new resource on the server"),
               ("PUT", "replaces a resource with the body it sends"), ("PATCH", "changes part of a resource"),
               ("DELETE", "removes a resource for good"), ("HEAD", "asks only for the headers of a response")]
    text = "".join(f"- The {m} method {what}.\n" for m, what in methods)
    assert not analyze(text, finish_reason="stop", messages=ask).degenerate


def test_a_counter_in_words_is_a_counter():
    """``Step 7: This is the seventh step.`` — the counter is written out as an ordinal."""
    ords = ["second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
            "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth"]
    text = ("To make guacamole:\n\nStep 1: Mash two ripe avocados in a bowl.\n"
            + "".join(f"Step {i}: This is the {o} step.\n" for i, o in enumerate(ords, 2)) + "Step 19: This is")
    a = analyze(text, finish_reason="length", messages=_ask("Give me the steps to make guacamole."))
    assert a.degenerate, [r.message for r in a.reasons]
    # a counting rhyme asked for counts in words by design
    rhyme = "".join(f"{n.capitalize()} little ducks went out one day, over the hill and far away.\n"
                    for n in ["five", "four", "three", "two", "one"])
    assert not analyze(rhyme, finish_reason="stop", messages=_ask("Write a counting rhyme about ducks.")).degenerate


def test_two_items_in_strict_rotation_after_a_real_one():
    """Eight games asked for: a real first title, then two titles in turn for the other seven."""
    ask = _ask("Give me a numbered list of 8 board games for a family evening.")
    titles = ["Catan"] + ["Ticket to Ride: Europe", "Ticket to Ride: Europe II"] * 3 + ["Ticket to Ride: Europe"]
    text = "".join(f"{i}. **{t}**\n" for i, t in enumerate(titles, 1)) + "\nAll of them are fun for the family."
    a = analyze(text, finish_reason="stop", messages=ask)
    assert a.degenerate and a.reasons[0].code == "near_verbatim_loop", [r.message for r in a.reasons]
    # eight different games, one of them named again at the end, is a list
    games = ["Catan", "Ticket to Ride", "Carcassonne", "Dixit", "Azul", "Codenames", "Pandemic", "Catan Junior"]
    ok = "".join(f"{i}. **{t}**\n" for i, t in enumerate(games, 1))
    assert not analyze(ok, finish_reason="stop", messages=ask).degenerate


@pytest.mark.parametrize("request_, n", [
    ("Make a table of the Fahrenheit temperatures from 0 to 100 in steps of 10 with Celsius.", 11),
    ("Write the odd numbers from 1 to 35.", 18),
    ("Write the even numbers from 2 to 40.", 20),
    ("Write the multiples of 5 from 5 to 100.", 20),
    ("Count down from 30 to 1 in words.", 30),
    ("Make a markdown table of the powers of 2 from 2^0 to 2^16.", 17),
    ("Write the odd numbers from 2 to 10.", 4),
    ("List the multiples of 7 from 1 to 100.", 14),
    ("List 15 countries in Europe and their capitals.", 15),
    ("Convert the lengths from 1.5 to 2.5 metres into feet.", None),
])
def test_a_range_asks_for_as_many_items_as_it_holds(request_, n):
    from triage.degeneration.counting import count_requested
    assert count_requested(_ask(request_)) == n


def test_a_bare_counter_far_past_the_range_asked_for():
    """Eleven temperatures asked for (0 to 100 in steps of 10); twenty lines of a bare counter."""
    ask = _ask("Make a table of the Fahrenheit temperatures from 0 to 100 in steps of 10 with Celsius.")
    text = "".join(f"{i}. {i}\n" for i in range(1, 21))
    a = analyze(text, finish_reason="stop", messages=ask)
    assert a.degenerate and a.reasons[0].code == "counting_loop", [r.message for r in a.reasons]
    ok = "| °F | °C |\n|---|---|\n" + "".join(f"| {f} | {round((f - 32) * 5 / 9, 1)} |\n" for f in range(0, 101, 10))
    assert not analyze(ok, finish_reason="stop", messages=ask).degenerate


# ---- what a review of round 8's rules found on healthy text (written from the definitions) --

@pytest.mark.parametrize("request_, text", [
    ("How should I paint my fence?",
     "".join(f"Apply the {o} coat with long strokes along the grain and let it dry for four hours.\n"
             for o in ("first", "second", "third"))),
    ("How do I do the stretch and folds for sourdough?",
     "".join(f"For the {o} set, stretch each side of the dough up and fold it over the middle.\n"
             for o in ("first", "second", "third", "fourth"))),
    ("How do I take this antibiotic course?",
     "".join(f"On day {d}, take one tablet in the morning and one tablet in the evening.\n"
             for d in ("one", "two", "three", "four", "five", "six", "seven"))),
    ("Compare the three candidates for the job.",
     "".join(f"The {o} candidate has {y} years of experience in backend development and strong references.\n\n"
             for o, y in (("first", "ten"), ("second", "five"), ("third", "three")))),
])
def test_parallel_sentences_that_count_in_words_are_not_loops(request_, text):
    """Ordinals and number words lead parallel sentences in everyday answers: they are counters
    only for a loop that runs to max_tokens."""
    a = analyze(text, finish_reason="stop", messages=_ask(request_))
    assert not a.degenerate, [r.message for r in a.reasons]


@pytest.mark.parametrize("request_, items", [
    ("What were the key events of the Second World War from 1939 to 1945?", 20),
    ("Suggest activities for kids from 3 to 5 years old.", 12),
    ("Recommend some great movies from 2000 to 2002.", 13),
])
def test_a_span_of_years_or_ages_is_not_a_count(request_, items):
    words = ("apple river stone cloud lantern meadow harbor violin forest candle bridge garden mirror "
             "falcon orchard compass thunder saddle velvet glacier").split()
    text = "".join(f"- {words[i].capitalize()}: {' and '.join(words[(i + 3) % 20:(i + 3) % 20 + 2])} "
                   f"with {words[(i * 7) % 20]}\n" for i in range(items))
    a = analyze(text, finish_reason="stop", messages=_ask(request_))
    assert not a.degenerate, [r.message for r in a.reasons]


@pytest.mark.parametrize("request_, text", [
    ("My doctor said to alternate ibuprofen and acetaminophen every 3 hours. What does that look like?",
     "".join(f"{i}. {'Ibuprofen' if i % 2 else 'Acetaminophen'}\n" for i in range(1, 8))),
    ("Make a rota for Team A and Team B for the next two months.",
     "".join(f"Week {i}: Team {'AB'[i % 2]} covers the day shift and Team {'BA'[i % 2]} covers the night shift.\n"
             for i in range(1, 9))),
    ("Conjugate 'to be tired' in the past tense.",
     "".join(f"{p} {v} tired after the long walk home from the station.\n" for p, v in (
         ("I", "was"), ("You", "were"), ("He", "was"), ("She", "was"), ("It", "was"), ("We", "were"),
         ("They", "were")))),
])
def test_a_sequence_that_was_asked_for_and_finished(request_, text):
    """Alternation, a rota, a conjugation: near-identical lines are the answer (the model stopped)."""
    a = analyze(text, finish_reason="stop", messages=_ask(request_))
    assert not a.degenerate, [r.message for r in a.reasons]


def test_a_rotation_with_real_items_around_it_is_a_plan():
    """Two exercises in turn inside a circuit, with real items before and after: no count asked."""
    ask = _ask("Plan a 20-minute home workout.")
    items = ["Warm-up: march in place", "Stretch your hamstrings"] + ["Push-ups (1 min)", "Squats (1 min)"] * 3 + [
        "Plank (1 min)", "Cool-down walk"]
    text = "".join(f"{i}. {t}\n" for i, t in enumerate(items, 1))
    assert not analyze(text, finish_reason="stop", messages=ask).degenerate


# ---- round 9: the shapes set 8 missed (written here from their definitions) ------------------

def test_a_list_of_bare_numbers_far_past_the_count_asked_for():
    """Twenty multiples asked for; sixty numbers that do not step evenly, until max_tokens."""
    ask = _ask("Write the multiples of 7 from 7 to 140.")
    values, v = [], 7
    for i in range(60):
        v += 3 + (i * 5) % 7
        values.append(v)
    text = "The multiples of 7 are " + ", ".join(map(str, values)) + ","
    a = analyze(text, finish_reason="length", messages=ask)
    assert a.degenerate and a.reasons[0].code == "counting_loop", [r.message for r in a.reasons]
    ok = "The multiples of 7 are " + ", ".join(str(7 * k) for k in range(1, 21)) + "."
    assert not analyze(ok, finish_reason="stop", messages=ask).degenerate
    # a long list of numbers the request did not bound is not judged by the count
    free = "Here are some random numbers: " + ", ".join(map(str, values)) + "."
    assert not analyze(free, finish_reason="stop", messages=_ask("Give me some random numbers.")).degenerate


def test_records_the_same_but_for_their_id_inside_code():
    """Eight books asked for: one real record, then the same title seven times, only the id rising."""
    ask = _ask("Write a JSON array of 8 books with id, title and pages.")
    recs = ['  {"id": 1, "title": "Dune", "pages": 412}'] + [
        f'  {{"id": {i}, "title": "The Night Circus", "pages": 2}}' for i in range(2, 9)]
    text = "```json\n[\n" + ",\n".join(recs) + "\n]\n```\nThis array lists the books you asked for."
    a = analyze(text, finish_reason="stop", messages=ask)
    assert a.degenerate and a.reasons[0].code == "counting_loop", [r.message for r in a.reasons]
    # records whose values differ (a stock list whose status repeats) are data
    stock = ['  {"id": %d, "status": "in stock", "price": %d, "qty": %d}' % (i, 10 + 7 * i % 13, 3 * i % 11)
             for i in range(1, 9)]
    data = "```json\n[\n" + ",\n".join(stock) + "\n]\n```\n"
    assert not analyze(data, finish_reason="stop", messages=_ask("Write a JSON array of 8 products.")).degenerate


@pytest.mark.parametrize("request_, text", [
    ("Seed the seats table for row A with 10 seats, all available.",
     "```sql\n" + "".join(f"INSERT INTO seats (id, row, number, status) VALUES ({i}, 'A', {i}, 'not reserved');\n"
                          for i in range(1, 11)) + "```\n"),
    ("What does this loop print? for i in range(6): print('The value of i is', i)",
     "It prints:\n```\n" + "".join(f"The value of i is {i}\n" for i in range(6)) + "```\n"),
    ("Show me the log of a job that retries five times.",
     "```\n" + "".join(f'Attempt {i} failed: "Connection refused". Retrying in 5 seconds...\n'
                       for i in range(1, 6)) + "```\n"),
])
def test_records_that_say_one_thing_from_the_first_are_fixtures_or_output(request_, text):
    """Seed data, program output and logs say the same words from their first record: only
    records that varied and then stopped varying (or ran to the cut, or far past the count) loop."""
    a = analyze(text, finish_reason="stop", messages=_ask(request_))
    assert not a.degenerate, [r.message for r in a.reasons]


def test_a_bare_number_list_that_ends_by_itself_may_count_something_else():
    """'in 3 steps' is not a count of the primes the answer lists; the list stopped by itself."""
    primes = [p for p in range(2, 100) if all(p % d for d in range(2, p))]
    text = ("1. Write the numbers from 2 to 99. 2. Cross out the multiples of each prime. 3. What is left: "
            + ", ".join(map(str, primes)) + ".")
    a = analyze(text, finish_reason="stop", messages=_ask("Explain in 3 steps how to find the primes below 100."))
    assert not a.degenerate, [r.message for r in a.reasons]


def test_a_verse_request_excuses_a_slot_changing_in_its_lines():
    """The same line with one slot changing is a song's verse when a song was asked for; the
    same lines answering a question are a loop."""
    things = ["wheels", "wipers", "wheels", "wipers", "horn", "wheels", "wipers", "doors", "wheels"]
    song = "Here is a song for the bus.\n\n" + "".join(
        f"The {t} on the bus go round, all the way to town.\n" for t in things)
    assert not analyze(song, finish_reason="stop", messages=_ask("Write a song for toddlers about a bus.")).degenerate
    a = analyze(song, finish_reason="stop", messages=_ask("Describe the parts of a bus."))
    assert a.degenerate and a.reasons[0].code == "near_verbatim_loop", [r.message for r in a.reasons]


def test_a_topic_word_is_not_a_request_for_a_sequence():
    """'the water cycle', 'a shift to factories' name topics: only a request for alternation, a
    rota or schedule to make, a conjugation or a trace excuses near-identical lines."""
    text = "".join(f"Step {i}: the water goes up into the sky and comes back down as rain.\n" for i in range(1, 15))
    for q in ("Explain the water cycle.", "Explain how rain forms.", "Explain the shift to renewable energy."):
        assert analyze(text, finish_reason="stop", messages=_ask(q)).degenerate, q


def test_a_code_block_after_a_counting_loop_does_not_hide_it():
    """A fenced block with a quoted phrase after the loop must not turn the loop's own candidate
    into a records-only one (a regression of round 9, found by review)."""
    loop = "".join(f"Step {i}: add the flour to the bowl.\n" for i in range(1, 15))
    text = loop + '\n```python\nname = "hello world"\n```\n'
    a = analyze(text, finish_reason="stop", messages=_ask("How do I bake bread?"))
    assert a.degenerate and a.reasons[0].code == "counting_loop", [r.message for r in a.reasons]


def test_steps_that_differ_only_in_their_ordinal_say_what_each_step_is():
    """'Add the first egg …', 'Add the second egg …': the ordinal is the step's content, not a
    counter of the same item (the item text is otherwise the same)."""
    steps = ["Cream the butter and the sugar until pale and fluffy."] + [
        f"Add the {o} egg and beat well until it is fully incorporated into the batter."
        for o in ("first", "second", "third", "fourth")] + ["Fold in the flour and bake for an hour."]
    text = "".join(f"{i}. {s}\n" for i, s in enumerate(steps, 1))
    a = analyze(text, finish_reason="stop", messages=_ask("How do I make a classic pound cake?"))
    assert not a.degenerate, [r.message for r in a.reasons]
    # the same step said again with only its list number changing is still a counting loop
    same = "".join(f"{i}. Add the egg and beat well until it is fully incorporated into the batter.\n"
                   for i in range(1, 6))
    assert analyze(same, finish_reason="stop", messages=_ask("How do I make a classic pound cake?")).degenerate


# ---- round 10: the shapes sets 9 and 10 missed (written here from their definitions) ---------

def test_a_counted_table_past_the_size_of_the_set_it_names_at_the_cut():
    """'The multiplication table of 6' is 10 or 12 rows: rows that keep counting past half as
    many again, still going when max_tokens cut them, are a loop; the same rows ending by
    themselves, or rows of named things (the planets said twice), are not judged by the count."""
    ask = _ask("Make a markdown table of the multiplication table of 6.")
    rows = "| n | a | b |\n|---|---|---|\n" + "".join(f"| {i} | {i} | {3 * i % 7} |\n" for i in range(1, 20))
    a = analyze(rows + "| 20 | 2", finish_reason="length", messages=ask)
    assert a.degenerate and a.reasons[0].code == "counting_loop", [r.message for r in a.reasons]
    assert "the size of the set it names" in a.reasons[0].message
    table = "| n | 6 × n |\n|---|---|\n" + "".join(f"| {i} | {6 * i} |\n" for i in range(1, 13))
    assert not analyze(table, finish_reason="stop", messages=ask).degenerate
    planets = ["Mercury", "Venus", "Earth", "Mars", "Jupiter", "Saturn", "Uranus", "Neptune"]
    named = "| Planet | Moons |\n|---|---|\n" + "".join(
        f"| {p} | {k * 3 % 11} |\n" for k, p in enumerate(planets + planets[2:7]))
    a = analyze(named, finish_reason="length", messages=_ask("Write a table of the planets and their moons."))
    assert not a.degenerate, [r.message for r in a.reasons]


@pytest.mark.parametrize("ask, n", [("Write a table of the noble gases.", 7), ("List the great lakes.", 5),
                                    ("Name the wonders of the ancient world.", 7)])
def test_well_known_sets_imply_their_size(ask, n):
    from triage.degeneration.counting import count_implied
    assert count_implied(_ask(ask)) == n


def test_the_same_number_under_every_counter_is_one_item_numbered():
    """Twelve employees asked for, twelve lines each only its number and the same long number:
    the same item twelve times, even at the count asked for."""
    ask = _ask("Create a CSV of 12 employees with id, name, team and start date.")
    text = "```\n" + "".join(f"{i}. 5550123987\n" for i in range(1, 13)) + "```\nThese are the 12 employees."
    a = analyze(text, finish_reason="stop", messages=ask)
    assert a.degenerate and a.reasons[0].code == "counting_loop", [r.message for r in a.reasons]
    # a short number the same in every row (a stock of 0, a price of 5) is data
    stock = "sku,stock\n" + "".join(f"{i},0\n" for i in range(1, 13))
    ask = _ask("Create a CSV of 12 products with their stock.")
    assert not analyze(stock, finish_reason="stop", messages=ask).degenerate
    prices = "".join(f"{i}. 5\n" for i in range(1, 9))
    assert not analyze(prices, finish_reason="stop", messages=_ask("List 8 prices.")).degenerate


@pytest.mark.parametrize("word", [
    "glyph-" + "-".join(["fused"] * 6 + ["0f"] + ["fused"] * 9 + ["1f"] + ["fused"] * 12 + ["2f", "fused", "fused"]),
    "nav-" + "-".join(["d"] * 40) + "-end",
    "app.models." + ".".join("bookstore." + random.Random(i).choice(("model", "data", "custom", "core", "view"))
                             for i in range(30)),
], ids=["fused", "d", "dotted"])
def test_one_piece_said_again_and_again_inside_a_word(word):
    text = f'<ul>\n  <li class="{word}">Home</li>\n</ul>\nThe list has one item.'
    a = analyze(text, finish_reason="stop", messages=_ask("Write a nested HTML list of a shop's aisles."))
    assert a.degenerate and a.reasons[0].code == "char_loop", [r.message for r in a.reasons]
    assert "stutter inside a word" in a.reasons[0].message


@pytest.mark.parametrize("text", [
    # minified CSS: one prefix among many different names
    "".join(f".icon-{n}:before{{content:\"\\e{i:03d}\"}}" for i, n in enumerate(
        ["home", "user", "star", "heart", "search", "mail", "cog", "trash", "file", "time", "road", "lock",
         "flag", "tag", "book", "print", "camera", "font", "bold", "list", "pencil", "play", "pause", "stop",
         "music", "film", "ok", "remove", "zoom", "off", "signal", "download", "upload", "inbox", "refresh"])),
    # a long path with a folder name a few times
    "/srv/app/lib/app/lib/app/static/app/css/app/js/app/img/app/fonts/app/data/app/tmp/app/log/app.log",
    # a song's 'na-na-na' that the request asks for is covered by the request exemption elsewhere;
    # a dotted version list is all different pieces
    "v1.0.1,v1.0.2,v1.0.3,v1.1.0,v1.1.1,v1.2.0,v2.0.0,v2.0.1,v2.1.0,v2.2.0,v3.0.0,v3.0.1",
])
def test_minified_code_and_paths_repeat_a_name_among_many(text):
    a = analyze(text, finish_reason="stop", messages=_ask("Show me an example."))
    assert "char_loop" not in _codes(a), [r.message for r in a.reasons]


def test_a_loop_of_sixteen_characters_inside_one_word_at_the_cut():
    """The character loop looks at periods up to 16 characters: 'ReflectionEngine' (16) again and
    again inside one identifier until max_tokens."""
    text = "```java\npublic class Scanner {\n  private static Slist" + "ReflectionEngine" * 9 + "Refl"
    a = analyze(text, finish_reason="length", messages=_ask("Write a Java class."))
    assert a.degenerate and "char_loop" in _codes(a), [r.message for r in a.reasons]


def test_items_numbered_in_bold_are_list_items():
    """'**7.** Lemon' and '*7. **Lemon**' are numbered items: the same one said again and again
    under new numbers is a counting loop; different ones are a list."""
    same = "Ingredients:\n" + "".join(f"*{i}. **Lemon juice and sugar**\n" for i in range(1, 9))
    a = analyze(same, finish_reason="stop", messages=_ask("Write a numbered recipe for lemonade."))
    assert a.degenerate and a.reasons[0].code == "counting_loop", [r.message for r in a.reasons]
    steps = ["Squeeze six lemons", "Stir in the sugar", "Add cold water", "Chill for an hour", "Serve with ice"]
    ok = "".join(f"**{i}.** {s}\n" for i, s in enumerate(steps, 1))
    assert not analyze(ok, finish_reason="stop", messages=_ask("Write a numbered recipe for lemonade.")).degenerate


def test_role_headers_one_after_the_other_open_a_turn_that_starts_with_code():
    """'system' / blank / 'user' then a turn whose first line is punctuation or code: the turn's
    first lines are read, not only its first."""
    text = ("A bicycle stays up because it steers under its own lean.\nsystem\n\nuser\n\");\n"
            "console.log(\"Hello, World!\");\nWhat will this print?")
    a = analyze(text, finish_reason="length", messages=_ask("Explain how a bicycle stays upright."))
    assert a.degenerate and "confabulated_turn" in _codes(a), [r.message for r in a.reasons]
