"""Per-position divergence summaries of one decoded sequence.

``kl_summary`` summarises a per-token KL divergence between two kernels' next-token
distributions; ``logprob_agreement`` compares the logprob of each sampled token as the
decoder reported it against a teacher-forced re-score of the same tokens. In both, a
position is "over" the threshold when its value is strictly greater than it; positions are
0-based indices into the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._util import as_floats, check_same_length, num


def _over(x: np.ndarray, threshold: float) -> list[int]:
    return [int(i) for i in np.flatnonzero(x > threshold)]


def kl_summary(kl: Sequence[float], *, threshold: float) -> dict[str, Any]:
    """Summary of per-position KL values.

    Returns ``{"n", "mean", "median", "p99", "max", "max_position", "first_over_threshold",
    "n_over_threshold", "positions_over_threshold", "note"}``. ``p99`` is
    ``numpy.percentile(kl, 99)`` (linear interpolation); ``max_position`` the first index of
    the maximum; ``first_over_threshold`` the first index with KL > threshold (None if none);
    ``positions_over_threshold`` all such indices. An empty input gives Nones and a note.
    """
    x = as_floats(kl)
    n = int(x.size)
    if n == 0:
        return {
            "n": 0, "mean": None, "median": None, "p99": None, "max": None,
            "max_position": None, "first_over_threshold": None, "n_over_threshold": 0,
            "positions_over_threshold": [], "note": "no positions",
        }
    over = _over(x, float(threshold))
    return {
        "n": n,
        "mean": num(np.mean(x)),
        "median": num(np.median(x)),
        "p99": num(np.percentile(x, 99)),
        "max": num(np.max(x)),
        "max_position": int(np.argmax(x)),
        "first_over_threshold": over[0] if over else None,
        "n_over_threshold": len(over),
        "positions_over_threshold": over,
        "note": None,
    }


def logprob_agreement(
    decode: Sequence[float], rescored: Sequence[float], *, threshold: float
) -> dict[str, Any]:
    """How closely decode-time logprobs match teacher-forced re-scored ones, position by position.

    ``decode[i]`` and ``rescored[i]`` are the logprob of the i-th sampled token. Returns
    ``{"n", "mean_abs_diff", "max_abs_diff", "max_position", "first_over_threshold",
    "n_over_threshold", "positions_over_threshold", "note"}`` over |decode - rescored|;
    positions are those with an absolute difference > threshold. Mismatched lengths raise
    ValueError (the sequences are not the same tokens); empty input gives Nones and a note.
    """
    a, b = as_floats(decode), as_floats(rescored)
    check_same_length(a, b, "logprob_agreement")
    n = int(a.size)
    if n == 0:
        return {
            "n": 0, "mean_abs_diff": None, "max_abs_diff": None, "max_position": None,
            "first_over_threshold": None, "n_over_threshold": 0,
            "positions_over_threshold": [], "note": "no positions",
        }
    diff = np.abs(a - b)
    over = _over(diff, float(threshold))
    return {
        "n": n,
        "mean_abs_diff": num(np.mean(diff)),
        "max_abs_diff": num(np.max(diff)),
        "max_position": int(np.argmax(diff)),
        "first_over_threshold": over[0] if over else None,
        "n_over_threshold": len(over),
        "positions_over_threshold": over,
        "note": None,
    }
