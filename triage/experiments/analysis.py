"""An experiment's statistics, divergence and diagnosis, computed from its stored samples.

`summarize` is pure statistics over the samples (cheap; also run on cancel). `finalize` adds
what needs the backends — teacher-forced divergence of each kernel setting against stock on
the original response, its measured noise floor, each arm's decode logprobs against a
re-score of the same tokens — then the diagnosis, and ends the experiment.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from triage import content_codec, stats
from triage.backends import BackendClient, BackendError
from triage.diagnosis import Thresholds, diagnose
from triage.experiments import external, selectors
from triage.models import Arm, Divergence, Experiment, ExperimentCase, ExperimentChunk, Sample

logger = logging.getLogger(__name__)

CONTINUOUS = ("seq_rep_4", "severity", "length", "compression_ratio")


def thresholds() -> Thresholds:
    return Thresholds.from_overrides(getattr(settings, "DIAGNOSIS_THRESHOLDS", None))


def _value(sample: dict, metric: str) -> float | None:
    if metric == "severity":
        return float(sample["severity"])
    if metric == "length":
        return float(sample["completion_tokens"])
    value = (sample["metrics"] or {}).get(metric)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _arm_stats(rows: list[dict]) -> dict:
    out = {"rate": stats.rate_summary([r["degenerate"] for r in rows]), "metrics": {}}
    for metric in CONTINUOUS:
        values = [v for v in (_value(r, metric) for r in rows) if v is not None]
        out["metrics"][metric] = stats.metric_summary(values)
    finish = defaultdict(int)
    for r in rows:
        finish[r["finish_reason"] or "unknown"] += 1
    out["finish_reasons"] = dict(finish)
    return out


def _compare(stock_rows: dict, arm_rows: dict, t: Thresholds) -> dict:
    """Paired by (case, index): the same seed on the same conversation."""
    keys = sorted(set(stock_rows) & set(arm_rows))
    reference = [stock_rows[k] for k in keys]
    candidate = [arm_rows[k] for k in keys]
    flags_ref = [r["degenerate"] for r in reference]
    flags_cand = [r["degenerate"] for r in candidate]
    diff = [float(b) - float(a) for a, b in zip(flags_ref, flags_cand)]
    result: dict[str, Any] = {"pairs": len(keys), "mcnemar": stats.mcnemar_exact(flags_ref, flags_cand)}
    result["rate_difference"] = (sum(diff) / len(diff)) if diff else None
    result["rate_difference_ci"] = stats.paired_difference([float(x) for x in flags_ref], [float(x) for x in flags_cand])
    pooled = (sum(flags_ref) + sum(flags_cand)) / (2 * len(keys)) if keys else 0.0
    observed = abs(result["rate_difference"] or 0.0)
    delta = max(observed, t.min_detectable_difference)
    p = min(max(pooled, delta / 2, 0.01), 0.5)
    result["power"] = stats.samples_needed(diff, delta=delta, alpha=t.alpha, power=t.power,
                                           min_variance=2 * p * (1 - p))
    significant = (result["mcnemar"].get("p_value") is not None and result["mcnemar"]["p_value"] < t.alpha)
    result["samples_needed"] = None if significant else result["power"].get("n_per_arm")
    metrics = {}
    for metric in CONTINUOUS:
        pairs = [(_value(a, metric), _value(b, metric)) for a, b in zip(reference, candidate)]
        pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
        ref = [a for a, _ in pairs]
        cand = [b for _, b in pairs]
        metrics[metric] = {"wilcoxon": stats.wilcoxon_paired(ref, cand), "difference": stats.paired_difference(ref, cand)}
    result["metrics"] = metrics
    cases = {k[0] for k in keys}
    if len(cases) > 1:
        result["clustered"] = stats.clustered_difference(diff, [k[0] for k in keys], alpha=t.alpha)
    else:
        result["clustered"] = None
    return result


def summarize(experiment: Experiment) -> dict:
    """Per-arm and per-case statistics and the paired tests against stock; stored on the
    arms, the cases and experiment.results["tests"]. Returns the results."""
    t = thresholds()
    arms = list(Arm.objects.filter(experiment=experiment))
    cases = list(ExperimentCase.objects.filter(experiment=experiment))
    rows = list(Sample.objects.filter(arm__experiment=experiment).values(
        "arm_id", "case_id", "index", "degenerate", "severity", "completion_tokens", "finish_reason", "metrics"))
    by_arm: dict[int, dict] = defaultdict(dict)
    for r in rows:
        by_arm[r["arm_id"]][(r["case_id"], r["index"])] = r
    stock = next((a for a in arms if a.role == Arm.Role.STOCK), None)
    tests = []
    with transaction.atomic():
        for arm in arms:
            arm_rows = by_arm.get(arm.pk, {})
            arm_stats = _arm_stats(list(arm_rows.values()))
            arm_stats["cases"] = {str(case.pk): stats.rate_summary([r["degenerate"] for k, r in arm_rows.items()
                                                                    if k[0] == case.pk]) for case in cases}
            Arm.objects.filter(pk=arm.pk).update(stats=arm_stats)
            arm.stats = arm_stats
            if stock is not None and arm.pk != stock.pk:
                comparison = _compare(by_arm.get(stock.pk, {}), arm_rows, t)
                tests.append({"arm_id": arm.pk, "arm": arm.name, "against_id": stock.pk, "against": stock.name,
                              "same_temperature": arm.temperature == stock.temperature, **comparison})
        for case in cases:
            case_stats = {str(arm.pk): stats.rate_summary([r["degenerate"] for k, r in by_arm.get(arm.pk, {}).items()
                                                           if k[0] == case.pk]) for arm in arms}
            ExperimentCase.objects.filter(pk=case.pk).update(stats={"arms": case_stats})
        results = dict(experiment.results or {})
        results["tests"] = tests
        Experiment.objects.filter(pk=experiment.pk).update(results=results)
    experiment.results = results
    return results


# --- divergence ------------------------------------------------------------------------


def _client(arm: Arm) -> BackendClient:
    return BackendClient.for_backend(arm.backend, attempts=settings.BACKEND_ATTEMPTS, backoff=settings.BACKEND_BACKOFF,
                                     timeout=settings.BACKEND_TIMEOUT)


def _save_divergence(*, experiment, case, arm, kind, sample_index=-1, method, note="", reference=None, candidate=None,
                     positions=None, summary=None, threshold=0.1) -> Divergence:
    summary = summary or {}
    row, _ = Divergence.objects.update_or_create(
        case=case, arm=arm, kind=kind, sample_index=sample_index,
        defaults=dict(experiment=experiment, method=method, note=note[:2000], reference_kernel=reference or {},
                      candidate_kernel=candidate or {}, kl_threshold=threshold, positions=positions or [],
                      summary=summary, mean_kl=summary.get("mean"), max_kl=summary.get("max"),
                      top1_agreement=summary.get("top1_agreement"),
                      first_over_threshold=summary.get("first_over_threshold")))
    return row


def _exact_divergence(client: BackendClient, messages: list, response: str, reference: dict, candidate: dict,
                      threshold: float) -> tuple[list[dict], dict]:
    data = client.divergence({"messages": messages, "continuation": response, "reference": reference,
                              "candidate": candidate, "kl_threshold": threshold, "top_k": 0})
    positions = [{"position": p["position"], "token": p["token"], "kl": p["kl"], "top1_agree": p["top1_agree"]}
                 for p in data["positions"]]
    summary = stats.kl_summary([p["kl"] for p in positions], threshold=threshold)
    summary["top1_agreement"] = data["summary"]["top1_agreement"]
    return positions, summary


def _case_divergence(experiment: Experiment, case: ExperimentCase, arms: list[Arm], t: Thresholds) -> None:
    stock = next((a for a in arms if a.role == Arm.Role.STOCK), None)
    if stock is None or stock.backend is None:
        return
    transcript = case.transcript
    messages = selectors.conversation(case=case)
    # Teacher forcing costs a prefill-sized pass per setting: long responses are scored on their
    # head (EXPERIMENT_DIVERGENCE_MAX_CHARS); a kernel that diverges shows it early (position 97 in SGLang #25790).
    response = content_codec.decode(transcript.response, transcript.content_encoding)[:settings.EXPERIMENT_DIVERGENCE_MAX_CHARS]
    stock_client = _client(stock)
    done: dict[tuple, Divergence] = {}
    targets = [(stock, Divergence.Kind.NOISE_FLOOR)] + [(a, Divergence.Kind.KERNEL) for a in arms if a.pk != stock.pk]
    try:
        for arm, kind in targets:
            if arm.backend is None:
                continue
            key = (arm.backend_id, tuple(sorted(arm.kernel.items())), kind)
            common = dict(experiment=experiment, case=case, arm=arm, kind=kind, reference=stock.kernel,
                          candidate=arm.kernel, threshold=t.position_kl)
            if key in done:
                twin = done[key]
                _save_divergence(**common, method=twin.method, note=twin.note, positions=twin.positions,
                                 summary=twin.summary)
                continue
            if not response:
                row = _save_divergence(**common, method=Divergence.Method.UNAVAILABLE,
                                       note="the original response is empty: nothing to teacher-force")
            elif stock_client.bundled and arm.backend_id == stock.backend_id:
                try:
                    positions, summary = _exact_divergence(stock_client, messages, response, stock.kernel, arm.kernel,
                                                           t.position_kl)
                    row = _save_divergence(**common, method=Divergence.Method.EXACT, positions=positions, summary=summary,
                                           note="full next-token distributions, teacher-forced on the original response")
                except BackendError as exc:
                    row = _save_divergence(**common, method=Divergence.Method.UNAVAILABLE, note=str(exc))
            else:
                arm_client = _client(arm)
                try:
                    method, note, positions, summary = external.topk_divergence(
                        stock_client, arm_client, stock.backend, arm.backend, messages, response, t.position_kl,
                        stock_kernel=stock.kernel, arm_kernel=arm.kernel)
                finally:
                    arm_client.close()
                row = _save_divergence(**common, method=method, note=note, positions=positions, summary=summary)
            done[key] = row
            Experiment.objects.filter(pk=experiment.pk).update(heartbeat_at=timezone.now())
    finally:
        stock_client.close()


def _decode_prefill(experiment: Experiment, case: ExperimentCase, arms: list[Arm], t: Thresholds) -> None:
    """Each arm's first samples: the logprob of each token as decoded against the same tokens
    re-scored teacher-forced on the same backend and setting (the prefill path)."""
    count = settings.EXPERIMENT_DECODE_CHECK_SAMPLES
    if count <= 0:
        return
    messages = selectors.conversation(case=case)
    for arm in arms:
        if arm.backend is None:
            continue
        samples = list(Sample.objects.filter(arm=arm, case=case).order_by("index")[:count])
        client = _client(arm)
        try:
            for sample in samples:
                common = dict(experiment=experiment, case=case, arm=arm, kind=Divergence.Kind.DECODE_PREFILL,
                              sample_index=sample.index, reference=arm.kernel, candidate=arm.kernel,
                              threshold=t.decode_prefill_logprob)
                limit = settings.EXPERIMENT_RESCORE_MAX_TOKENS
                logprobs = (content_codec.decode(sample.logprobs, sample.content_encoding) or [])[:limit]
                decoded = [e.get("logprob") for e in logprobs]
                if not decoded or any(v is None for v in decoded):
                    _save_divergence(**common, method=Divergence.Method.UNAVAILABLE,
                                     note="the backend returned no logprobs for this sample")
                    continue
                if client.bundled and sample.token_ids:
                    try:
                        data = client.divergence({"messages": messages, "continuation_ids": sample.token_ids[:limit],
                                                  "reference": arm.kernel, "candidate": arm.kernel, "top_k": 0})
                    except BackendError as exc:
                        _save_divergence(**common, method=Divergence.Method.UNAVAILABLE, note=str(exc))
                        continue
                    rescored = [p["reference_logprob"] for p in data["positions"]]
                    tokens = [p["token"] for p in data["positions"]]
                    method, note = Divergence.Method.EXACT, "decode logprobs vs teacher-forced re-score of the same token ids"
                else:
                    text = content_codec.decode(sample.text, sample.content_encoding)
                    method, note, tokens, rescored, decoded = external.rescore(
                        client, arm.backend, messages, text, logprobs)
                    if method == Divergence.Method.UNAVAILABLE:
                        _save_divergence(**common, method=method, note=note)
                        continue
                n = min(len(decoded), len(rescored))
                summary = stats.logprob_agreement(decoded[:n], rescored[:n], threshold=t.decode_prefill_logprob)
                positions = [{"position": i, "token": tokens[i] if i < len(tokens) else "", "decode": decoded[i],
                              "rescored": rescored[i]} for i in range(n)]
                _save_divergence(**common, method=method, note=note, positions=positions, summary=summary)
        finally:
            client.close()


def divergence_facts(experiment: Experiment, arms: list[Arm]) -> tuple[list[dict], list[dict]]:
    """The worst case per arm (suites: the largest mean KL over cases), as the diagnosis reads it."""
    rows = list(Divergence.objects.filter(experiment=experiment))
    floors = {r.case_id: (r.summary or {}).get("mean") for r in rows if r.kind == Divergence.Kind.NOISE_FLOOR}
    kernel, decode = {}, {}
    for r in rows:
        s = r.summary or {}
        if r.kind == Divergence.Kind.KERNEL and s.get("mean") is not None:
            first = s.get("first_over_threshold")
            token = r.positions[first]["token"] if first is not None and first < len(r.positions) else None
            fact = {"arm_id": r.arm_id, "case_id": r.case_id, "mean_kl": s["mean"], "noise_floor": floors.get(r.case_id),
                    "first_over_threshold": first, "token_at_first": token, "method": r.method, "note": r.note}
            if r.arm_id not in kernel or fact["mean_kl"] > kernel[r.arm_id]["mean_kl"]:
                kernel[r.arm_id] = fact
        elif r.kind == Divergence.Kind.DECODE_PREFILL and s.get("mean_abs_diff") is not None:
            first = s.get("first_over_threshold")
            token = r.positions[first]["token"] if first is not None and first < len(r.positions) else None
            fact = {"arm_id": r.arm_id, "mean_abs_diff": s["mean_abs_diff"], "first_over_threshold": first,
                    "token_at_first": token}
            if r.arm_id not in decode or fact["mean_abs_diff"] > decode[r.arm_id]["mean_abs_diff"]:
                decode[r.arm_id] = fact
    return list(kernel.values()), list(decode.values())


def facts(experiment: Experiment, arms: list[Arm], results: dict) -> dict:
    cases = list(ExperimentCase.objects.filter(experiment=experiment).select_related("transcript"))
    temps = [c.transcript.temperature for c in cases if c.transcript.temperature is not None]
    kernel, decode = divergence_facts(experiment, arms)
    return {
        "transcript_temperature": min(temps) if temps else None,
        "original_degenerate": any(c.transcript.degenerate for c in cases),
        "arms": [{"id": a.pk, "name": a.name, "role": a.role, "component": a.component,
                  "profile": a.kernel_profile.name if a.kernel_profile_id else None, "temperature": a.temperature,
                  "rate": (a.stats or {}).get("rate") or {}} for a in arms],
        "comparisons": results.get("tests", []),
        "divergence": kernel,
        "decode_prefill": decode,
    }


def finalize(experiment: Experiment) -> None:
    t = thresholds()
    results = summarize(experiment)
    arms = list(Arm.objects.select_related("backend", "kernel_profile").filter(experiment=experiment))
    cases = list(ExperimentCase.objects.select_related("transcript").filter(experiment=experiment))
    total = Sample.objects.filter(arm__experiment=experiment).count()
    stock = next((a for a in arms if a.role == Arm.Role.STOCK), None)
    if total and stock is not None and Sample.objects.filter(arm=stock).exists():
        for case in cases:
            for step in (_case_divergence, _decode_prefill):
                try:
                    step(experiment, case, arms, t)
                except Exception:  # noqa: BLE001 - divergence is evidence, not the result: keep going
                    logger.exception("%s failed on case %s of experiment %s", step.__name__, case.pk, experiment.pk)
                Experiment.objects.filter(pk=experiment.pk).update(heartbeat_at=timezone.now())
    diagnosis = diagnose(facts(experiment, arms, results), t) if total else {}
    expected = len(arms) * len(cases) * experiment.samples_per_arm
    failed_chunks = list(ExperimentChunk.objects.filter(experiment=experiment, status=ExperimentChunk.Status.FAILED)
                         .values_list("error", flat=True))
    arm_errors = [f"{a.name}: {a.error}" for a in Arm.objects.filter(experiment=experiment).exclude(error="")]
    errors = [e for e in failed_chunks if e] and (arm_errors or failed_chunks)  # a later success clears it
    if total == 0:
        status = Experiment.Status.FAILED
    elif total < expected or errors:
        status = Experiment.Status.PARTIAL
    else:
        status = Experiment.Status.DONE
    error = "; ".join(dict.fromkeys(errors))[:4000]
    if status == Experiment.Status.FAILED and not error:
        error = "no sample was generated"
    Experiment.objects.filter(pk=experiment.pk, status=Experiment.Status.FINALIZING).update(
        status=status, verdict=diagnosis.get("verdict", ""), diagnosis=diagnosis, finished_at=timezone.now(),
        error=error)
