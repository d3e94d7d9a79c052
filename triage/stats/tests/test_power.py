"""Sample-size answers against textbook formulas and published table values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

from triage.stats import samples_needed, two_proportion_samples_needed

from .helpers import assert_plain_json

Z_A = stats.norm.ppf(0.975)
Z_B = stats.norm.ppf(0.8)


def _normal_approx_pairs(var_d: float, delta: float) -> float:
    """Textbook paired-design size: (z_{1-a/2} + z_{1-b})^2 Var(d) / delta^2 (~7.85 Var/d^2)."""
    return (Z_A + Z_B) ** 2 * var_d / delta**2


def test_textbook_constant_is_7_85():
    assert (Z_A + Z_B) ** 2 == pytest.approx(7.849, abs=1e-3)


@pytest.mark.parametrize("delta", [0.05, 0.2, 0.5])
def test_samples_needed_close_to_normal_approximation(delta):
    d = np.random.default_rng(0).normal(0.1, 0.6, size=50)
    out = samples_needed(d.tolist(), delta=delta)
    var_d = d.var(ddof=1)
    approx = _normal_approx_pairs(var_d, delta)
    n = out["n_per_arm"]
    assert out["sd"] == pytest.approx(math.sqrt(var_d))
    assert out["delta"] == delta
    # The t solution is slightly above the normal one: by about z^2/2 + 1 ~ 3 pairs.
    assert math.ceil(approx) <= n <= math.ceil(approx) + 4
    # ...and it is the smallest n that reaches the power.
    eff = delta / math.sqrt(var_d)
    assert TTestPower().power(eff, nobs=n, alpha=0.05) >= 0.8
    assert TTestPower().power(eff, nobs=n - 1, alpha=0.05) < 0.8
    assert_plain_json(out)


def test_samples_needed_defaults_to_observed_mean_and_sign_does_not_matter():
    d = [0.1, 0.3, -0.1, 0.5, 0.2, 0.0]
    out = samples_needed(d)
    assert out["delta"] == pytest.approx(np.mean(d))
    assert out["n_per_arm"] == samples_needed([-x for x in d])["n_per_arm"]
    assert out["note"]


def test_samples_needed_binary_outcomes_with_min_variance():
    # No observed disagreement (sd 0): the caller supplies the variance floor 2 p (1 - p).
    p = 0.05
    out = samples_needed([0.0] * 20, delta=0.02, min_variance=2 * p * (1 - p))
    approx = _normal_approx_pairs(2 * p * (1 - p), 0.02)
    assert math.ceil(approx) <= out["n_per_arm"] <= math.ceil(approx) + 4
    assert out["sd"] == pytest.approx(math.sqrt(2 * p * (1 - p)))
    assert "min_variance" in out["note"]


def test_samples_needed_undefined_cases():
    zero_mean = samples_needed([0.5, -0.5, 0.2, -0.2])
    assert zero_mean["n_per_arm"] is None and "zero" in zero_mean["note"]
    no_sd = samples_needed([0.0, 0.0, 0.0], delta=0.1)
    assert no_sd["n_per_arm"] is None and no_sd["note"]
    empty = samples_needed([])
    assert empty["n_per_arm"] is None and empty["note"]
    one = samples_needed([0.3])
    assert one["n_per_arm"] is None and one["note"]
    # One difference has no sd; min_variance stands in for it (0.18 = var of [0.0, 0.6]).
    assert samples_needed([0.3], min_variance=0.18)["n_per_arm"] == samples_needed(
        [0.0, 0.6], delta=0.3
    )["n_per_arm"]
    for out in (zero_mean, no_sd, empty, one):
        assert_plain_json(out)


def test_samples_needed_huge_effect_is_two_pairs():
    assert samples_needed([1.0, 1.001, 0.999], delta=5.0)["n_per_arm"] == 2


def _pooled_normal_per_arm(p1: float, p2: float) -> float:
    """Pooled-variance normal formula (Fleiss, Statistical Methods for Rates and Proportions,
    without continuity correction), the one behind the usual table values."""
    pbar = (p1 + p2) / 2
    num = Z_A * math.sqrt(2 * pbar * (1 - pbar)) + Z_B * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    return num**2 / (p2 - p1) ** 2


@pytest.mark.parametrize("p1,p2,table", [(0.02, 0.04, 1141), (0.01, 0.02, 2318)])
def test_two_proportion_against_published_values(p1, p2, table):
    # The published values come from the pooled-variance formula...
    assert _pooled_normal_per_arm(p1, p2) == pytest.approx(table, abs=1.0)
    # ...statsmodels' arcsine (Cohen's h) answer is a few percent lower, as expected.
    n = two_proportion_samples_needed(p1, p2)
    assert n == pytest.approx(table, rel=0.04)
    assert n < table
    h = 2 * math.asin(math.sqrt(p2)) - 2 * math.asin(math.sqrt(p1))
    assert n == math.ceil(2 * (Z_A + Z_B) ** 2 / h**2)


def test_two_proportion_exact_numbers_and_symmetry():
    assert two_proportion_samples_needed(0.02, 0.04) == 1110
    assert two_proportion_samples_needed(0.01, 0.02) == 2254
    assert two_proportion_samples_needed(0.04, 0.02) == 1110


@pytest.mark.parametrize("p1,p2", [(0.1, 0.1), (-0.1, 0.2), (0.2, 1.5), (0.0, 0.0)])
def test_two_proportion_undefined_is_none(p1, p2):
    assert two_proportion_samples_needed(p1, p2) is None


def test_two_proportion_extreme_rates():
    assert two_proportion_samples_needed(0.0, 1.0) == 2
