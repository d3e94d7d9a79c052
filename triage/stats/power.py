"""How many samples an arm needs to detect a given difference (statsmodels power solvers).

``samples_needed`` is for the paired design the triage runs use (same prompts and seeds in
both arms): it sizes a one-sample t-test on the per-pair differences, so the variance that
matters is Var(d), usually far below the sum of the arms' variances. For orientation the
normal approximation is n ~ (z_{1-alpha/2} + z_{power})^2 * Var(d) / delta^2, i.e. about
7.85 * Var(d) / delta^2 at alpha 0.05 and power 0.8; the t solution is slightly larger.

``two_proportion_samples_needed`` is the unpaired design (independent samples per arm).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from statsmodels.stats.power import NormalIndPower, TTestPower
from statsmodels.stats.proportion import proportion_effectsize

from ._util import as_floats, check_alpha, num, sample_sd


# Effect sizes (delta / sd) at or above this are detected with two pairs at any alpha and
# power in use (n = 2 at alpha 1e-4 and power 0.999 needs about 1.5e4); statsmodels'
# noncentral t returns NaN far out here, so they are answered without it.
HUGE_EFFECT = 1e6


def _smallest_n(
    power_at: Callable[[float], float], solve: Callable[[], float], *, target: float, n_min: int
) -> int | None:
    """Smallest integer n >= n_min with ``power_at(n) >= target``.

    statsmodels' root finder is asked first; it cannot bracket a root below its starting
    range (a huge effect is already detected at the smallest n), and there it returns NaN,
    so the smallest sizes are checked directly before and after it.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            at_min = num(power_at(n_min))
            if at_min is not None and at_min >= target:
                return n_min
            n_f = num(solve())
            if n_f is not None:
                n = max(n_min, math.ceil(n_f - 1e-9))
                # The solver's tolerance can leave n one short of the target power.
                return n if power_at(n) >= target - 1e-9 else n + 1
            # No root: the answer is a small n (or the power is not computable at n_min,
            # which happens for very large effects; the next n that works is conservative).
            for n in range(n_min + 1, n_min + 50):
                pw = num(power_at(n))
                if pw is not None and pw >= target:
                    return n
        except Exception:
            return None
    return None


def _paired_n(effect_size: float, alpha: float, power: float) -> int | None:
    """Smallest n (>= 2) at which a two-sided one-sample t-test reaches ``power``."""
    if effect_size >= HUGE_EFFECT:
        # Two pairs already detect it (statsmodels' noncentral t gives NaN out here).
        return 2
    solver = TTestPower()
    return _smallest_n(
        lambda n: solver.power(effect_size, nobs=n, alpha=alpha, alternative="two-sided"),
        lambda: solver.solve_power(
            effect_size=effect_size, nobs=None, alpha=alpha, power=power, alternative="two-sided"
        ),
        target=power,
        n_min=2,
    )


def samples_needed(
    differences: Sequence[float],
    *,
    delta: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    min_variance: float | None = None,
) -> dict[str, Any]:
    """Pairs per arm needed to detect a mean paired difference ``delta``.

    ``differences`` are observed per-pair differences (candidate - reference) from a pilot
    run; their sample sd (ddof=1) estimates the sd of d. ``delta`` defaults to their mean.
    The answer is the two-sided one-sample t-test size from statsmodels' ``TTestPower``
    with effect size |delta| / sd, rounded up. Where the observed sd is zero or cannot be
    estimated (n < 2), ``min_variance`` (a floor on Var(d) the caller knows, e.g.
    ``2 * p * (1 - p)`` for binary outcomes at rate p) is used if given.

    Returns ``{"n_per_arm", "delta", "sd", "effect_size", "note"}``; ``n_per_arm`` is None,
    with a note, when delta is zero or unknown or no usable variance is available.
    Raises ValueError only for alpha or power outside (0, 1).
    """
    check_alpha(alpha)
    check_alpha(power, "power")
    d = as_floats(differences)
    out: dict[str, Any] = {
        "n_per_arm": None, "delta": None, "sd": None, "effect_size": None, "note": None,
    }
    notes: list[str] = []

    if delta is None:
        if d.size == 0:
            out["note"] = "no differences and no delta given"
            return out
        delta = float(d.mean())
        notes.append("delta is the observed mean difference")
    delta_f = num(delta)
    out["delta"] = delta_f
    if delta_f is None or delta_f == 0.0:
        why = "delta is not finite" if delta_f is None else (
            "delta is zero: no sample size detects no difference"
        )
        out["note"] = "; ".join([*notes, why])
        return out

    sd = sample_sd(d)
    if sd is None or sd == 0.0:
        why = (
            "fewer than 2 differences" if d.size < 2
            else "observed sd is zero" if sd == 0.0
            else "observed sd is not finite"
        )
        mv = num(min_variance)
        if mv is None or mv <= 0.0:
            out["note"] = "; ".join([*notes, f"{why} and no positive min_variance given"])
            return out
        sd = math.sqrt(mv)
        notes.append(f"{why}: sd from min_variance")
    out["sd"] = sd

    effect = abs(delta_f) / sd
    out["effect_size"] = num(effect)
    n = _paired_n(effect, alpha, power)
    if n is None:
        notes.append("power solver did not converge")
    out["n_per_arm"] = n
    out["note"] = "; ".join(notes) or None
    return out


def two_proportion_samples_needed(
    p1: float, p2: float, *, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """Per-arm size of an unpaired two-sided test of rates ``p1`` vs ``p2`` (equal arms).

    Uses Cohen's arcsine effect size h = 2 asin(sqrt p2) - 2 asin(sqrt p1)
    (``statsmodels.stats.proportion.proportion_effectsize``) and ``NormalIndPower``, i.e.
    n = 2 (z_{1-alpha/2} + z_{power})^2 / h^2, rounded up. This runs a few percent below the
    pooled-variance normal formula found in many tables (2% -> 4%: 1,110 here vs 1,141;
    1% -> 2%: 2,254 vs 2,319). Returns None when p1 == p2 or a rate lies outside [0, 1].
    Raises ValueError only for alpha or power outside (0, 1).
    """
    check_alpha(alpha)
    check_alpha(power, "power")
    a, b = num(p1), num(p2)
    if a is None or b is None or not (0.0 <= a <= 1.0 and 0.0 <= b <= 1.0) or a == b:
        return None
    h = abs(float(proportion_effectsize(b, a)))
    solver = NormalIndPower()
    return _smallest_n(
        lambda n: solver.power(h, nobs1=n, alpha=alpha, ratio=1.0, alternative="two-sided"),
        lambda: solver.solve_power(
            effect_size=h, nobs1=None, alpha=alpha, power=power, ratio=1.0,
            alternative="two-sided",
        ),
        target=power,
        n_min=1,
    )
