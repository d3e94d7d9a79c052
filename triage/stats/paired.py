"""Paired comparisons of two arms run on the same prompts and the same sampling seeds.

Every regeneration in an arm has a twin in the reference arm (same prompt, same seed), so
the arms are compared pair by pair: McNemar's exact test for a binary outcome (only the
discordant pairs carry information), the Wilcoxon signed-rank test and a bootstrap interval
for a continuous one. Pairing removes the prompt-to-prompt and seed-to-seed variation that
an unpaired test would have to average over, which is most of the variance here.

Inputs are aligned sequences ``reference[i]`` / ``candidate[i]``; differences are always
``candidate - reference``. Mismatched lengths raise ValueError (the pairing is broken, which
is a caller bug); every other input, however degenerate, gives a result.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

from ._bootstrap import bootstrap_ci
from ._util import as_bools, as_floats, check_alpha, check_same_length, num, sample_sd


def mcnemar_exact(reference: Sequence[bool], candidate: Sequence[bool]) -> dict[str, Any]:
    """McNemar's exact test of paired binary outcomes (e.g. "answer degenerate?").

    Returns ``{"n", "both", "neither", "reference_only", "candidate_only", "p_value",
    "statistic", "note"}``: the 2x2 counts of pairs, and the two-sided exact binomial p-value
    of ``statsmodels.stats.contingency_tables.mcnemar(exact=True)``, which tests whether the
    discordant pairs split 50/50; ``statistic`` is the smaller discordant count. With no
    discordant pairs the arms cannot be told apart: p_value 1.0, statistic 0, with a note.
    With no pairs at all p_value and statistic are None.
    """
    r, c = as_bools(reference), as_bools(candidate)
    check_same_length(r, c, "mcnemar_exact")
    n = int(r.size)
    both = int(np.sum(r & c))
    neither = int(np.sum(~r & ~c))
    ref_only = int(np.sum(r & ~c))
    cand_only = int(np.sum(~r & c))
    out: dict[str, Any] = {
        "n": n,
        "both": both,
        "neither": neither,
        "reference_only": ref_only,
        "candidate_only": cand_only,
        "p_value": None,
        "statistic": None,
        "note": None,
    }
    if n == 0:
        out["note"] = "no pairs"
        return out
    if ref_only + cand_only == 0:
        out.update(p_value=1.0, statistic=0.0, note="no discordant pairs: the arms agree on every pair")
        return out
    res = mcnemar([[both, ref_only], [cand_only, neither]], exact=True)
    p = num(res.pvalue)
    out["p_value"] = None if p is None else min(max(p, 0.0), 1.0)
    out["statistic"] = num(res.statistic)
    return out


def wilcoxon_paired(
    reference: Sequence[float],
    candidate: Sequence[float],
    *,
    zero_method: str = "wilcox",
) -> dict[str, Any]:
    """Wilcoxon signed-rank test of ``candidate - reference`` (``scipy.stats.wilcoxon``).

    Returns ``{"n", "n_nonzero", "statistic", "p_value", "median_difference", "note"}``.
    Two-sided; scipy chooses the exact null distribution for small samples without ties or
    zeros and the normal approximation otherwise. With ``zero_method="wilcox"`` (the default)
    zero differences are dropped, so ``n_nonzero`` is the effective sample size.
    ``median_difference`` is the median over all n differences, zeros included.
    All differences zero: p_value 1.0, statistic 0.0, with a note. No pairs: None.
    """
    r, c = as_floats(reference), as_floats(candidate)
    check_same_length(r, c, "wilcoxon_paired")
    d = c - r
    n = int(d.size)
    n_nonzero = int(np.count_nonzero(d))
    out: dict[str, Any] = {
        "n": n,
        "n_nonzero": n_nonzero,
        "statistic": None,
        "p_value": None,
        "median_difference": num(np.median(d)) if n else None,
        "note": None,
    }
    if n == 0:
        out["note"] = "no pairs"
        return out
    if n_nonzero == 0:
        out.update(statistic=0.0, p_value=1.0, note="all differences are zero")
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = stats.wilcoxon(d, zero_method=zero_method, alternative="two-sided")
        except ValueError as exc:
            out["note"] = f"wilcoxon undefined: {exc}"
            return out
    p = num(res.pvalue)
    out["statistic"] = num(res.statistic)
    out["p_value"] = None if p is None else min(max(p, 0.0), 1.0)
    if out["p_value"] is None:
        out["note"] = "p-value undefined for these differences"
    elif n_nonzero < 6:
        # With five or fewer non-zero pairs no two-sided p-value can fall below 0.05.
        out["note"] = f"only {n_nonzero} non-zero differences: an exact two-sided p cannot reach 0.05"
    return out


def paired_difference(
    reference: Sequence[float],
    candidate: Sequence[float],
    *,
    seed: int = 0,
    n_resamples: int = 2000,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Mean of ``candidate - reference`` with a seeded bootstrap (1-alpha) interval.

    Returns ``{"n", "mean", "sd", "ci_low", "ci_high", "note"}``; ``sd`` is the sample
    standard deviation of the differences (ddof=1). The interval comes from
    ``scipy.stats.bootstrap`` (BCa, percentile where BCa is undefined) and treats the pairs
    as independent; for several samples per prompt use ``clustered_difference`` instead.
    n < 2: no interval; all differences equal: the point interval, each with a note.
    """
    check_alpha(alpha)
    r, c = as_floats(reference), as_floats(candidate)
    check_same_length(r, c, "paired_difference")
    d = c - r
    n = int(d.size)
    if n == 0:
        return {"n": 0, "mean": None, "sd": None, "ci_low": None, "ci_high": None, "note": "no pairs"}
    ci, note = bootstrap_ci(d, np.mean, seed=seed, n_resamples=n_resamples, alpha=alpha)
    return {
        "n": n,
        "mean": num(np.mean(d)),
        "sd": sample_sd(d),
        "ci_low": ci[0] if ci else None,
        "ci_high": ci[1] if ci else None,
        "note": note,
    }
