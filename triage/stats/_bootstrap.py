"""Seeded bootstrap confidence intervals through ``scipy.stats.bootstrap``.

One helper, used for the mean and median of a metric and for the mean paired difference.
It never raises: degenerate samples get a point interval or None, with a note saying why.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from scipy import stats

from ._util import num

# BCa needs a jackknife over all n leave-one-out samples (O(n^2) work). Above this size BCa
# and percentile intervals agree to well within bootstrap noise, so the cheaper one is used.
BCA_MAX_N = 2000
# Cap on the elements of one vectorised batch of resamples (memory, not accuracy).
_BATCH_ELEMENTS = 2_000_000


def bootstrap_ci(
    x: np.ndarray,
    statistic: Callable[..., np.ndarray],
    *,
    seed: int,
    n_resamples: int,
    alpha: float,
) -> tuple[list[float] | None, str | None]:
    """``([low, high], note)`` for ``statistic`` of the 1-D sample ``x``.

    BCa first (better coverage for skewed metrics); where BCa is undefined (a jackknife with
    no spread, as a median with many ties gives) the percentile interval is used instead and
    the note says so. Fewer than two values: ``(None, note)``. All values equal: the point
    interval ``[v, v]`` with a note, since every resample gives the same statistic.
    The same ``seed`` gives the same interval.
    """
    n = int(x.size)
    if n < 2:
        return None, "fewer than 2 values: no bootstrap interval"
    if np.all(x == x[0]):
        v = float(statistic(x, axis=-1))
        return [v, v], "all values equal: the bootstrap interval is the single point"
    if n_resamples < 1:
        return None, "n_resamples < 1: no bootstrap interval"
    batch = max(1, min(int(n_resamples), _BATCH_ELEMENTS // n))
    methods = ["BCa", "percentile"] if n <= BCA_MAX_N else ["percentile"]
    notes: list[str] = []
    if n > BCA_MAX_N:
        notes.append(f"n > {BCA_MAX_N}: percentile interval")
    for method in methods:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                res = stats.bootstrap(
                    (x,),
                    statistic,
                    n_resamples=int(n_resamples),
                    batch=batch,
                    vectorized=True,
                    axis=-1,
                    confidence_level=1.0 - alpha,
                    method=method,
                    rng=np.random.default_rng(seed),
                )
            except Exception as exc:  # scipy refuses some degenerate samples
                notes.append(f"{method} failed ({type(exc).__name__})")
                continue
        lo, hi = num(res.confidence_interval.low), num(res.confidence_interval.high)
        if lo is not None and hi is not None:
            if method != methods[0]:
                notes.append("percentile interval used")
            return [lo, hi], "; ".join(notes) or None
        notes.append(f"{method} interval undefined (not finite)")
    return None, "; ".join(notes) or "bootstrap failed"
