"""Small helpers shared by the stats modules: JSON-safe conversion and input checks.

Nothing here computes a statistic; the statistics come from scipy and statsmodels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def num(x: Any) -> float | None:
    """``x`` as a plain float, or None when it is missing, NaN or infinite."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def as_floats(values: Sequence[float]) -> np.ndarray:
    """A 1-D float64 array of ``values`` (an empty sequence gives an empty array)."""
    return np.asarray(list(values), dtype=np.float64).reshape(-1)


def as_bools(flags: Sequence[bool]) -> np.ndarray:
    """A 1-D bool array; truthiness decides (so 0/1 ints are accepted)."""
    return np.asarray([bool(f) for f in flags], dtype=bool)


def check_alpha(alpha: float, name: str = "alpha") -> None:
    """Raise ValueError for a level outside (0, 1): a caller bug, not degenerate data."""
    if not (0.0 < float(alpha) < 1.0):
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {alpha!r}")


def check_same_length(a: np.ndarray, b: np.ndarray, what: str) -> None:
    """Raise ValueError when paired inputs differ in length: the pairing is broken."""
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"{what}: paired inputs differ in length ({a.shape[0]} vs {b.shape[0]})")


def sample_sd(x: np.ndarray) -> float | None:
    """Sample standard deviation (ddof=1), None for fewer than two values."""
    if x.size < 2:
        return None
    with np.errstate(all="ignore"):  # overflow for |x| ~ 1e300 ends as None, not a warning
        return num(np.std(x, ddof=1))


def join_notes(*notes: str | None) -> str | None:
    """The non-empty notes joined with '; ', or None when there are none."""
    kept = [n for n in notes if n]
    return "; ".join(kept) if kept else None
