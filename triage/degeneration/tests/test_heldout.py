"""The held-out sets (testdata/HELDOUT.md, docs/degeneration-heldout.md): their form; the
detector's precision and recall on heldout10.jsonl, which no threshold was tuned on (measured
once); and on the earlier sets, tuning data by now, as regression guards."""

import json
from collections import Counter
from pathlib import Path

import pytest

from triage.degeneration.evaluate import HELDOUT, load, run

HERE = Path(HELDOUT).parent
ITEMS = load(HELDOUT)
TEST = [it for it in ITEMS if it["split"] == "test"]
SHAPES = ("invented_turn_stripped", "counting_loop", "near_verbatim_loop", "recursive_nesting")


def test_heldout_set_is_well_formed_and_split_once():
    ids = [it["id"] for it in ITEMS]
    assert len(ids) == len(set(ids)) and len(ids) >= 500
    for it in ITEMS:
        assert isinstance(it["label"], bool) and it["shape"] and it["source"] and it["split"] in ("tune", "test")
        assert it["messages"] and isinstance(it["text"], str)
    # the split is the build script's hash of the id, about half each
    from triage.degeneration.testdata.build_heldout import split_of
    assert all(split_of(it["id"]) == it["split"] for it in ITEMS)
    assert 0.4 < len(TEST) / len(ITEMS) < 0.6
    # real model outputs under every setting of the generator, and written items of both labels
    modes = Counter(it["class"] for it in ITEMS)
    for c in ("model_normal", "model_no_eos", "model_no_stop", "written_degenerate", "written_healthy"):
        assert modes[c] >= 40, (c, modes[c])
    # every model output has a label, from the labels file
    labels = json.loads((HERE / "heldout_labels.json").read_text(encoding="utf-8"))
    raw = [json.loads(line)["id"] for line in (HERE / "heldout_raw.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(raw) == sorted(labels)
    # each shape of the issue is in the test part often enough to measure
    shapes = Counter(it["shape"] for it in TEST if it["label"])
    for s in SHAPES:
        assert shapes[s] >= 10, (s, shapes[s])


SETS = {n: load(HERE / f"heldout{n}.jsonl") for n in (2, 3, 4, 5, 6, 7, 8, 9, 10)}
# heldout10.jsonl, a second test of version 10, evaluated once: 166 of 181 found, 3 of 215 healthy
# flagged (1 of them healthy-repetitive): precision 0.982, recall 0.917. The floors sit just under.
FRESH = 10
FRESH_FLOORS = {"precision": 0.98, "recall": 0.915, "healthy_repetitive_fp": 1}


@pytest.mark.parametrize("n", sorted(SETS))
def test_later_sets_are_fresh_prompts_fully_labelled(n):
    items = SETS[n]
    assert len(items) == 396 and all(it["split"] == "test" for it in items)
    earlier = {it["messages"][0]["content"] for it in ITEMS if it["class"].startswith("model_")}
    for m in range(2, n):
        earlier |= {it["messages"][0]["content"] for it in SETS[m]}
    prompts = {it["messages"][0]["content"] for it in items}
    assert len(prompts) == 44 and not prompts & earlier
    labels = json.loads((HERE / f"heldout{n}_labels.json").read_text(encoding="utf-8"))
    assert sorted(labels) == sorted(it["id"].split("/", 1)[1] for it in items)


@pytest.fixture(scope="module")
def on_tuning():
    return run(ITEMS, by="shape")


@pytest.fixture(scope="module")
def on_sets():
    return {n: run(items, by="shape") for n, items in SETS.items()}


def test_precision_and_recall_on_the_fresh_set(on_sets):
    """heldout10.jsonl, never tuned on: measured once, a second test of version 10 (FRESH_FLOORS)."""
    per, total, _ = on_sets[FRESH]
    errors = [(k, it["id"]) for k, (it, a) in total.errors]
    assert total.precision >= FRESH_FLOORS["precision"], errors
    assert total.recall >= FRESH_FLOORS["recall"], errors
    assert per["healthy_repetitive"].fp <= FRESH_FLOORS["healthy_repetitive_fp"]


@pytest.mark.parametrize("n, precision, recall, healthy_repetitive_fp",
                         [(2, 0.99, 0.96, 0), (3, 0.99, 0.9, 0), (4, 0.96, 0.915, 2), (5, 0.98, 0.95, 2),
                          (6, 0.99, 0.955, 0), (7, 0.97, 0.9, 1), (8, 0.965, 0.905, 4), (9, 0.97, 0.91, 0)])
def test_earlier_fresh_sets_as_regression_guards(on_sets, n, precision, recall, healthy_repetitive_fp):
    """Sets 2 to 9 were each evaluated once as a round's test (0.975 / 0.900, 0.963 / 0.829, 0.954 /
    0.888, 0.981 / 0.893, 0.988 / 0.953, 0.974 / 0.867, 0.968 / 0.863 and 0.976 / 0.912); sets 2
    to 8 were tuned on afterwards. These floors guard what was reached, they estimate nothing."""
    per, total, _ = on_sets[n]
    errors = [(k, it["id"]) for k, (it, a) in total.errors]
    assert total.precision >= precision and total.recall >= recall, errors
    assert per["healthy_repetitive"].fp <= healthy_repetitive_fp


def test_recall_on_each_shape_of_the_issue_in_the_tuning_data(on_tuning):
    per, total, _ = on_tuning
    assert total.precision >= 0.97 and total.recall >= 0.955
    for s, floor in (("invented_turn_stripped", 0.95), ("counting_loop", 0.9), ("near_verbatim_loop", 0.89),
                     ("recursive_nesting", 0.95)):
        assert per[s].recall >= floor, (s, [it["id"] for k, (it, a) in per[s].errors])


def test_no_false_positive_on_the_written_look_alikes(on_tuning):
    """Tables, lists, dialogues, nesting and code written to look like the four shapes; the two
    known false alarms are cumulative songs cut at max_tokens (healthy_refrain)."""
    per, _, _ = on_tuning
    for s in ("healthy_table", "healthy_list", "healthy_dialogue", "healthy_nesting", "healthy_repetitive_code"):
        assert per[s].fp == 0, (s, [it["id"] for k, (it, a) in per[s].errors])
    assert per["healthy_refrain"].fp <= 2


def test_a_second_reader_agrees_with_the_labels_of_set_5():
    """Set 5 was read twice, independently: the labels are reproducible well past the recall the
    detector is asked for (measured: 389 of 396 agree, κ 0.964)."""
    first = json.loads((HERE / "heldout5_labels.json").read_text(encoding="utf-8"))
    second = json.loads((HERE / "heldout5_labels_second_reader.json").read_text(encoding="utf-8"))
    assert sorted(first) == sorted(second)
    for lab in second.values():
        assert lab["label"] == (lab["shape"] not in ("healthy", "healthy_repetitive")) and lab["note"]
    n = len(first)
    agree = sum(first[k]["label"] == second[k]["label"] for k in first) / n
    p1 = sum(lab["label"] for lab in first.values()) / n
    p2 = sum(lab["label"] for lab in second.values()) / n
    expected = p1 * p2 + (1 - p1) * (1 - p2)
    kappa = (agree - expected) / (1 - expected)
    assert agree >= 0.98 and kappa >= 0.96, (agree, kappa)



@pytest.mark.parametrize("n, disagreements", [(6, 1), (7, 10), (8, 3), (9, 5), (10, 6)])
def test_sets_read_twice_agree_where_no_third_reader_decided(n, disagreements):
    """Sets 6 to 10 were read twice; where the readings disagreed a third reader decided, and the
    item's note says so. Everywhere else the two committed readings agree, which gives the
    agreement HELDOUT.md states (395, 386, 393, 391 and 390 of 396)."""
    first = json.loads((HERE / f"heldout{n}_labels.json").read_text(encoding="utf-8"))
    second = json.loads((HERE / f"heldout{n}_labels_second_reader.json").read_text(encoding="utf-8"))
    assert sorted(first) == sorted(second)
    decided = [k for k, lab in first.items() if lab["note"].startswith("Adjudicated")]
    assert len(decided) == disagreements
    assert all(first[k]["label"] == second[k]["label"] for k in first if k not in decided)
