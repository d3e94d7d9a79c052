"""Wilson intervals, rate and metric summaries against published values and libraries."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from triage.stats import metric_summary, rate_summary, wilson_interval

from .helpers import assert_plain_json


def _wilson_by_hand(k: int, n: int, z: float = stats.norm.ppf(0.975)) -> tuple[float, float]:
    """Wilson (1927) score interval, the closed form of e.g. Newcombe (1998) eq. 3."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_wilson_zero_of_ten_matches_literature():
    # 0/10: Wilson 95% interval 0 to 0.2775 (Newcombe 1998, Stat Med 17:857, Table I style).
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0
    assert hi == pytest.approx(0.2775, abs=1e-4)


def test_wilson_five_of_ten_matches_literature():
    lo, hi = wilson_interval(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4)
    assert hi == pytest.approx(0.7634, abs=1e-4)
    assert lo + hi == pytest.approx(1.0)  # symmetric about 1/2


def test_wilson_one_of_twenty_matches_closed_form():
    lo, hi = wilson_interval(1, 20)
    assert (lo, hi) == pytest.approx((0.0089, 0.2361), abs=1e-4)
    assert (lo, hi) == pytest.approx(_wilson_by_hand(1, 20), abs=1e-12)


@pytest.mark.parametrize("k,n", [(0, 1), (1, 1), (3, 7), (10, 10), (17, 250)])
def test_wilson_matches_closed_form_and_stays_in_unit_interval(k, n):
    lo, hi = wilson_interval(k, n)
    hand = _wilson_by_hand(k, n)
    assert lo == pytest.approx(max(hand[0], 0.0), abs=1e-12)
    assert hi == pytest.approx(min(hand[1], 1.0), abs=1e-12)
    assert 0.0 <= lo <= k / n <= hi <= 1.0


def test_wilson_other_level_is_narrower():
    lo95, hi95 = wilson_interval(3, 30)
    lo80, hi80 = wilson_interval(3, 30, alpha=0.2)
    assert lo95 < lo80 < hi80 < hi95


@pytest.mark.parametrize("k,n", [(0, 0), (1, 0), (-1, 5), (6, 5), (0, -3)])
def test_wilson_undefined_is_none(k, n):
    assert wilson_interval(k, n) is None


def test_wilson_bad_alpha_is_a_caller_bug():
    with pytest.raises(ValueError):
        wilson_interval(1, 10, alpha=1.5)


def test_rate_summary_counts_and_interval():
    flags = [True] * 3 + [False] * 27
    out = rate_summary(flags)
    assert out["n"] == 30 and out["k"] == 3
    assert out["rate"] == pytest.approx(0.1)
    assert (out["ci_low"], out["ci_high"]) == pytest.approx(wilson_interval(3, 30))
    assert out["note"] is None
    assert_plain_json(out)


def test_rate_summary_accepts_ints_and_empty():
    assert rate_summary([1, 0, 0, 1])["k"] == 2
    empty = rate_summary([])
    assert empty["n"] == 0 and empty["rate"] is None and empty["ci_low"] is None
    assert empty["note"]
    assert_plain_json(empty)


def test_metric_summary_mean_interval_close_to_t_interval():
    x = np.random.default_rng(1).normal(10.0, 2.0, size=200)
    out = metric_summary(x.tolist())
    assert out["n"] == 200
    assert out["mean"] == pytest.approx(x.mean())
    assert out["median"] == pytest.approx(np.median(x))
    assert out["sd"] == pytest.approx(x.std(ddof=1))
    t_lo, t_hi = stats.t.interval(0.95, 199, loc=x.mean(), scale=stats.sem(x))
    lo, hi = out["mean_ci"]
    assert lo == pytest.approx(t_lo, abs=0.1 * (t_hi - t_lo))
    assert hi == pytest.approx(t_hi, abs=0.1 * (t_hi - t_lo))
    mlo, mhi = out["median_ci"]
    assert mlo < out["median"] < mhi
    assert_plain_json(out)


def test_metric_summary_is_deterministic_per_seed():
    x = [0.1, 0.5, 0.2, 3.0, 0.7, 0.4, 0.9, 1.5]
    assert metric_summary(x, seed=3) == metric_summary(x, seed=3)
    assert metric_summary(x, seed=3)["mean_ci"] != metric_summary(x, seed=4)["mean_ci"]


def test_metric_summary_degenerate_samples():
    one = metric_summary([2.5])
    assert one["mean"] == 2.5 and one["sd"] is None
    assert one["mean_ci"] is None and one["median_ci"] is None and one["note"]
    flat = metric_summary([4.0] * 6)
    assert flat["mean_ci"] == [4.0, 4.0] and flat["median_ci"] == [4.0, 4.0]
    assert flat["sd"] == 0.0 and flat["note"]
    ties = metric_summary([1.0, 1.0, 1.0, 1.0, 1.0, 2.0])  # BCa for the median is undefined
    assert ties["median_ci"] is not None
    for out in (one, flat, ties, metric_summary([])):
        assert_plain_json(out)
