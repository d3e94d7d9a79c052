"""Experiment pages: the list, one experiment (live progress by htmx polling, then the figures,
the tests, the diagnosis and the samples side by side), its self-contained HTML report, and
starting one from a transcript (engineers). Reads go through experiments.selectors, writes
through experiments.services; the figures are built by triage.figures."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import plotly
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_POST

from triage import diagnosis, figures, rendering
from triage.experiments import arms as arm_planning
from triage.experiments import selectors, services
from triage.experiments.arms import ExperimentInputError
from triage.models import Experiment, KernelProfile, Transcript
from triage.roles import can_experiment

RUNNING = {"pending", "running", "finalizing"}
SAMPLE_ROWS = 24          # seeds shown side by side on the page (the export has them all)
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


@require_GET
def experiment_list_view(request):
    rows = selectors.experiment_list()[:200]
    return render(request, "triage/experiment_list.html", {
        "experiments": rows, "can_experiment": can_experiment(request.user)})


def _figures(detail: dict, samples: list[dict]) -> list[dict]:
    arms = detail["arms"]
    out = [{"id": "fig-rate", "html": figures.to_div(figures.rate_per_arm(arms), "fig-rate")}]
    for metric in ("seq_rep_4", "severity", "completion_tokens"):
        fid = f"fig-{metric.replace('_', '-')}"
        out.append({"id": fid, "html": figures.to_div(figures.distribution(samples, arms, metric), fid)})
    if any(d.get("positions") for d in detail["divergence"]):
        stock = next((a for a in arms if a["role"] == "stock"), None)
        same = stock is not None and all(a["kernel"] == stock["kernel"] for a in arms)
        out.append({"id": "fig-kl", "html": figures.to_div(figures.kl_positions(detail["divergence"], arms), "fig-kl"),
                    "wide": True,
                    "note": ("Every arm runs the stock kernels, so KL is 0 at every token: the line is flat by "
                             "construction. Add an arm with another kernel profile or kernel overrides to test "
                             "the kernels.") if same else ""})
    if len(detail["cases"]) > 1:
        out.append({"id": "fig-cases", "html": figures.to_div(figures.case_rates(detail["cases"], arms), "fig-cases"),
                    "wide": True})
    return out


def _sample_blocks(sample: dict) -> list[dict]:
    """The sample as on the transcript page: code fences as code blocks, highlights cut to fit."""
    from triage.views import highlight_segments

    text = sample["text"]
    segments = highlight_segments(text, (sample["metrics"] or {}).get("highlights") or [])
    return rendering.blocks_with_highlights(text.replace("\x00", "\u2400"), segments)


def _side_by_side(detail: dict, samples: list[dict]) -> list[dict]:
    """One row per (case, seed) across arms, each sample as text and code blocks with its
    highlights, and a word diff against the stock sample of the same seed (plain text: a
    changed word may sit on a fence line, and the diff is read for what changed, not layout)."""
    names = [a["name"] for a in detail["arms"]]
    stock = next((a["name"] for a in detail["arms"] if a["role"] == "stock"), None)
    rows: dict[tuple, dict] = {}
    for s in samples:
        key = (s["case_id"], s["index"])
        row = rows.setdefault(key, {"case_id": s["case_id"], "index": s["index"], "seed": s["seed"], "cells": {}})
        row["cells"][s["arm"]] = s
    out = []
    for key in sorted(rows)[:SAMPLE_ROWS]:
        row = rows[key]
        base = row["cells"].get(stock)
        cells = []
        for name in names:
            s = row["cells"].get(name)
            if s is None:
                cells.append(None)
                continue
            cell = {"arm": name, "degenerate": s["degenerate"], "severity": s["severity"],
                    "finish_reason": s["finish_reason"], "tokens": s["completion_tokens"],
                    "reasons": [r.get("message", r) if isinstance(r, dict) else r for r in (s["reasons"] or [])][:3],
                    "blocks": _sample_blocks(s)}
            if base is not None and name != stock:
                cell["diff"] = _word_diff(base["text"], s["text"])
            cells.append(cell)
        out.append({"case_id": row["case_id"], "seed": row["seed"], "index": row["index"], "cells": cells})
    return out


def _word_diff(a: str, b: str, limit: int = 4000) -> list[dict]:
    """Words of b marked as kept / inserted against a (what the stock sample of the same seed
    said), first ``limit`` characters."""
    aw, bw = a[:limit].split(" "), b[:limit].split(" ")
    out = []
    for op, _, _, j1, j2 in difflib.SequenceMatcher(a=aw, b=bw, autojunk=False).get_opcodes():
        if j2 > j1:
            out.append({"text": " ".join(bw[j1:j2]) + " ", "changed": op != "equal"})
    return out


def verdict_text(verdict: str | None) -> dict:
    """The verdict in words and what to do next (diagnosis.VERDICTS), for a newcomer."""
    title, next_step = diagnosis.VERDICTS.get(verdict or "", ("", ""))
    return {"title": title, "next": next_step}


def _context(request, experiment: Experiment) -> dict:
    # (while it runs the page shows progress only: no KL positions to load on every poll)
    with_positions = experiment.status not in RUNNING
    detail = selectors.experiment_detail(experiment=experiment, positions=with_positions)
    running = detail["status"] in RUNNING
    if not running and not with_positions:  # (it ended meanwhile)
        detail = selectors.experiment_detail(experiment=experiment)
    ctx = {"e": detail, "running": running, "can_experiment": can_experiment(request.user),
           "verdict": verdict_text(detail.get("verdict"))}
    if not running:
        samples = list(selectors.experiment_samples(experiment=experiment))
        ctx["figures"] = _figures(detail, samples)
        ctx["rows"] = _side_by_side(detail, samples)
        ctx["arm_names"] = [a["name"] for a in detail["arms"]]
    return ctx


@require_GET
def experiment_detail_view(request, pk: int):
    experiment = get_object_or_404(Experiment, pk=pk)
    return render(request, "triage/experiment_detail.html", _context(request, experiment))


@require_GET
def experiment_progress_view(request, pk: int):
    """The live part of the page (htmx polls it while the experiment runs): progress per arm;
    once the experiment has ended, the whole results section, which replaces it."""
    experiment = get_object_or_404(Experiment, pk=pk)
    return render(request, "triage/_experiment_body.html", _context(request, experiment))


@require_GET
def experiment_report_view(request, pk: int):
    """One self-contained HTML file (plotly.js, the figures and the data inlined): opens offline,
    to attach to an incident ticket."""
    experiment = get_object_or_404(Experiment, pk=pk)
    ctx = _context(request, experiment)
    ctx["report"] = True
    ctx["plotly_js"] = PLOTLY_JS.read_text(encoding="utf-8")
    data = {k: v for k, v in ctx["e"].items() if k not in ("created_at", "started_at", "finished_at")}
    ctx["data_json"] = json.dumps(data, default=str).replace("</", "<\\/")
    html = render_to_string("triage/experiment_report.html", ctx, request=request)
    response = HttpResponse(html, content_type="text/html; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="experiment-{experiment.pk}-report.html"'
    return response


def start_form_defaults(transcript: Transcript) -> list[dict]:
    """The default arms of a transcript as editable rows (profile, temperature, kernel)."""
    plans = arm_planning.default_arms([transcript], fallback=arm_planning.default_backend())
    return [{"name": p.name, "profile": p.profile.name if p.profile else "", "temperature": p.sampling.get("temperature"),
             "kernel": json.dumps(p.kernel, sort_keys=True) if p.profile is None else ""} for p in plans]


@require_POST
def experiment_start_view(request, transcript_pk: int):
    if not can_experiment(request.user):
        raise PermissionDenied("Only engineers may start experiments.")
    transcript = get_object_or_404(Transcript, pk=transcript_pk)
    post = request.POST
    arms, errors = [], []
    for i in range(int(post.get("arm_count", 0) or 0)):
        name = (post.get(f"arm-{i}-name") or "").strip()
        if not name:
            continue
        arm = {"name": name}
        profile = (post.get(f"arm-{i}-profile") or "").strip()
        if profile:
            arm["profile"] = profile
        kernel = (post.get(f"arm-{i}-kernel") or "").strip()
        if kernel:
            try:
                arm["kernel"] = json.loads(kernel)
            except json.JSONDecodeError as exc:
                errors.append(f"arm {name}: kernel is not JSON ({exc.msg})")
        temperature = (post.get(f"arm-{i}-temperature") or "").strip()
        if temperature:
            try:
                arm["temperature"] = float(temperature)
            except ValueError:
                errors.append(f"arm {name}: temperature must be a number, got {temperature!r}")
        arms.append(arm)

    def _int(field):
        raw = (post.get(field) or "").strip()
        if not raw:
            return None
        try:
            return int(raw)
        except ValueError:
            errors.append(f"{field} must be an integer, got {raw!r}")
            return None

    samples, max_tokens = _int("samples"), _int("max_tokens")
    if not errors:
        try:
            experiment = services.experiment_start(
                transcripts=[transcript.pk], arms=arms or None, samples=samples, max_tokens=max_tokens,
                ablate=post.get("ablate") in ("1", "on", "true"), user=request.user, via="ui")
            return redirect("experiment-detail", pk=experiment.pk)
        except ExperimentInputError as exc:
            errors.extend(f"{k}: {v}" for k, v in exc.errors.items())
    messages.error(request, "Experiment not started — " + "; ".join(errors), extra_tags="experiment")
    return redirect(reverse("transcript-detail", args=[transcript.pk]) + "#start-experiment")


def profiles_for_form():
    return list(KernelProfile.objects.order_by("name").values_list("name", flat=True))
