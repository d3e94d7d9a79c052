"""Reads: transcripts for the API, the export and the pages."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet
from django.db.models.functions import Substr
from django.shortcuts import get_object_or_404

from triage.models import Flag, Transcript

# Columns the list and the export never need (the big ones).
HEAVY_FIELDS = ("messages", "logprobs", "metrics")


def transcript_list(*, filters: dict[str, Any] | None = None) -> QuerySet[Transcript]:
    """Transcripts newest first, filtered by the keys of TranscriptFilterInput."""
    filters = filters or {}
    qs = Transcript.objects.select_related("kernel_profile")
    if filters.get("degenerate") is not None:
        qs = qs.filter(degenerate=filters["degenerate"])
    if filters.get("flagged") is not None:
        qs = qs.filter(flagged=filters["flagged"])
    if filters.get("flag_status"):
        qs = qs.filter(Exists(Flag.objects.filter(transcript=OuterRef("pk"), status=filters["flag_status"])))
    if filters.get("model"):
        qs = qs.filter(model=filters["model"])
    if filters.get("kernel_profile"):
        qs = qs.filter(kernel_profile__name=filters["kernel_profile"])
    if filters.get("source"):
        qs = qs.filter(source=filters["source"])
    if filters.get("temperature_min") is not None:
        qs = qs.filter(temperature__gte=filters["temperature_min"])
    if filters.get("temperature_max") is not None:
        qs = qs.filter(temperature__lte=filters["temperature_max"])
    if filters.get("received_after"):
        qs = qs.filter(received_at__gte=filters["received_after"])
    if filters.get("received_before"):
        qs = qs.filter(received_at__lt=filters["received_before"])
    if filters.get("q"):
        qs = qs.filter(response__icontains=filters["q"])
    if filters.get("reason"):
        from django.db import connection

        if connection.vendor == "postgresql":  # jsonb containment (uses no text scan)
            qs = qs.filter(reasons__contains=[{"code": filters["reason"]}])
        else:
            qs = qs.filter(reasons__icontains=f'"code": "{filters["reason"]}"')
    return qs.order_by("-received_at", "-id")


def transcript_summaries(*, filters: dict[str, Any] | None = None, preview_chars: int = 200) -> QuerySet[Transcript]:
    """Like transcript_list without the big columns; `response_head` holds enough of the
    response for a preview (twice the characters: escaped content can be up to 2× longer)."""
    return (
        transcript_list(filters=filters)
        .defer(*HEAVY_FIELDS, "response")
        .annotate(response_head=Substr("response", 1, 2 * preview_chars + 2))
    )


def transcript_get(*, transcript_id: int) -> Transcript:
    """One transcript with its flags (raises Http404)."""
    qs = Transcript.objects.select_related("kernel_profile").prefetch_related(
        Prefetch("flags", queryset=Flag.objects.select_related("user"))
    )
    return get_object_or_404(qs, pk=transcript_id)


def flag_get(*, transcript_id: int, flag_id: int) -> Flag:
    return get_object_or_404(Flag.objects.select_related("user"), pk=flag_id, transcript_id=transcript_id)


# --- overview ---------------------------------------------------------------------------

OVERVIEW_RANGES = {"24h": 1, "7d": 7, "30d": 30}
GREEDY_TEMPERATURE = 0.05
REASON_SAMPLE = 5000  # the newest degenerate transcripts whose reasons are counted
WEAK_REASONS = frozenset(("runaway", "unbalanced_fence", "leaked_end_marker", "empty"))


def overview(*, range_key: str = "7d", now=None) -> dict[str, Any]:
    """The landing page's numbers over a time range: degenerate rate per hour (≤ 1 day) or day,
    by model and by kernel profile, with counts; the top degeneration reasons; flags by status;
    the share of temperature-0 traffic. A bounded number of queries whatever the table's size."""
    from django.db.models.functions import TruncDay, TruncHour
    from django.utils import timezone

    days = OVERVIEW_RANGES.get(range_key, 7)
    now = now or timezone.now()
    since = now - timezone.timedelta(days=days)
    bucket = TruncHour("received_at") if days <= 1 else TruncDay("received_at")
    qs = Transcript.objects.filter(received_at__gte=since)
    totals = qs.aggregate(n=Count("id"), degenerate=Count("id", filter=Q(degenerate=True)),
                          greedy=Count("id", filter=Q(temperature__lte=GREEDY_TEMPERATURE)),
                          with_temperature=Count("id", filter=Q(temperature__isnull=False)))

    def series(field: str) -> list[dict]:
        rows = (qs.annotate(bucket=bucket).values("bucket", field)
                .annotate(n=Count("id"), degenerate=Count("id", filter=Q(degenerate=True))).order_by("bucket"))
        return [{"bucket": r["bucket"], "group": r[field] or "", "n": r["n"], "degenerate": r["degenerate"]}
                for r in rows]

    reasons: dict[str, int] = defaultdict(int)
    for rs in qs.filter(degenerate=True).order_by("-received_at").values_list("reasons", flat=True)[:REASON_SAMPLE]:
        for code in {r.get("code") for r in rs or [] if isinstance(r, dict)} - WEAK_REASONS - {None}:
            reasons[code] += 1
    flags = dict(Flag.objects.values_list("status").annotate(n=Count("id")).order_by())
    return {
        "range": range_key if range_key in OVERVIEW_RANGES else "7d", "since": since, "hourly": days <= 1,
        "totals": totals,
        "greedy_share": (totals["greedy"] / totals["with_temperature"]) if totals["with_temperature"] else None,
        "by_model": series("model"), "by_profile": series("kernel_profile__name"),
        "reasons": sorted(reasons.items(), key=lambda kv: -kv[1])[:10],
        "flags": [(s, flags.get(s, 0)) for s in Flag.Status.values],
    }
