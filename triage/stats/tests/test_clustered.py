"""Cluster-robust SE of a mean difference: hand-computed CR1 and a simulated suite."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from triage.stats import clustered_difference

from .helpers import assert_plain_json


def _cr1_se_of_mean(d: np.ndarray, groups: np.ndarray) -> float:
    """CR1 sandwich for OLS on a constant: (X'X)^-1 [sum_g (X_g'e_g)^2] (X'X)^-1 with the
    small-sample factor G/(G-1) * (n-1)/(n-k), k = 1, i.e. sqrt(G/(G-1) sum_g S_g^2) / n."""
    n = d.size
    labels = np.unique(groups)
    g = labels.size
    e = d - d.mean()
    meat = sum(e[groups == lab].sum() ** 2 for lab in labels)
    return math.sqrt(g / (g - 1) * (n - 1) / (n - 1) * meat) / n


def test_tiny_example_equals_hand_computed_cr1():
    d = np.array([1.0, 2.0, 3.0, 4.0, 10.0, 12.0])
    groups = np.array(["p1", "p1", "p2", "p2", "p3", "p3"])
    out = clustered_difference(d.tolist(), groups.tolist())
    assert out["n"] == 6 and out["clusters"] == 3 and out["df"] == 2
    assert out["mean"] == pytest.approx(d.mean())
    se = _cr1_se_of_mean(d, groups)
    assert out["se"] == pytest.approx(se, rel=1e-12)
    assert out["se_naive"] == pytest.approx(d.std(ddof=1) / math.sqrt(6), rel=1e-12)
    assert out["design_effect"] == pytest.approx((se / out["se_naive"]) ** 2)
    # Interval and p-value on t with G - 1 degrees of freedom.
    t = stats.t.ppf(0.975, 2)
    assert out["ci_low"] == pytest.approx(d.mean() - t * se)
    assert out["ci_high"] == pytest.approx(d.mean() + t * se)
    assert out["p_value"] == pytest.approx(2 * stats.t.sf(d.mean() / se, 2))
    assert_plain_json(out)


def test_singleton_clusters_give_the_naive_se():
    d = np.random.default_rng(3).normal(size=12)
    out = clustered_difference(d.tolist(), list(range(12)))
    assert out["se"] == pytest.approx(out["se_naive"], rel=1e-12)
    assert out["design_effect"] == pytest.approx(1.0)


def test_strong_prompt_effects_inflate_the_clustered_se():
    rng = np.random.default_rng(11)
    prompts, seeds = 30, 10
    prompt_effect = rng.normal(0.0, 1.0, prompts)
    d = (prompt_effect[:, None] + rng.normal(0.0, 0.3, (prompts, seeds))).ravel()
    clusters = [f"prompt-{i}" for i in range(prompts) for _ in range(seeds)]
    out = clustered_difference(d.tolist(), clusters)
    assert out["clusters"] == prompts and out["n"] == prompts * seeds
    assert out["se"] > 2.0 * out["se_naive"]
    assert out["design_effect"] > 4.0  # ~ 1 + (m - 1) ICC = 1 + 9 * 0.92
    assert out["ci_low"] < out["mean"] < out["ci_high"]
    assert_plain_json(out)


def test_label_types_and_order_do_not_matter():
    d = [0.5, 0.1, 0.9, 0.3, 0.4, 0.8]
    a = clustered_difference(d, ["x", "y", "x", "z", "y", "z"])
    b = clustered_difference(d, [(2, "b"), 7, (2, "b"), None, 7, None])
    assert a["se"] == pytest.approx(b["se"], rel=1e-12)


def test_single_cluster_and_degenerate_inputs():
    one = clustered_difference([0.1, 0.4, 0.2], ["p", "p", "p"])
    assert one["se"] is None and one["ci_low"] is None and one["p_value"] is None
    assert one["se_naive"] is not None and one["mean"] == pytest.approx(0.7 / 3) and one["note"]
    flat = clustered_difference([0.2] * 4, ["a", "a", "b", "b"])
    assert flat["se"] == 0.0 and flat["ci_low"] == flat["ci_high"] == 0.2 and flat["p_value"] is None
    empty = clustered_difference([], [])
    assert empty["n"] == 0 and empty["mean"] is None and empty["note"]
    single = clustered_difference([1.0], ["a"])
    assert single["se"] is None and single["se_naive"] is None
    for out in (one, flat, empty, single):
        assert_plain_json(out)
    with pytest.raises(ValueError):
        clustered_difference([1.0, 2.0], ["a"])
