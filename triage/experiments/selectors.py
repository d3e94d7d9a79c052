"""Reads for experiments: the list, the detail (the API's and the page's one shape), the export.

Progress is derived from the stored samples (one grouped count), so a retried task can
never count twice.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterator

from django.db.models import Count, QuerySet
from django.shortcuts import get_object_or_404

from triage import content_codec
from triage.models import Arm, Divergence, Experiment, ExperimentCase, ExperimentChunk, Sample


def conversation(*, case: ExperimentCase) -> list[dict]:
    """The case's conversation up to the flagged response, as the router sent it (NUL decoded)."""
    transcript = case.transcript
    messages = content_codec.decode(transcript.messages, transcript.content_encoding)
    return [{"role": m.get("role", "user"), "content": m.get("content", "")} for m in messages if isinstance(m, dict)]


def experiment_list(*, status: str | None = None, transcript_id: int | None = None) -> QuerySet[Experiment]:
    qs = Experiment.objects.select_related("created_by").annotate(
        case_count=Count("cases", distinct=True), arm_count=Count("arms", distinct=True))
    if status:
        qs = qs.filter(status=status)
    if transcript_id:
        qs = qs.filter(cases__transcript_id=transcript_id)
    return qs.order_by("-created_at", "-id")


def experiment_get(*, experiment_id: int) -> Experiment:
    return get_object_or_404(Experiment, pk=experiment_id)


def progress(experiment: Experiment, arms: list[Arm], cases: list[ExperimentCase]) -> dict:
    counts = defaultdict(int)
    for arm_id, case_id, n in (Sample.objects.filter(arm__experiment=experiment)
                               .values_list("arm_id", "case_id").annotate(n=Count("id")).order_by()):
        counts[(arm_id, case_id)] = n
    per_case = experiment.samples_per_arm
    per_arm = {arm.pk: {"done": sum(counts[(arm.pk, c.pk)] for c in cases), "total": per_case * len(cases)}
               for arm in arms}
    done = sum(p["done"] for p in per_arm.values())
    total = sum(p["total"] for p in per_arm.values())
    return {"done": done, "total": total, "fraction": (done / total) if total else 0.0, "arms": per_arm,
            "cases": {c.pk: {a.pk: counts[(a.pk, c.pk)] for a in arms} for c in cases}}


def _arm(arm: Arm, progress_of_arm: dict) -> dict:
    return {
        "id": arm.pk, "name": arm.name, "role": arm.role, "component": arm.component or None,
        "profile": arm.kernel_profile.name if arm.kernel_profile_id else None,
        "backend": arm.backend.name if arm.backend_id else None, "kernel": arm.kernel, "sampling": arm.sampling,
        "runtime": arm.runtime, "error": arm.error or None, "progress": progress_of_arm, "stats": arm.stats,
    }


def _divergence(row: Divergence, *, positions: bool) -> dict:
    out = {"case_id": row.case_id, "arm_id": row.arm_id, "arm": row.arm.name, "kind": row.kind,
           "sample_index": row.sample_index if row.sample_index >= 0 else None, "method": row.method,
           "note": row.note, "reference_kernel": row.reference_kernel, "candidate_kernel": row.candidate_kernel,
           "threshold": row.kl_threshold, "summary": row.summary}
    first = (row.summary or {}).get("first_over_threshold")
    if first is not None and first < len(row.positions or []):
        out["token_at_first_over_threshold"] = row.positions[first].get("token")
    if positions:
        out["positions"] = row.positions
    return out


def experiment_detail(*, experiment: Experiment, positions: bool = True) -> dict[str, Any]:
    """Everything about an experiment: status, progress per arm, arms with their stats, the
    tests, divergence, verdict and evidence."""
    arms = list(Arm.objects.select_related("kernel_profile", "backend").filter(experiment=experiment))
    cases = list(ExperimentCase.objects.select_related("transcript").filter(experiment=experiment))
    prog = progress(experiment, arms, cases)
    chunks = defaultdict(int)
    for status, n in ExperimentChunk.objects.filter(experiment=experiment).values_list("status").annotate(n=Count("id")).order_by():
        chunks[status] = n
    divergences = Divergence.objects.select_related("arm").filter(experiment=experiment).order_by("case_id", "arm_id", "kind",
                                                                                                   "sample_index")
    results = experiment.results or {}
    return {
        "id": experiment.pk, "name": experiment.name, "status": experiment.status,
        "created_at": experiment.created_at, "started_at": experiment.started_at, "finished_at": experiment.finished_at,
        "created_by": experiment.created_by.get_username() if experiment.created_by_id else (experiment.created_via or None),
        "samples_per_arm": experiment.samples_per_arm, "base_seed": experiment.base_seed,
        "chunk_size": experiment.chunk_size, "ablate": experiment.ablate, "selection": experiment.selection or None,
        "error": experiment.error or None,
        "progress": {"done": prog["done"], "total": prog["total"], "fraction": prog["fraction"],
                     "chunks": dict(chunks)},
        "cases": [{"id": c.pk, "transcript_id": c.transcript_id, "request_id": c.transcript.request_id,
                   "model": c.transcript.model, "temperature": c.transcript.temperature,
                   "original_degenerate": c.transcript.degenerate, "max_tokens": c.max_tokens,
                   "progress": prog["cases"][c.pk], "stats": c.stats} for c in cases],
        "arms": [_arm(a, prog["arms"][a.pk]) for a in arms],
        "tests": results.get("tests", []),
        "divergence": [_divergence(d, positions=positions) for d in divergences],
        "verdict": experiment.verdict or None,
        "diagnosis": experiment.diagnosis or None,
    }


def experiment_samples(*, experiment: Experiment) -> Iterator[dict]:
    """Every sample with its seed, text (byte-exact) and metrics, arm by arm."""
    rows = (Sample.objects.filter(arm__experiment=experiment).select_related("arm", "case")
            .order_by("case__position", "arm__position", "index"))
    for s in rows.iterator(chunk_size=500):
        yield {
            "case_id": s.case_id, "transcript_id": s.case.transcript_id, "arm": s.arm.name, "arm_id": s.arm_id,
            "role": s.arm.role, "index": s.index, "seed": s.seed,
            "text": content_codec.decode(s.text, s.content_encoding), "finish_reason": s.finish_reason,
            "completion_tokens": s.completion_tokens, "degenerate": s.degenerate, "severity": s.severity,
            "reasons": content_codec.decode(s.reasons, s.content_encoding),
            "metrics": content_codec.decode(s.metrics, s.content_encoding),
            "token_ids": s.token_ids, "logprobs": content_codec.decode(s.logprobs, s.content_encoding),
            "latency_ms": s.latency_ms,
        }
