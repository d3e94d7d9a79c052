"""Reads: transcripts for the API, the export and the pages."""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, OuterRef, Prefetch, QuerySet
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
