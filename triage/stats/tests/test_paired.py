"""McNemar, Wilcoxon and the paired bootstrap against textbook and documented values."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from triage.stats import mcnemar_exact, paired_difference, wilcoxon_paired

from .helpers import assert_plain_json


def _pairs(both: int, ref_only: int, cand_only: int, neither: int) -> tuple[list[bool], list[bool]]:
    ref = [True] * both + [True] * ref_only + [False] * cand_only + [False] * neither
    cand = [True] * both + [False] * ref_only + [True] * cand_only + [False] * neither
    return ref, cand


def test_mcnemar_presidential_approval_table():
    # Agresti, Categorical Data Analysis (2002), Table 10.1: approval of the President in two
    # surveys of the same 1,600 people: 794 approve both times, 150 approve then disapprove,
    # 86 disapprove then approve, 570 disapprove both times.
    ref, cand = _pairs(794, 150, 86, 570)
    out = mcnemar_exact(ref, cand)
    assert (out["n"], out["both"], out["neither"]) == (1600, 794, 570)
    assert (out["reference_only"], out["candidate_only"]) == (150, 86)
    assert out["statistic"] == 86.0
    expected = stats.binomtest(86, 236, 0.5, alternative="two-sided").pvalue
    assert out["p_value"] == pytest.approx(expected, rel=1e-9)
    assert out["p_value"] < 1e-4  # the chi-squared version gives 17.36 on 1 df, p ~ 3e-5
    assert_plain_json(out)


def test_mcnemar_small_table_exact_value():
    ref, cand = _pairs(5, 1, 9, 5)
    out = mcnemar_exact(ref, cand)
    assert out["p_value"] == pytest.approx(stats.binomtest(1, 10, 0.5).pvalue)
    assert out["p_value"] == pytest.approx(22 / 1024)  # 2 * (1 + 10) / 2**10


def test_mcnemar_is_symmetric_in_the_arms():
    ref, cand = _pairs(3, 2, 7, 8)
    a, b = mcnemar_exact(ref, cand), mcnemar_exact(cand, ref)
    assert a["p_value"] == b["p_value"]
    assert (a["reference_only"], a["candidate_only"]) == (b["candidate_only"], b["reference_only"])


def test_mcnemar_no_discordant_pairs_and_no_pairs():
    out = mcnemar_exact([True, False, True], [True, False, True])
    assert out["p_value"] == 1.0 and out["statistic"] == 0.0 and out["note"]
    empty = mcnemar_exact([], [])
    assert empty["n"] == 0 and empty["p_value"] is None and empty["note"]
    assert_plain_json(out)
    assert_plain_json(empty)


def test_mcnemar_mismatched_lengths_raise():
    with pytest.raises(ValueError):
        mcnemar_exact([True], [True, False])


SCIPY_DOC_D = [6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75]


def test_wilcoxon_scipy_documented_example():
    # scipy.stats.wilcoxon docs: height differences of 15 cross- vs self-fertilised plants
    # (Fisher's design of experiments data); two-sided exact test: statistic 24, p 0.0413.
    out = wilcoxon_paired([0.0] * len(SCIPY_DOC_D), SCIPY_DOC_D)
    assert out["n"] == out["n_nonzero"] == 15
    assert out["statistic"] == 24.0
    assert out["p_value"] == pytest.approx(0.041259765625, abs=1e-12)
    assert out["median_difference"] == 24.0
    assert out["note"] is None
    assert_plain_json(out)


def test_wilcoxon_differences_are_candidate_minus_reference():
    ref = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0]
    cand = [r + d for r, d in zip(ref, [1.0, 2.0, 3.0, 4.0, -0.5, 6.0, 7.0])]
    assert wilcoxon_paired(ref, cand)["median_difference"] == 3.0
    assert wilcoxon_paired(cand, ref)["median_difference"] == -3.0


def test_wilcoxon_zeros_are_dropped_by_default():
    out = wilcoxon_paired([0.0] * 9, [0, 0, 0, 1, 2, 3, 4, 5, 6])
    assert out["n"] == 9 and out["n_nonzero"] == 6
    assert out["p_value"] == pytest.approx(stats.wilcoxon([1, 2, 3, 4, 5, 6]).pvalue)


def test_wilcoxon_degenerate():
    zero = wilcoxon_paired([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert zero["p_value"] == 1.0 and zero["n_nonzero"] == 0 and zero["note"]
    one = wilcoxon_paired([0.0], [1.0])
    assert one["p_value"] == 1.0 and one["note"]
    empty = wilcoxon_paired([], [])
    assert empty["p_value"] is None and empty["median_difference"] is None
    for out in (zero, one, empty):
        assert_plain_json(out)


def test_paired_difference_mean_and_interval():
    rng = np.random.default_rng(7)
    ref = rng.normal(0.0, 1.0, 80)
    cand = ref + rng.normal(0.5, 0.3, 80)
    out = paired_difference(ref.tolist(), cand.tolist())
    d = cand - ref
    assert out["n"] == 80
    assert out["mean"] == pytest.approx(d.mean())
    assert out["sd"] == pytest.approx(d.std(ddof=1))
    assert out["ci_low"] < out["mean"] < out["ci_high"]
    assert out["ci_low"] > 0.3 and out["ci_high"] < 0.7
    assert out == paired_difference(ref.tolist(), cand.tolist())  # same seed, same answer
    assert_plain_json(out)


def test_paired_difference_degenerate():
    same = paired_difference([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert same["mean"] == 0.0 and (same["ci_low"], same["ci_high"]) == (0.0, 0.0) and same["note"]
    one = paired_difference([1.0], [3.0])
    assert one["mean"] == 2.0 and one["ci_low"] is None and one["sd"] is None
    empty = paired_difference([], [])
    assert empty["mean"] is None and empty["note"]
    for out in (same, one, empty):
        assert_plain_json(out)
    with pytest.raises(ValueError):
        paired_difference([1.0, 2.0], [1.0])
