"""Per-position KL and logprob-agreement summaries."""

from __future__ import annotations

import numpy as np
import pytest

from triage.stats import kl_summary, logprob_agreement

from .helpers import assert_plain_json


def test_kl_summary_values_and_positions():
    kl = [0.0, 0.01, 0.02, 0.5, 0.01, 2.0, 0.03, 2.0]
    out = kl_summary(kl, threshold=0.1)
    assert out["n"] == 8
    assert out["mean"] == pytest.approx(np.mean(kl))
    assert out["median"] == pytest.approx(np.median(kl))
    assert out["p99"] == pytest.approx(np.percentile(kl, 99))
    assert out["max"] == 2.0 and out["max_position"] == 5  # first of the tied maxima
    assert out["first_over_threshold"] == 3
    assert out["positions_over_threshold"] == [3, 5, 7] and out["n_over_threshold"] == 3
    assert_plain_json(out)


def test_kl_summary_threshold_is_strict_and_empty_input():
    out = kl_summary([0.1, 0.1], threshold=0.1)
    assert out["first_over_threshold"] is None and out["positions_over_threshold"] == []
    empty = kl_summary([], threshold=0.1)
    assert empty["n"] == 0 and empty["max"] is None and empty["note"]
    assert_plain_json(empty)


def test_logprob_agreement():
    decode = [-0.1, -2.0, -0.5, -3.0]
    rescored = [-0.1, -2.3, -0.5, -1.0]
    out = logprob_agreement(decode, rescored, threshold=0.25)
    assert out["n"] == 4
    assert out["mean_abs_diff"] == pytest.approx((0.3 + 2.0) / 4)
    assert out["max_abs_diff"] == pytest.approx(2.0) and out["max_position"] == 3
    assert out["first_over_threshold"] == 1 and out["positions_over_threshold"] == [1, 3]
    assert_plain_json(out)


def test_logprob_agreement_identical_empty_and_mismatched():
    same = logprob_agreement([-1.0, -2.0], [-1.0, -2.0], threshold=1e-6)
    assert same["max_abs_diff"] == 0.0 and same["first_over_threshold"] is None
    empty = logprob_agreement([], [], threshold=0.1)
    assert empty["n"] == 0 and empty["mean_abs_diff"] is None and empty["note"]
    assert_plain_json(same)
    assert_plain_json(empty)
    with pytest.raises(ValueError):
        logprob_agreement([-1.0], [-1.0, -2.0], threshold=0.1)
