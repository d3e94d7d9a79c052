"""Re-analysis: the verdict of stored transcripts under the detector as it is now.

A transcript keeps the verdict of the analysis version it was ingested under
(``metrics["version"]``); after the detector changes, ``manage.py reanalyze`` brings the older
ones up to date. Each changed verdict moves the automatic flags the way ingestion would have set
them: a transcript now found degenerate gets an automatic flag (and ``flagged``); one no longer
found degenerate has its automatic flags that nobody has acted on (status ``new``) resolved with a
note, and stays ``flagged`` only while it has another open flag. Flags people made, and automatic
flags they moved forward, are never touched.

- A failed analysis changes nothing but the transcript's warnings: the old verdict, metrics and
  flags stay, and the transcript is counted as failed.
- Each batch is re-read inside its transaction with its rows locked (``SELECT … FOR UPDATE SKIP
  LOCKED`` on PostgreSQL), so a flag made meanwhile is not overwritten and two runs at once do
  not both flag one transcript; only the verdict columns are written, ``flagged`` only for the
  verdicts that changed.
- Transcripts judged by a newer version than this code's (after a rollback) are left alone.
- Experiment samples are not re-analysed: their verdicts are what the experiment's statistics were
  computed from.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q, Value
from django.db.models.functions import Concat
from django.utils import timezone

from triage import content_codec
from triage.degeneration import VERSION
from triage.models import Flag, Transcript
from triage.services.ingest import auto_flag, escape_verdict, verdict_warnings
from triage.services.metrics import transcript_metrics

_VERDICT_FIELDS = ["metrics", "degenerate", "severity", "reasons", "warnings"]
_FAILED_PREFIX = "metrics failed"


@dataclass
class ReanalysisSummary:
    version: str
    examined: int = 0
    changed: int = 0             # verdicts that flipped
    now_degenerate: int = 0
    no_longer_degenerate: int = 0
    failed: int = 0              # analyses that raised (the old verdict kept, the error in warnings)
    skipped_newer: int = 0       # judged by a newer version than this code's: left alone
    flags_created: int = 0       # (with --dry-run: that would be)
    flags_resolved: int = 0
    dry_run: bool = False
    examples: list[dict] = field(default_factory=list)  # the first changed verdicts

    def to_dict(self) -> dict:
        return asdict(self)


def transcripts_to_reanalyze(*, source: str | None = None, everything: bool = False):
    """The transcripts whose verdict is not the current analysis version's (all with
    ``everything``), oldest id first."""
    qs = Transcript.objects.all()
    if source:
        qs = qs.filter(source=source)
    if not everything:
        qs = qs.filter(~Q(metrics__version=VERSION) | Q(metrics__version__isnull=True))
    return qs.order_by("id")


def transcripts_reanalyze(*, source: str | None = None, everything: bool = False, batch: int = 500,
                          dry_run: bool = False, progress=None, max_examples: int = 10) -> ReanalysisSummary:
    """Re-analyse the selected transcripts in batches of ``batch`` (each batch one transaction,
    its rows locked; keyset pages on id, so memory stays bounded); ``progress(n)`` is called after
    each batch. With ``dry_run`` nothing is written and the summary says what would change."""
    if batch < 1:
        raise ValueError(f"batch must be at least 1 (got {batch})")
    summary = ReanalysisSummary(version=VERSION, dry_run=dry_run)
    qs = transcripts_to_reanalyze(source=source, everything=everything)
    last_id = 0
    while True:
        ids = list(qs.filter(id__gt=last_id).values_list("id", flat=True)[:batch])
        if not ids:
            break
        last_id = ids[-1]
        with transaction.atomic():
            # (re-read under lock: a row another run holds is skipped, one it has just brought
            # up to date no longer matches)
            rows = list(qs.filter(id__in=ids).select_for_update(skip_locked=True))
            _reanalyze_batch(rows, summary, dry_run=dry_run, max_examples=max_examples)
        if progress is not None:
            progress(len(ids))
    return summary


def _newer(version) -> bool:
    try:
        return int(version) > int(VERSION)
    except (TypeError, ValueError):
        return False


def _reanalyze_batch(rows: list[Transcript], summary: ReanalysisSummary, *, dry_run: bool,
                     max_examples: int) -> None:
    now_bad, now_good, write = [], [], []
    for t in rows:
        if _newer((t.metrics or {}).get("version")):
            summary.skipped_newer += 1
            continue
        enc = t.content_encoding
        verdict = transcript_metrics(
            text=content_codec.decode(t.response, enc), finish_reason=t.finish_reason,
            messages=content_codec.decode(t.messages, enc), logprobs=content_codec.decode(t.logprobs, enc))
        summary.examined += 1
        old_warnings = [w for w in (t.warnings or []) if not str(w).startswith(_FAILED_PREFIX)]
        if "error" in verdict["metrics"]:
            # keep what the last analysis that worked said; record the failure
            summary.failed += 1
            t.warnings = old_warnings + [verdict["metrics"]["error"]]
            write.append(t)
            continue
        if verdict["degenerate"] != t.degenerate:
            summary.changed += 1
            (now_bad if verdict["degenerate"] else now_good).append(t)
            if len(summary.examples) < max_examples:
                summary.examples.append({
                    "id": t.id, "request_id": t.request_id, "was": t.degenerate, "now": verdict["degenerate"],
                    "version_was": (t.metrics or {}).get("version"),
                    "reasons": [r.get("code") for r in verdict["reasons"] if isinstance(r, dict)][:3]})
        warnings = verdict_warnings(temperature=t.temperature, verdict=verdict)
        t.warnings = warnings + [w for w in old_warnings if w not in warnings]
        if enc == content_codec.NUL_ESCAPED:
            verdict = escape_verdict(verdict)
        t.metrics, t.degenerate, t.severity = verdict["metrics"], verdict["degenerate"], verdict["severity"]
        t.reasons = verdict["reasons"]
        write.append(t)
    summary.now_degenerate += len(now_bad)
    summary.no_longer_degenerate += len(now_good)
    stale = Flag.objects.filter(transcript_id__in=[t.id for t in now_good], reason=Flag.Reason.AUTO,
                                status=Flag.Status.NEW)
    if dry_run:
        summary.flags_created += len(now_bad)
        summary.flags_resolved += stale.count() if now_good else 0
        return
    Transcript.objects.bulk_update(write, _VERDICT_FIELDS)
    # newly degenerate: the automatic flag ingestion would have made
    flags = [auto_flag(t.id, t, note=f" (re-analysis, version {VERSION})") for t in now_bad]
    Flag.objects.bulk_create(flags)
    summary.flags_created += len(flags)
    if now_bad:
        Transcript.objects.filter(id__in=[t.id for t in now_bad]).update(flagged=True)
    if now_good:
        summary.flags_resolved += stale.update(
            status=Flag.Status.RESOLVED, updated_at=timezone.now(),
            note=Concat(F("note"), Value(f"; resolved by re-analysis: version {VERSION} finds no degeneration")))
        open_flag = Flag.objects.filter(transcript_id=OuterRef("pk")).exclude(status=Flag.Status.RESOLVED)
        Transcript.objects.filter(id__in=[t.id for t in now_good]).update(flagged=Exists(open_flag))
