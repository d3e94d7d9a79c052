"""Reads: transcripts for the API, the export and the pages."""

from __future__ import annotations

import base64
import binascii
import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet
from django.db.models.functions import Substr
from django.shortcuts import get_object_or_404

from triage.models import Flag, KernelProfile, Transcript

# Columns the list and the export never need (the big ones).
HEAVY_FIELDS = ("messages", "logprobs", "metrics")


def transcript_list(*, filters: dict[str, Any] | None = None) -> QuerySet[Transcript]:
    """Transcripts newest first, filtered by the keys of TranscriptFilterInput."""
    filters = filters or {}
    qs = Transcript.objects.select_related("kernel_profile")
    if filters.get("ids") is not None:
        qs = qs.filter(pk__in=filters["ids"])
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


# --- the triage queue -------------------------------------------------------------------

QUEUE_SORTS = {"time": "received_at", "severity": "severity"}  # each tie-broken by id, descending
QUEUE_COUNT_CAP = 1000  # "1,000+ match": a bounded count, never COUNT(*) of the whole filtered table


class InvalidCursor(ValueError):
    """A cursor that is not one this page made (edited, truncated, or from another sort)."""


@dataclass
class QueuePage:
    rows: list[Transcript]
    sort: str
    older: str | None  # cursor of the next page down the order (older, or less severe)
    newer: str | None  # cursor of the page before
    matching: int  # matching rows, counted up to QUEUE_COUNT_CAP + 1
    matching_capped: bool


def queue_cursor(*, sort: str, row: Transcript, direction: str = "older") -> str:
    """The opaque cursor of the page after (older) or before (newer) `row` in a sort's order."""
    key = row.received_at.isoformat() if sort == "time" else row.severity
    raw = json.dumps({"s": sort, "d": direction, "k": key, "id": row.pk}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, *, sort: str) -> tuple[str, Any, int]:
    """(direction, key, id) of a cursor made by queue_cursor for this sort."""
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        direction, key, pk = data["d"], data["k"], data["id"]
        if data["s"] != sort:
            raise InvalidCursor(f"this cursor belongs to the '{data['s']}' sort, not '{sort}'; start from the first page")
        if direction not in ("older", "newer") or isinstance(pk, bool) or not isinstance(pk, int):
            raise ValueError(direction)
        if sort == "time":
            key = datetime.fromisoformat(key)
            if key.tzinfo is None:
                raise ValueError(key)
        elif isinstance(key, bool) or not isinstance(key, (int, float)):
            raise ValueError(key)
    except InvalidCursor:
        raise
    except (ValueError, TypeError, KeyError, UnicodeDecodeError, binascii.Error):
        raise InvalidCursor("the page cursor is not valid (edited or truncated?); start from the first page") from None
    return direction, key, pk


def transcript_queue_page(*, filters: dict[str, Any] | None = None, sort: str = "time", cursor: str | None = None,
                          page_size: int = 50) -> QueuePage:
    """One page of the triage queue: newest first by (received_at, id), or most severe first by
    (severity, id), continued from an opaque cursor (keyset pagination: a page deep in the
    queue costs what the first one does). Three queries: the page (page_size + 1 rows tell
    whether there is more), the flag counts of its rows, and a count capped at QUEUE_COUNT_CAP.
    Raises InvalidCursor."""
    if sort not in QUEUE_SORTS:
        raise ValueError(f"unknown sort {sort!r}; use one of {', '.join(QUEUE_SORTS)}")
    field = QUEUE_SORTS[sort]
    matching = transcript_list(filters=filters).order_by()
    qs = transcript_summaries(filters=filters)
    direction = "older"
    if cursor:
        direction, key, pk = _decode_cursor(cursor, sort=sort)
        if direction == "older":  # rows after (key, pk) in descending order
            # The redundant `field <= key` lets the index bound the scan (an OR alone cannot).
            qs = qs.filter(**{f"{field}__lte": key}).filter(Q(**{f"{field}__lt": key}) | Q(**{field: key, "id__lt": pk}))
        else:
            qs = qs.filter(**{f"{field}__gte": key}).filter(Q(**{f"{field}__gt": key}) | Q(**{field: key, "id__gt": pk}))
    if direction == "older":
        rows = list(qs.order_by(f"-{field}", "-id")[: page_size + 1])
        more = len(rows) > page_size
        rows = rows[:page_size]
        has_older, has_newer = more, bool(cursor)
    else:  # walk up from the cursor, then show the page in the usual order
        rows = list(qs.order_by(field, "id")[: page_size + 1])
        more = len(rows) > page_size
        if not more:  # back at the top: show a full first page rather than a short one
            return transcript_queue_page(filters=filters, sort=sort, page_size=page_size)
        rows = rows[:page_size][::-1]
        has_older, has_newer = True, True
    counts = dict(
        Flag.objects.filter(transcript_id__in=[t.pk for t in rows if t.flagged])
        .values_list("transcript_id").annotate(n=Count("id")).order_by()
    ) if any(t.flagged for t in rows) else {}
    for t in rows:
        t.flag_count = counts.get(t.pk, 0)
    count = matching.values("id")[: QUEUE_COUNT_CAP + 1].count()
    return QueuePage(
        rows=rows, sort=sort, matching=min(count, QUEUE_COUNT_CAP), matching_capped=count > QUEUE_COUNT_CAP,
        older=queue_cursor(sort=sort, direction="older", row=rows[-1]) if rows and has_older else None,
        newer=queue_cursor(sort=sort, direction="newer", row=rows[0]) if rows and has_newer else None,
    )


def queue_choices() -> dict[str, list[str]]:
    """The queue's select options: models seen, kernel profile names."""
    return {"models": _distinct_models(),
            "profiles": list(KernelProfile.objects.order_by("name").values_list("name", flat=True))}


def _distinct_models() -> list[str]:
    """SELECT DISTINCT model, as a skip scan: one index probe (transcript_model) per distinct
    model instead of reading every row — a handful of models over 100,000 rows."""
    from django.db import connection

    table = connection.ops.quote_name(Transcript._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH RECURSIVE seen(model) AS ("
            f" SELECT MIN(model) FROM {table}"
            f" UNION ALL"
            f" SELECT (SELECT MIN(model) FROM {table} WHERE model > seen.model) FROM seen WHERE seen.model IS NOT NULL"
            f") SELECT model FROM seen WHERE model IS NOT NULL"
        )
        return [row[0] for row in cursor.fetchall()]


def transcripts_by_ids(*, ids: list[int]) -> tuple[list[Transcript], list[int]]:
    """(the transcripts found, in the order given; the ids not found)."""
    found = {t.pk: t for t in Transcript.objects.select_related("kernel_profile").filter(pk__in=ids)}
    return [found[i] for i in ids if i in found], [i for i in ids if i not in found]


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
