"""Mean paired difference with a cluster-robust standard error.

A suite regenerates each prompt several times (several seeds). Those samples share the
prompt and are not independent, so the naive SE sd/sqrt(n) is too small when prompts differ
a lot; Miller (2024), "Adding Error Bars to Evals: A Statistical Approach to Language Model
Evaluations" (arXiv:2411.00640), recommends clustering the SE on the unit that was sampled
repeatedly. Here that is an OLS of d on a constant with statsmodels'
``cov_type="cluster"`` (CR1: the sandwich with the G/(G-1) small-sample factor), and the
t distribution with G-1 degrees of freedom for the interval and p-value, which is honest
when there are only a handful of prompts.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from statsmodels.regression.linear_model import OLS

from ._util import as_floats, check_alpha, num, sample_sd


def _codes(clusters: Sequence[Hashable]) -> np.ndarray:
    """Integer codes 0..G-1 for the cluster labels, in order of first appearance."""
    seen: dict[Hashable, int] = {}
    return np.asarray([seen.setdefault(c, len(seen)) for c in clusters], dtype=np.int64)


def clustered_difference(
    differences: Sequence[float],
    clusters: Sequence[Hashable],
    *,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Mean of ``differences`` with a cluster-robust SE, clustering on ``clusters``.

    ``differences[i]`` is one paired difference (candidate - reference) and ``clusters[i]``
    the prompt (or other unit) it was sampled from. Returns ``{"n", "clusters", "df", "mean",
    "se", "se_naive", "ci_low", "ci_high", "p_value", "design_effect", "note"}``:

    * ``se``: CR1 cluster-robust SE of the mean (statsmodels OLS, ``cov_type="cluster"``);
    * ``se_naive``: sd / sqrt(n), which treats every sample as independent;
    * ``ci_low`` / ``ci_high`` / ``p_value`` (H0: mean 0): t with ``df = clusters - 1``;
    * ``design_effect``: (se / se_naive)^2, how many times the variance is understated
      by ignoring the clustering.

    With one cluster the clustered SE is undefined (there is no between-cluster spread):
    ``se`` and everything built on it are None, with a note. With zero spread (se == 0)
    the interval is the point [mean, mean] and p_value is None. Mismatched lengths raise
    ValueError; so does alpha outside (0, 1).
    """
    check_alpha(alpha)
    d = as_floats(differences)
    labels = list(clusters)
    if len(labels) != d.size:
        raise ValueError(
            f"clustered_difference: {d.size} differences but {len(labels)} cluster labels"
        )
    n = int(d.size)
    groups = _codes(labels)
    g = int(groups.max()) + 1 if n else 0
    se_naive = sample_sd(d)
    if se_naive is not None:
        se_naive = se_naive / math.sqrt(n)
    out: dict[str, Any] = {
        "n": n,
        "clusters": g,
        "df": None,
        "mean": num(d.mean()) if n else None,
        "se": None,
        "se_naive": se_naive,
        "ci_low": None,
        "ci_high": None,
        "p_value": None,
        "design_effect": None,
        "note": None,
    }
    if n == 0:
        out["note"] = "no differences"
        return out
    if g < 2:
        out["note"] = "a single cluster: the clustered SE is undefined"
        return out
    out["df"] = g - 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fit = OLS(d, np.ones((n, 1))).fit(
                cov_type="cluster", cov_kwds={"groups": groups}, use_t=True
            )
            se = num(fit.bse[0])
            lo, hi = (num(v) for v in fit.conf_int(alpha=alpha)[0])
            p = num(fit.pvalues[0])
        except Exception as exc:
            out["note"] = f"cluster-robust fit failed ({type(exc).__name__})"
            return out

    out["se"] = se
    if se is None:
        out["note"] = "clustered SE not finite"
        return out
    if se == 0.0:
        out.update(ci_low=out["mean"], ci_high=out["mean"], note="zero spread: SE is 0, no p-value")
        return out
    out["ci_low"], out["ci_high"] = lo, hi
    out["p_value"] = None if p is None else min(max(p, 0.0), 1.0)
    if se_naive:
        out["design_effect"] = num((se / se_naive) ** 2)
    if g < 5:
        out["note"] = f"only {g} clusters: the clustered SE itself is very uncertain"
    return out
