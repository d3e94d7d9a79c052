"""The diagnosis (triage.diagnosis.diagnose) on hand-built facts, one canonical scenario each.

Pure: no database. Rates and paired tests come from triage.stats, so the inputs have the
shape (and the numbers) the real pipeline (triage.experiments.analysis.facts) produces.
"""

from __future__ import annotations

import json

import pytest

from triage import stats
from triage.diagnosis import INCONCLUSIVE, KERNEL, MODEL_OR_PROMPT, SAMPLING, Thresholds, diagnose

T = Thresholds()
N = 16
STOCK, CANDIDATE, CONTROL, ABLATE_ATTENTION, ABLATE_BUDGET = 1, 2, 3, 4, 5


def flags(k: int, n: int = N) -> list[bool]:
    """k degenerate samples out of n: the first k seeds."""
    return [True] * k + [False] * (n - k)


def arm(arm_id: int, name: str, role: str, k: int, *, n: int = N, temperature: float = 0.6, profile: str | None = None,
        component: str = "") -> dict:
    return {"id": arm_id, "name": name, "role": role, "component": component, "profile": profile or name,
            "temperature": temperature, "rate": stats.rate_summary(flags(k, n))}


def comparison(arm_id: int, candidate: list[bool], reference: list[bool], *, against_id: int = STOCK) -> dict:
    """As analysis._compare builds it: paired by seed, candidate - reference."""
    diff = [float(b) - float(a) for a, b in zip(reference, candidate)]
    mcnemar = stats.mcnemar_exact(reference, candidate)
    pooled = (sum(reference) + sum(candidate)) / (2 * len(diff))
    delta = max(abs(sum(diff) / len(diff)), T.min_detectable_difference)
    p = min(max(pooled, delta / 2, 0.01), 0.5)
    power = stats.samples_needed(diff, delta=delta, alpha=T.alpha, power=T.power, min_variance=2 * p * (1 - p))
    significant = mcnemar["p_value"] is not None and mcnemar["p_value"] < T.alpha
    return {"arm_id": arm_id, "against_id": against_id, "mcnemar": mcnemar, "rate_difference": sum(diff) / len(diff),
            "clustered": None, "samples_needed": None if significant else power["n_per_arm"]}


def kl(arm_id: int, mean_kl: float, *, floor: float = 0.0, first=None, token=None, method="exact") -> dict:
    return {"arm_id": arm_id, "case_id": 1, "mean_kl": mean_kl, "noise_floor": floor, "first_over_threshold": first,
            "token_at_first": token, "method": method, "note": ""}


def facts(*, arms, comparisons=(), divergence=(), decode_prefill=(), temperature=0.6, original_degenerate=True) -> dict:
    return {"transcript_temperature": temperature, "original_degenerate": original_degenerate, "arms": list(arms),
            "comparisons": list(comparisons), "divergence": list(divergence), "decode_prefill": list(decode_prefill)}


def codes(result: dict) -> list[str]:
    return [f["code"] for f in result["findings"]]


def text(result: dict) -> str:
    return " ".join([result["summary"], *result["evidence"]])


def check_shape(result: dict) -> None:
    assert set(result) >= {"verdict", "summary", "evidence", "findings", "rates", "samples_needed_per_arm", "thresholds"}
    assert result["verdict"] in (SAMPLING, KERNEL, MODEL_OR_PROMPT, INCONCLUSIVE)
    assert result["findings"] and all(isinstance(e, str) for e in result["evidence"])
    json.dumps(result, allow_nan=False)  # stored in a JSONField and served by the API


# --- (1) sampling ----------------------------------------------------------------------


def test_greedy_served_and_healthy_at_production_temperature_is_sampling():
    stock, control = flags(0), flags(16)
    result = diagnose(facts(
        temperature=0.0,
        arms=[arm(STOCK, "stock", "stock", 0), arm(CONTROL, "greedy-control", "control", 16, temperature=0.0,
                                                    profile="stock")],
        comparisons=[comparison(CONTROL, control, stock)]), T)
    check_shape(result)
    assert result["verdict"] == SAMPLING
    assert result["summary"].startswith("sampling:")
    body = text(result)
    assert "T=0" in body
    assert "greedy-control (T=0): 16/16 degenerate = 100%" in body
    assert "stock (T=0.6): 0/16 degenerate = 0%" in body
    assert "3.1e-05" in body  # McNemar exact p for 16 discordant pairs, as computed
    assert KERNEL not in codes(result) and MODEL_OR_PROMPT not in codes(result)


