"""The held-out set (testdata/heldout.jsonl, testdata/HELDOUT.md): its form, and the detector's
precision and recall on its `test` part, which no threshold was tuned on."""

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
        assert shapes[s] >= 12, (s, shapes[s])


@pytest.fixture(scope="module")
def on_test():
    return run(TEST, by="shape")


def test_precision_and_recall_on_the_test_part(on_test):
    per, total, _ = on_test
    errors = [(k, it["id"]) for k, (it, a) in total.errors]
    assert total.precision >= 0.95, errors
    assert total.recall >= 0.93, errors


def test_recall_on_each_shape_of_the_issue(on_test):
    per, _, _ = on_test
    for s in SHAPES:
        assert per[s].recall >= 0.9, (s, [it["id"] for k, (it, a) in per[s].errors])


def test_no_false_positive_on_the_written_healthy_repetitive_items(on_test):
    """Tables, lists, dialogues, refrains, nesting and code written to look like the four shapes."""
    per, _, _ = on_test
    fps = [it["id"] for s, c in per.items() if s.startswith("healthy_") for k, (it, a) in c.errors
           if k == "FP" and it["class"] == "written_healthy"]
    assert fps == []
