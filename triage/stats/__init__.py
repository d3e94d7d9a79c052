"""Statistics for comparing regeneration arms (pure: numpy, scipy, statsmodels; no Django).

The triage regenerates degenerate answers under several kernel settings ("arms") and asks
whether an arm changes how often, or how badly, answers degenerate. The design decides the
statistics:

* **Paired seeds, paired tests.** Every arm replays the same prompts with the same sampling
  seeds, so each candidate sample has a twin in the reference arm. Comparisons are made on
  the pairs: McNemar's exact test for binary outcomes (``mcnemar_exact``), the Wilcoxon
  signed-rank test and a bootstrap interval of the mean difference for continuous ones
  (``wilcoxon_paired``, ``paired_difference``), and power for a t-test on the differences
  (``samples_needed``). Pairing removes prompt and seed variation, which dominates.
* **Wilson intervals for small n.** Degeneration rates are small proportions on tens to
  hundreds of samples; the Wilson score interval keeps its coverage at 0/n and near the
  bounds where the normal interval fails (``wilson_interval``, ``rate_summary``).
* **Clustered SEs for suites.** Several samples of one prompt are not independent (Miller
  2024, "Adding Error Bars to Evals", arXiv:2411.00640), so suite-level means get a
  cluster-robust SE on the prompt (``clustered_difference``), reported next to the naive one.
* **Divergence traces.** Per-position KL and decode-vs-rescore logprob gaps are summarised
  with the first and worst offending positions (``kl_summary``, ``logprob_agreement``).

Conventions: differences are ``candidate - reference``; every function is deterministic
(bootstraps take ``seed``); results are plain JSON-safe Python (int, float, None, list,
dict; never NaN or inf); degenerate input (empty, one value, all equal, all-zero
differences, one cluster) never raises but yields None where a number cannot be computed,
with a ``"note"`` saying why. ValueError is raised only for caller bugs: paired inputs of
different lengths, or alpha / power outside (0, 1).
"""

from .clustered import clustered_difference
from .divergence import kl_summary, logprob_agreement
from .paired import mcnemar_exact, paired_difference, wilcoxon_paired
from .power import samples_needed, two_proportion_samples_needed
from .rates import metric_summary, rate_summary, wilson_interval

__all__ = [
    "clustered_difference",
    "kl_summary",
    "logprob_agreement",
    "mcnemar_exact",
    "metric_summary",
    "paired_difference",
    "rate_summary",
    "samples_needed",
    "two_proportion_samples_needed",
    "wilcoxon_paired",
    "wilson_interval",
]
