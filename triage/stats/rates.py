"""Rates of a binary outcome (Wilson intervals) and summaries of a continuous metric.

Degenerate-answer rates are small proportions measured on tens to hundreds of samples,
where the normal ("Wald") interval collapses to zero width at 0/n and leaves [0, 1]; the
Wilson score interval keeps sensible coverage there (Brown, Cai & DasGupta 2001,
"Interval Estimation for a Binomial Proportion"), so it is the interval used throughout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from statsmodels.stats.proportion import proportion_confint

from ._bootstrap import bootstrap_ci
from ._util import as_bools, as_floats, check_alpha, join_notes, num, sample_sd


def wilson_interval(successes: int, n: int, *, alpha: float = 0.05) -> tuple[float, float] | None:
    """The Wilson score interval ``(low, high)`` for ``successes`` out of ``n`` at level 1-alpha.

    Computed by ``statsmodels.stats.proportion.proportion_confint(method="wilson")`` and
    clipped to [0, 1] (floating-point error can leave -1e-17 at 0/n). Returns None when
    there is nothing to estimate: ``n <= 0`` or ``successes`` outside ``[0, n]``.
    Raises ValueError only for ``alpha`` outside (0, 1).
    """
    check_alpha(alpha)
    successes, n = int(successes), int(n)
    if n <= 0 or not (0 <= successes <= n):
        return None
    lo, hi = proportion_confint(successes, n, alpha=alpha, method="wilson")
    lo_f, hi_f = num(lo), num(hi)
    if lo_f is None or hi_f is None:
        return None
    return (min(max(lo_f, 0.0), 1.0), min(max(hi_f, 0.0), 1.0))


def rate_summary(flags: Sequence[bool], *, alpha: float = 0.05) -> dict[str, Any]:
    """How often ``flags`` is true, with its Wilson interval.

    Returns ``{"n", "k", "rate", "ci_low", "ci_high", "note"}``: ``n`` outcomes, ``k`` of them
    true, ``rate = k / n`` and the Wilson (1-alpha) interval. With no outcomes the rate and
    interval are None and ``note`` says so; otherwise ``note`` is None.
    """
    x = as_bools(flags)
    n, k = int(x.size), int(x.sum())
    ci = wilson_interval(k, n, alpha=alpha)
    return {
        "n": n,
        "k": k,
        "rate": (k / n) if n else None,
        "ci_low": ci[0] if ci else None,
        "ci_high": ci[1] if ci else None,
        "note": None if n else "no outcomes: rate undefined",
    }


def metric_summary(
    values: Sequence[float],
    *,
    seed: int = 0,
    n_resamples: int = 2000,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Location and spread of a continuous metric, with bootstrap intervals.

    Returns ``{"n", "mean", "median", "sd", "mean_ci", "median_ci", "note"}``. ``sd`` is the
    sample standard deviation (ddof=1; None for n < 2). ``mean_ci`` / ``median_ci`` are
    ``[low, high]`` (1-alpha) from ``scipy.stats.bootstrap`` (BCa, or percentile where BCa is
    undefined or n is large), seeded by ``seed`` so a rerun gives the same numbers. For n < 2
    they are None; for all-equal values they are the point ``[v, v]``; ``note`` says which.
    """
    check_alpha(alpha)
    x = as_floats(values)
    n = int(x.size)
    if n == 0:
        return {
            "n": 0, "mean": None, "median": None, "sd": None,
            "mean_ci": None, "median_ci": None, "note": "no values",
        }
    mean_ci, mean_note = bootstrap_ci(x, np.mean, seed=seed, n_resamples=n_resamples, alpha=alpha)
    median_ci, median_note = bootstrap_ci(
        x, np.median, seed=seed, n_resamples=n_resamples, alpha=alpha
    )
    return {
        "n": n,
        "mean": num(np.mean(x)),
        "median": num(np.median(x)),
        "sd": sample_sd(x),
        "mean_ci": mean_ci,
        "median_ci": median_ci,
        "note": mean_note
        if mean_note == median_note
        else join_notes(
            f"mean: {mean_note}" if mean_note else None,
            f"median: {median_note}" if median_note else None,
        ),
    }
