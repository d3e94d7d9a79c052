"""The diagnosis: sampling, kernel, model_or_prompt or inconclusive, with its evidence.

Pure Python (no Django): `diagnose(facts, thresholds)` reads the statistics an experiment
computed (triage.experiments.analysis builds `facts`) and returns the verdict, every finding
that holds, and the evidence in plain words. Several findings can hold at once (greedy made
it worse *and* the model degenerates on this prompt): the verdict is the main one, in the
order kernel > model_or_prompt > sampling, and the others are listed.

Every threshold is a field of `Thresholds`, documented with why it has its value; Django's
settings may override any of them (settings.DIAGNOSIS_THRESHOLDS, from the environment).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

SAMPLING, KERNEL, MODEL_OR_PROMPT, INCONCLUSIVE = "sampling", "kernel", "model_or_prompt", "inconclusive"
PRIORITY = (KERNEL, MODEL_OR_PROMPT, SAMPLING)
# Each verdict in words, and what to do next (the experiment page and the report show them).
VERDICTS = {
    KERNEL: ("A kernel bug",
             "A kernel setting changes the model's output beyond the noise floor. Serve the affected traffic with "
             "the stock kernels while it is fixed; the KL plot marks the first token where the kernel departs from "
             "stock, and the ablation arms (if any) name the component."),
    SAMPLING: ("Sampling, not the kernels",
               "Greedy decoding (temperature 0) made the degeneration: at the production temperature the same "
               "kernels are healthy. Serve with sampling (e.g. T=0.6, top_p 0.95), and debug at production "
               "settings, not at T=0."),
    MODEL_OR_PROMPT: ("The model or the prompt",
                      "Stock kernels at the production temperature degenerate too, so the kernels are not the "
                      "cause. Look at the prompt, max_tokens, the stop condition or the model itself."),
    INCONCLUSIVE: ("Inconclusive",
                   "The intervals are too wide to decide. Start the experiment again with more samples per arm "
                   "(the evidence says about how many)."),
}


@dataclass(frozen=True)
class Thresholds:
    # Significance level of every paired test (McNemar, Wilcoxon, clustered). 0.05 is the
    # field's convention; a stricter one only asks for more samples.
    alpha: float = 0.05
    # A production-temperature arm is "healthy" when the upper end of its Wilson 95% interval
    # is below this rate, and "degenerates too" when the lower end is above it. 0.3 lets the
    # default 16 samples decide: 0/16 and 1/16 are healthy (upper 0.19, 0.28), 9/16 degenerates
    # (lower 0.33); with more samples the interval, not this rate, tightens.
    healthy_rate: float = 0.3
    # The greedy control "reproduces" the pathology when at least this share of its samples
    # degenerate (at T=0 on a deterministic engine they are all the same sample).
    reproduce_rate: float = 0.5
    # Teacher-forced KL(stock ‖ candidate) in nats, mean over the response tokens, above which a
    # kernel setting changes the model's predictions beyond numerical precision. Measured on the
    # bundled engine (README, "Kernel variants"): bf16 round-off 1e-4, the fp8 e4m3 KV cache
    # 0.02 (its 3-bit mantissa: expected, not a bug), a 64-token sparse budget on 3,000 tokens
    # 0.68. 0.1 sits well above precision effects and well below a starved kernel.
    kernel_kl: float = 0.1
    # ... and it must also exceed the measured noise floor (stock vs stock) this many times
    # (the floor is 0 on the deterministic bundled engine, non-zero on external engines).
    kernel_kl_floor_factor: float = 10.0
    # Per-position KL above which a position counts as divergent (first divergent position).
    position_kl: float = 0.1
    # Decode vs teacher-forced re-score of the same tokens on the same setting: mean absolute
    # difference of the sampled tokens' logprobs (nats) above which the decode kernel disagrees
    # with its own prefill (SGLang #25790: fp8 KV decode diverged from position 97). Same-path
    # numerical noise on the bundled engine is < 1e-3 in bf16.
    decode_prefill_logprob: float = 0.05
    # ... and the multiple of the stock arm's own decode-vs-prefill difference it must exceed.
    decode_prefill_floor_factor: float = 10.0
    # The smallest difference in degenerate rate worth detecting when sizing more samples (the
    # observed difference is used when larger).
    min_detectable_difference: float = 0.1
    # Power used to say how many samples per arm would decide an inconclusive comparison.
    power: float = 0.8

    @classmethod
    def from_overrides(cls, overrides: dict[str, Any] | None) -> "Thresholds":
        known = {f.name for f in fields(cls)}
        values = {k: float(v) for k, v in (overrides or {}).items() if k in known}
        return cls(**values)


@dataclass
class Finding:
    code: str
    message: str
    evidence: list[str] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "evidence": self.evidence, "details": self.details}


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{100 * rate:.0f}%"


def _rate_text(arm: dict) -> str:
    rate = arm.get("rate") or {}
    if not rate.get("n"):
        return f"{arm['name']}: no samples"
    return (f"{arm['name']} (T={arm['temperature']:g}): {rate['k']}/{rate['n']} degenerate = {_pct(rate['rate'])}, "
            f"95% CI {_pct(rate['ci_low'])}–{_pct(rate['ci_high'])}")


def _p(value: float | None) -> str:
    return "n/a" if value is None else (f"{value:.2g}" if value >= 0.001 else f"{value:.1e}")


def diagnose(facts: dict, thresholds: Thresholds = Thresholds()) -> dict:
    """facts = {
        "transcript_temperature": float | None (the lowest over cases, for suites),
        "original_degenerate": bool,
        "arms": [{"id", "name", "role": stock|candidate|ablation|control, "component", "profile",
                  "temperature", "rate": {n, k, rate, ci_low, ci_high}}],
        "comparisons": [{"arm_id", "against_id", "mcnemar": {p_value, ...}, "rate_difference": float,
                         "clustered": {p_value, ...} | None, "samples_needed": int | None}],
        "divergence": [{"arm_id", "mean_kl", "noise_floor", "first_over_threshold", "token_at_first",
                        "method", "note"}],
        "decode_prefill": [{"arm_id", "mean_abs_diff", "first_over_threshold", "token_at_first"}],
    }"""
    t = thresholds
    arms = {a["id"]: a for a in facts.get("arms", [])}
    stock = next((a for a in arms.values() if a["role"] == "stock"), None)
    findings: list[Finding] = []
    evidence_rates = [_rate_text(a) for a in arms.values()]
    needed: list[int] = []

    def compare(arm_id: int, against_id: int | None) -> dict | None:
        return next((c for c in facts.get("comparisons", []) if c["arm_id"] == arm_id and c["against_id"] == against_id), None)

    def significant(c: dict | None) -> bool:
        if not c:
            return False
        test = c.get("clustered") if c.get("clustered") and c["clustered"].get("p_value") is not None else c.get("mcnemar")
        return bool(test and test.get("p_value") is not None and test["p_value"] < t.alpha)

    def p_of(c: dict) -> float | None:
        test = c.get("clustered") if c.get("clustered") and c["clustered"].get("p_value") is not None else c.get("mcnemar")
        return (test or {}).get("p_value")

    # --- kernel: candidates (and ablations) against stock at the same temperature ------------
    kernel_hits: list[tuple[float, Finding]] = []
    for arm in arms.values():
        if stock is None or arm["role"] not in ("candidate", "ablation") or arm["temperature"] != stock["temperature"]:
            continue
        c = compare(arm["id"], stock["id"])
        evidence, details, score = [], {"arm": arm["name"], "component": arm.get("component") or None,
                                        "profile": arm.get("profile")}, 0.0
        if c and significant(c) and (c.get("rate_difference") or 0) > 0:
            evidence.append(f"{arm['name']} degenerates more often than stock with the same seeds: "
                            f"{_pct(arm['rate']['rate'])} vs {_pct(stock['rate']['rate'])} (paired test p = {_p(p_of(c))})")
            score += 1 + (c.get("rate_difference") or 0)
            details["rate_difference"] = c.get("rate_difference")
        elif c and c.get("samples_needed"):
            needed.append(c["samples_needed"])
        for d in facts.get("divergence", []):
            if d["arm_id"] != arm["id"] or d.get("mean_kl") is None:
                continue
            floor = d.get("noise_floor") or 0.0
            if d["mean_kl"] > t.kernel_kl and d["mean_kl"] > t.kernel_kl_floor_factor * floor:
                where = ""
                if d.get("first_over_threshold") is not None:
                    where = (f"; first divergent position {d['first_over_threshold']}"
                             + (f" (token {d['token_at_first']!r})" if d.get("token_at_first") is not None else ""))
                approx = " (top-k approximation)" if d.get("method") == "topk" else ""
                evidence.append(f"teacher-forced on the original response, {arm['name']} diverges from stock: mean KL "
                                f"{d['mean_kl']:.3g} nats{approx} against a noise floor of {floor:.2g}{where}")
                score += 1 + min(d["mean_kl"], 10.0)
                details.update(mean_kl=d["mean_kl"], noise_floor=floor,
                               first_divergent_position=d.get("first_over_threshold"), token=d.get("token_at_first"))
        for d in facts.get("decode_prefill", []):
            if d["arm_id"] != arm["id"] or d.get("mean_abs_diff") is None:
                continue
            floor = next((x["mean_abs_diff"] or 0.0 for x in facts.get("decode_prefill", [])
                          if stock and x["arm_id"] == stock["id"] and x.get("mean_abs_diff") is not None), 0.0)
            if d["mean_abs_diff"] > t.decode_prefill_logprob and d["mean_abs_diff"] > t.decode_prefill_floor_factor * floor:
                evidence.append(f"{arm['name']}'s decode disagrees with its own prefill re-score of the same tokens: "
                                f"mean |Δ logprob| {d['mean_abs_diff']:.3g} (stock {floor:.2g})"
                                + (f", from position {d['first_over_threshold']}" if d.get("first_over_threshold") is not None else ""))
                score += 1
        if evidence:
            who = arm.get("profile") or arm["name"]
            component = f", component {arm['component']}" if arm.get("component") else ""
            kernel_hits.append((score, Finding(KERNEL, f"kernel: {who}{component} changes the output", evidence, details)))
    if kernel_hits:
        kernel_hits.sort(key=lambda x: -x[0])
        ablations = [f for _, f in kernel_hits if f.details.get("component")]
        main = kernel_hits[0][1]
        if ablations:
            components = sorted({f.details["component"] for f in ablations})
            main.message += f"; ablation names {', '.join(components)}"
            main.details["components"] = components
            main.details["component"] = main.details.get("component") or (
                components[0] if len(components) == 1 else ablations[0].details["component"])
        findings.append(main)
        for _, other in kernel_hits[1:]:
            main.evidence.extend(e for e in other.evidence if e not in main.evidence)

    # --- model_or_prompt: stock at the production temperature degenerates too ---------------
    if stock and stock["rate"].get("n") and stock["rate"]["ci_low"] is not None and stock["rate"]["ci_low"] > t.healthy_rate:
        findings.append(Finding(MODEL_OR_PROMPT, "model or prompt: stock kernels at the production temperature degenerate too",
                                [f"{_rate_text(stock)}: the lower end of the interval is above the healthy rate "
                                 f"{_pct(t.healthy_rate)}"]))

    # --- sampling: greedy control reproduces it, stock at production temperature is healthy -
    control = next((a for a in arms.values() if a["role"] == "control"), None)
    greedy_served = facts.get("transcript_temperature") is not None and facts["transcript_temperature"] <= 0.05
    if control and stock and control["rate"].get("n") and stock["rate"].get("n"):
        c = compare(control["id"], stock["id"])
        reproduces = control["rate"]["rate"] >= t.reproduce_rate
        worse = significant(c) and (c.get("rate_difference") or 0) > 0
        healthy = stock["rate"]["ci_high"] is not None and stock["rate"]["ci_high"] < t.healthy_rate
        if greedy_served and reproduces and worse and healthy:
            findings.append(Finding(SAMPLING, "sampling: greedy decoding (T=0) made the degeneration; the production "
                                              "temperature is healthy with the same kernels",
                                    [f"the transcript was served at T={facts['transcript_temperature']:g}",
                                     f"{_rate_text(control)} — it reproduces the pathology",
                                     f"{_rate_text(stock)} — significantly lower (paired test p = {_p(p_of(c))}), "
                                     f"upper bound under the healthy rate {_pct(t.healthy_rate)}"]))
        elif reproduces and worse:
            findings.append(Finding(SAMPLING, "greedy decoding made it worse: the T=0 control degenerates significantly "
                                              "more than the production temperature",
                                    [_rate_text(control), _rate_text(stock) + f" (paired test p = {_p(p_of(c))})"]))
        elif c and c.get("samples_needed"):
            needed.append(c["samples_needed"])

    codes = [f.code for f in findings]
    strict_sampling = any(f.code == SAMPLING and f.message.startswith("sampling:") for f in findings)
    verdict = next((code for code in PRIORITY if code in codes and (code != SAMPLING or strict_sampling)), INCONCLUSIVE)
    main = next((f for f in findings if f.code == verdict), None)
    more = max(needed) if needed else None
    if verdict == INCONCLUSIVE:
        reasons = ["no arm differs significantly from stock and no kernel diverges beyond the noise floor"]
        if stock and stock["rate"].get("n"):
            reasons.append(_rate_text(stock) + f": the interval straddles the healthy rate {_pct(t.healthy_rate)}"
                           if stock["rate"]["ci_high"] >= t.healthy_rate else _rate_text(stock) + " — healthy")
        if more:
            reasons.append(f"about {more} samples per arm would detect the observed (or a {_pct(t.min_detectable_difference)}) "
                           f"difference at {t.power:.0%} power")
        if not greedy_served and facts.get("original_degenerate") and stock and stock["rate"].get("k") == 0:
            reasons.append("the original degeneration did not recur at production settings: a rare sampling event, "
                           "or a condition the experiment does not reproduce (batch composition, engine version)")
        main = Finding(INCONCLUSIVE, "inconclusive: the intervals are too wide to decide", reasons,
                       {"samples_needed_per_arm": more})
    others = [f for f in findings if f is not main]
    return {
        "verdict": verdict,
        "summary": main.message,
        "evidence": main.evidence + ([f"also: {f.message}" for f in others]),
        "findings": [f.to_dict() for f in findings] if findings else [main.to_dict()],
        "rates": evidence_rates,
        "samples_needed_per_arm": more,
        "thresholds": {f.name: getattr(t, f.name) for f in fields(t)},
    }
