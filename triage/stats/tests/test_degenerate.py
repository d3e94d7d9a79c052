"""Every function, on every degenerate input: no exception, plain JSON, deterministic."""

from __future__ import annotations

import pytest

from triage import stats as S

from .helpers import assert_plain_json

SAMPLES = {
    "empty": [],
    "one": [0.7],
    "two": [0.7, 0.2],
    "all_equal": [0.3] * 5,
    "all_zero": [0.0] * 5,
    "binary": [1.0, 0.0, 0.0, 1.0, 1.0, 0.0],
    "tiny_spread": [1.0, 1.0 + 1e-12, 1.0],
    "huge": [1e300, -1e300, 1e300],
}


def _calls(x: list[float]):
    flags = [v > 0.25 for v in x]
    zeros = [0.0] * len(x)
    labels = ["p"] * len(x)
    two_labels = [i % 2 for i in range(len(x))]
    return [
        lambda: S.wilson_interval(sum(flags), len(flags)),
        lambda: S.rate_summary(flags),
        lambda: S.metric_summary(x, n_resamples=200),
        lambda: S.mcnemar_exact(flags, [not f for f in flags]),
        lambda: S.mcnemar_exact(flags, flags),
        lambda: S.wilcoxon_paired(zeros, x),
        lambda: S.wilcoxon_paired(x, x),
        lambda: S.paired_difference(zeros, x, n_resamples=200),
        lambda: S.samples_needed(x),
        lambda: S.samples_needed(x, delta=0.1),
        lambda: S.samples_needed(x, delta=0.1, min_variance=0.5),
        lambda: S.clustered_difference(x, labels),
        lambda: S.clustered_difference(x, two_labels),
        lambda: S.clustered_difference(x, list(range(len(x)))),
        lambda: S.kl_summary(x, threshold=0.5),
        lambda: S.logprob_agreement(x, zeros, threshold=0.5),
    ]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_degenerate_inputs_never_raise_and_are_plain_json(name):
    x = SAMPLES[name]
    for call in _calls(x):
        first = call()
        assert_plain_json(first)
        assert call() == first  # deterministic


@pytest.mark.parametrize("p1,p2", [(0.0, 1.0), (1e-9, 2e-9), (0.5, 0.5 + 1e-12), (0.99, 1.0)])
def test_two_proportion_extremes_never_raise(p1, p2):
    out = S.two_proportion_samples_needed(p1, p2)
    assert out is None or (type(out) is int and out >= 1)


def test_public_api():
    assert sorted(S.__all__) == sorted(
        [
            "clustered_difference", "kl_summary", "logprob_agreement", "mcnemar_exact",
            "metric_summary", "paired_difference", "rate_summary", "samples_needed",
            "two_proportion_samples_needed", "wilcoxon_paired", "wilson_interval",
        ]
    )
    for name in S.__all__:
        assert getattr(S, name).__doc__