def test_greedy_control_reproducing_is_not_sampling_when_served_at_production_temperature():
    """Greedy made it worse, but the transcript itself was not greedy: not the sampling verdict."""
    stock, control = flags(0), flags(16)
    result = diagnose(facts(
        temperature=0.6,
        arms=[arm(STOCK, "stock", "stock", 0), arm(CONTROL, "greedy-control", "control", 16, temperature=0.0)],
        comparisons=[comparison(CONTROL, control, stock)]), T)
    assert result["verdict"] == INCONCLUSIVE
    assert SAMPLING in codes(result)  # listed as a finding ("greedy decoding made it worse")
    assert any("did not recur at production settings" in e for e in result["evidence"])


# --- (2) kernel ------------------------------------------------------------------------


def _kernel_facts(*, with_ablation: bool) -> dict:
    stock, cand = flags(1), flags(12)
    arms = [arm(STOCK, "stock", "stock", 1), arm(CANDIDATE, "sparse-64", "candidate", 12, profile="sparse")]
    comparisons = [comparison(CANDIDATE, cand, stock)]
    divergence = [kl(CANDIDATE, 0.7, first=97, token="div")]
    if with_ablation:
        arms += [arm(ABLATE_ATTENTION, "ablate attention=sparse", "ablation", 1, profile="stock", component="attention"),
                 arm(ABLATE_BUDGET, "ablate sparse_budget=64", "ablation", 11, profile="stock",
                     component="sparse_budget")]
        comparisons += [comparison(ABLATE_ATTENTION, flags(1), stock), comparison(ABLATE_BUDGET, flags(11), stock)]
        divergence += [kl(ABLATE_ATTENTION, 0.004), kl(ABLATE_BUDGET, 0.65, first=97, token="div")]
    return facts(arms=arms, comparisons=comparisons, divergence=divergence)


def test_candidate_that_degenerates_more_and_diverges_is_kernel():
    result = diagnose(_kernel_facts(with_ablation=False), T)
    check_shape(result)
    assert result["verdict"] == KERNEL
    assert "sparse" in result["summary"]
    body = text(result)
    assert "75% vs 6%" in body  # 12/16 vs 1/16
    assert "first divergent position 97" in body
    assert "'div'" in body
    assert "mean KL 0.7" in body
    kernel = next(f for f in result["findings"] if f["code"] == KERNEL)
    assert kernel["details"]["first_divergent_position"] == 97
    assert kernel["details"]["token"] == "div"
    assert kernel["details"]["mean_kl"] == pytest.approx(0.7)
    assert kernel["details"]["rate_difference"] == pytest.approx(11 / 16)


def test_ablation_names_the_component_that_diverges_only():
    result = diagnose(_kernel_facts(with_ablation=True), T)
    assert result["verdict"] == KERNEL
    kernel = [f for f in result["findings"] if f["code"] == KERNEL]
    assert len(kernel) == 1  # one kernel finding; the other hits add their evidence to it
    details = kernel[0]["details"]
    assert details["components"] == ["sparse_budget"]
    assert "sparse_budget" in result["summary"] and "attention" not in result["summary"]
    assert not any("ablate attention" in e for e in result["evidence"])


def test_ablation_component_is_filled_in_on_the_main_kernel_finding():
    """The main kernel hit is the candidate (no component of its own); the ablation names
    sparse_budget, so details["component"] should say so too, not stay None."""
    result = diagnose(_kernel_facts(with_ablation=True), T)
    kernel = next(f for f in result["findings"] if f["code"] == KERNEL)
    assert kernel["details"]["component"] == "sparse_budget"


