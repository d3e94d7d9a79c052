"""Flags: a mark on a bad transcript (by a person in the pages, or an API key) and its status
moving forward: new → investigating → diagnosed → resolved, never back. Ingestion makes the
automatic flags itself (triage.services.ingest, in the same insert); experiments move open
flags forward (flags_advance)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from triage.models import Flag, Transcript


class FlagTransitionError(Exception):
    """A flag status change that goes backwards (new → investigating → diagnosed → resolved)."""


_STATUS_ORDER = {status: rank for rank, status in enumerate(Flag.Status.values)}


@transaction.atomic
def flag_create(*, transcript: Transcript, reason: str, note: str = "", user=None, source: str = "") -> Flag:
    if reason not in Flag.Reason.values:
        raise ValueError(f"unknown flag reason {reason!r}; use one of {', '.join(Flag.Reason.values)}")
    flag = Flag.objects.create(
        transcript=transcript, reason=reason, note=note,
        user=user if getattr(user, "pk", None) else None, source=source,
    )
    if not transcript.flagged:
        Transcript.objects.filter(pk=transcript.pk).update(flagged=True)
        transcript.flagged = True
    return flag


@transaction.atomic
def flags_create_bulk(*, transcripts: list[Transcript], reason: str, note: str = "", user=None,
                      source: str = "") -> list[Flag]:
    """One flag on each transcript (the queue's bulk flag): two queries whatever the count."""
    if reason not in Flag.Reason.values:
        raise ValueError(f"unknown flag reason {reason!r}; use one of {', '.join(Flag.Reason.values)}")
    if not transcripts:
        raise ValueError("no transcripts to flag")
    user = user if getattr(user, "pk", None) else None
    flags = Flag.objects.bulk_create([
        Flag(transcript=t, reason=reason, note=note, user=user, source=source) for t in transcripts
    ])
    Transcript.objects.filter(pk__in=[t.pk for t in transcripts], flagged=False).update(flagged=True)
    for t in transcripts:
        t.flagged = True
    return flags


@transaction.atomic
def flag_update_status(*, flag: Flag, status: str, note: str | None = None, user=None) -> Flag:
    """Move a flag forward: new → investigating → diagnosed → resolved (steps may be
    skipped, e.g. a false alarm goes straight to resolved; going back is refused)."""
    if status not in _STATUS_ORDER:
        raise ValueError(f"unknown flag status {status!r}; use one of {', '.join(Flag.Status.values)}")
    flag = Flag.objects.select_for_update().get(pk=flag.pk)
    if _STATUS_ORDER[status] < _STATUS_ORDER[flag.status]:
        allowed = [s for s in Flag.Status.values if _STATUS_ORDER[s] >= _STATUS_ORDER[flag.status]]
        raise FlagTransitionError(
            f"flag {flag.pk} is '{flag.status}' and cannot go back to '{status}'; allowed: {', '.join(allowed)} "
            "(create a new flag to reopen)."
        )
    flag.status = status
    fields = ["status", "updated_at"]
    if note is not None:
        flag.note = note
        fields.append("note")
    flag.save(update_fields=fields)
    return flag


def flags_advance(*, transcript_ids: list[int], to: str) -> int:
    """Move the transcripts' open flags forward to ``to`` (never back): an experiment started on
    them → investigating; one that ended with a decisive verdict → diagnosed. Resolving stays a
    person's call. Returns the number of flags moved."""
    order = Flag.Status.values
    earlier = order[:order.index(to)]
    if not transcript_ids or not earlier:
        return 0
    return Flag.objects.filter(transcript_id__in=transcript_ids, status__in=earlier).update(
        status=to, updated_at=timezone.now())
