"""The overview (landing page): degenerate rate over time by model and by kernel profile, the top
reasons, flags by status, the share of temperature-0 traffic, recent experiments. Numbers come
from triage.selectors.overview, figures from triage.figures; clicking a point or a bar opens the
transcript list filtered to it."""

from __future__ import annotations

from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from triage import figures, selectors
from triage.experiments import selectors as experiment_selectors


@require_GET
def overview_view(request):
    data = selectors.overview(range_key=request.GET.get("range", "7d"))
    bucket = "hour" if data["hourly"] else "day"
    figs = []
    if data["totals"]["n"]:
        figs = [
            {"id": "fig-by-model", "filter": "model", "html": figures.to_div(
                figures.rate_over_time(data["by_model"], group_label="model", bucket_label=bucket), "fig-by-model")},
            {"id": "fig-by-profile", "filter": "kernel_profile", "html": figures.to_div(
                figures.rate_over_time(data["by_profile"], group_label="kernel profile", bucket_label=bucket),
                "fig-by-profile")},
        ]
        if data["reasons"]:
            figs.append({"id": "fig-reasons", "filter": "reason", "html": figures.to_div(figures.counts_bar(
                data["reasons"], title="Top degeneration reasons", x="reason", y="degenerate transcripts"),
                "fig-reasons")})
        figs.append({"id": "fig-flags", "filter": "flag_status", "html": figures.to_div(figures.counts_bar(
            data["flags"], title="Flags by status", x="status", y="flags", color=figures.NEUTRAL), "fig-flags")})
    return render(request, "triage/overview.html", {
        "o": data, "figures": figs, "ranges": list(selectors.OVERVIEW_RANGES),
        "list_url": reverse("transcript-list"),
        "experiments": experiment_selectors.experiment_list()[:8],
    })