def test_candidate_marked_with_its_component_by_ablation_planning():
    """What arms.ablation_arms really plans for sparse-64: the candidate itself carries
    component sparse_budget, and an 'ablate attention=sparse' arm that does not diverge."""
    f = _kernel_facts(with_ablation=False)
    f["arms"][1]["component"] = "sparse_budget"
    f["arms"].append(arm(ABLATE_ATTENTION, "ablate attention=sparse", "ablation", 1, profile="stock",
                         component="attention"))
    f["comparisons"].append(comparison(ABLATE_ATTENTION, flags(1), flags(1)))
    f["divergence"].append(kl(ABLATE_ATTENTION, 0.004))
    result = diagnose(f, T)
    assert result["verdict"] == KERNEL
    kernel = next(f for f in result["findings"] if f["code"] == KERNEL)
    assert kernel["details"]["components"] == ["sparse_budget"]
    assert kernel["details"]["component"] == "sparse_budget"


def test_rate_difference_alone_is_kernel_and_worse_candidate_only():
    """A candidate that degenerates *less* than stock is no kernel fault."""
    stock = flags(12)
    better = [False] * 16
    result = diagnose(facts(arms=[arm(STOCK, "stock", "stock", 12), arm(CANDIDATE, "sparse", "candidate", 0)],
                            comparisons=[comparison(CANDIDATE, better, stock)]), T)
    assert KERNEL not in codes(result)
    assert result["verdict"] == MODEL_OR_PROMPT


def test_candidate_at_another_temperature_is_not_compared_as_a_kernel():
    stock, cand = flags(1), flags(12)
    result = diagnose(facts(arms=[arm(STOCK, "stock", "stock", 1),
                                  arm(CANDIDATE, "sparse-hot", "candidate", 12, temperature=1.2, profile="sparse")],
                            comparisons=[comparison(CANDIDATE, cand, stock)],
                            divergence=[kl(CANDIDATE, 0.7, first=97, token="div")]), T)
    assert KERNEL not in codes(result)


# --- (3) model_or_prompt ---------------------------------------------------------------


def test_stock_degenerating_at_production_temperature_is_model_or_prompt():
    rate = stats.rate_summary(flags(12))
    assert rate["ci_low"] > T.healthy_rate
    result = diagnose(facts(arms=[arm(STOCK, "stock", "stock", 12)]), T)
    check_shape(result)
    assert result["verdict"] == MODEL_OR_PROMPT
    assert "stock (T=0.6): 12/16 degenerate = 75%" in text(result)
    assert f"healthy rate {100 * T.healthy_rate:.0f}%" in text(result)  # what it is compared with


def test_model_or_prompt_outranks_a_significantly_worse_greedy_control():
    """With 16 samples a control can be at most 4/16 worse than stock at 12/16 (p = 0.125):
    32 samples make 'significantly worse' possible while stock is still at 75%."""
    n = 32
    stock, control = flags(24, n), flags(32, n)
    cmp = comparison(CONTROL, control, stock)
    assert cmp["mcnemar"]["p_value"] < T.alpha
    result = diagnose(facts(
        temperature=0.0,
        arms=[arm(STOCK, "stock", "stock", 24, n=n), arm(CONTROL, "greedy-control", "control", 32, n=n, temperature=0.0)],
        comparisons=[cmp]), T)
    assert result["verdict"] == MODEL_OR_PROMPT
    assert codes(result) == [MODEL_OR_PROMPT, SAMPLING]
    greedy = next(f for f in result["findings"] if f["code"] == SAMPLING)
    assert greedy["message"].startswith("greedy decoding made it worse")
    assert any(e.startswith("also: greedy decoding made it worse") for e in result["evidence"])


# --- (4) inconclusive ------------------------------------------------------------------


def test_small_non_significant_difference_is_inconclusive_with_a_sample_size():
    stock, cand = flags(2), flags(4)
    cmp = comparison(CANDIDATE, cand, stock)
    assert cmp["mcnemar"]["p_value"] >= T.alpha
    result = diagnose(facts(arms=[arm(STOCK, "stock", "stock", 2), arm(CANDIDATE, "sparse", "candidate", 4)],
                            comparisons=[cmp]), T)
    check_shape(result)
    assert result["verdict"] == INCONCLUSIVE
    needed = result["samples_needed_per_arm"]
    assert isinstance(needed, int) and not isinstance(needed, bool) and needed > N
    assert needed == cmp["samples_needed"]
    assert result["findings"][0]["details"]["samples_needed_per_arm"] == needed
    assert any(f"about {needed} samples per arm" in e for e in result["evidence"])
    assert any("straddles" in e for e in result["evidence"])


def test_no_arms_at_all_is_inconclusive_not_an_error():
    result = diagnose({}, T)
    assert result["verdict"] == INCONCLUSIVE
    assert result["samples_needed_per_arm"] is None


# --- (5) (6) divergence that is not a kernel fault -------------------------------------


def test_fp8_sized_kl_below_the_threshold_is_not_kernel():
    assert 0.02 < T.kernel_kl
    stock = flags(0)
    result = diagnose(facts(arms=[arm(STOCK, "stock", "stock", 0), arm(CANDIDATE, "fp8-kv", "candidate", 0)],
                            comparisons=[comparison(CANDIDATE, flags(0), stock)],
                            divergence=[kl(CANDIDATE, 0.02, first=None)]), T)
    assert result["verdict"] != KERNEL
    assert KERNEL not in codes(result)


def test_kl_within_ten_times_an_external_noise_floor_is_not_kernel():
    stock = flags(1)
    base = dict(arms=[arm(STOCK, "stock", "stock", 1), arm(CANDIDATE, "sparse", "candidate", 1)],
                comparisons=[comparison(CANDIDATE, flags(1), stock)])
    within = diagnose(facts(**base, divergence=[kl(CANDIDATE, 0.3, floor=0.05, first=12, token="x", method="topk")]), T)
    assert within["verdict"] != KERNEL and KERNEL not in codes(within)
    # the same KL over a floor it exceeds 15 times is a kernel finding (and says it is approximate)
    beyond = diagnose(facts(**base, divergence=[kl(CANDIDATE, 0.3, floor=0.02, first=12, token="x", method="topk")]), T)
    assert beyond["verdict"] == KERNEL
    assert "top-k approximation" in text(beyond)


# --- (7) decode vs prefill -------------------------------------------------------------


def test_decode_disagreeing_with_its_own_prefill_is_kernel():
    stock = flags(0)
    result = diagnose(facts(
        arms=[arm(STOCK, "stock", "stock", 0), arm(CANDIDATE, "fp8-kv", "candidate", 0)],
        comparisons=[comparison(CANDIDATE, flags(0), stock)],
        decode_prefill=[{"arm_id": STOCK, "mean_abs_diff": 0.001, "first_over_threshold": None, "token_at_first": None},
                        {"arm_id": CANDIDATE, "mean_abs_diff": 0.4, "first_over_threshold": 97,
                         "token_at_first": "div"}]), T)
    assert result["verdict"] == KERNEL
    body = text(result)
    assert "fp8-kv" in result["summary"]
    assert "prefill" in body and "0.4" in body and "from position 97" in body


def test_decode_prefill_within_the_stock_floor_is_not_kernel():
    stock = flags(0)
    result = diagnose(facts(
        arms=[arm(STOCK, "stock", "stock", 0), arm(CANDIDATE, "fp8-kv", "candidate", 0)],
        comparisons=[comparison(CANDIDATE, flags(0), stock)],
        decode_prefill=[{"arm_id": STOCK, "mean_abs_diff": 0.1, "first_over_threshold": 3, "token_at_first": "a"},
                        {"arm_id": CANDIDATE, "mean_abs_diff": 0.4, "first_over_threshold": 3, "token_at_first": "a"}]), T)
    assert KERNEL not in codes(result)


# --- thresholds ------------------------------------------------------------------------


def test_threshold_overrides_convert_strings_and_ignore_unknown_keys():
    t = Thresholds.from_overrides({"healthy_rate": "0.1", "unknown": 3})
    assert t.healthy_rate == 0.1 and isinstance(t.healthy_rate, float)
    assert not hasattr(t, "unknown")
    assert t.alpha == T.alpha and t.kernel_kl == T.kernel_kl
    assert Thresholds.from_overrides(None) == T
    assert Thresholds.from_overrides({}) == T


def test_thresholds_change_the_verdict_and_are_reported():
    # stock 2/16: CI 3%-36%; with healthy_rate 0.02 its lower bound is over it
    f = facts(arms=[arm(STOCK, "stock", "stock", 2)])
    assert diagnose(f, T)["verdict"] == INCONCLUSIVE
    strict = Thresholds.from_overrides({"healthy_rate": "0.02"})
    result = diagnose(f, strict)
    assert result["verdict"] == MODEL_OR_PROMPT
    assert result["thresholds"]["healthy_rate"] == 0.02
