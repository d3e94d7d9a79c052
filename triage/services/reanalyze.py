"""Re-analysis: the verdict of stored transcripts under the detector as it is now.

A transcript keeps the verdict of the analysis version it was ingested under
(``metrics["version"]``); after the detector changes, ``manage.py reanalyze`` brings the older
ones up to date. Each changed verdict moves the automatic flags the way ingestion would have set
them: a transcript now found degenerate gets an automatic flag (and ``flagged``); one no longer
found degenerate has its automatic flags that nobody has acted on (status ``new``) resolved with a
note, and stays ``flagged`` only while it has another open flag. Flags people made, and automatic
flags they moved forward, are never touched. Experiment samples are not re-analysed: their
verdicts are what the experiment's statistics were computed from.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from django.db import transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Concat
from django.utils import timezone

from triage import content_codec
from triage.degeneration import VERSION
from triage.models import Flag, Transcript
from triage.services.ingest import GREEDY_WARNING
from triage.services.metrics import transcript_metrics

_FIELDS = ["metrics", "degenerate", "severity", "reasons", "warnings", "flagged"]


@dataclass
class ReanalysisSummary:
    version: str
    examined: int = 0
    changed: int = 0             # verdicts that flipped
    now_degenerate: int = 0
    no_longer_degenerate: int = 0
    failed: int = 0              # analyses that raised (recorded on the transcript, as at ingestion)
    flags_created: int = 0
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
    """Re-analyse the selected transcripts in batches of ``batch`` (each batch one transaction;
    keyset pages on id, so memory stays bounded); ``progress(n)`` is called after each batch.
    With ``dry_run`` nothing is written and the summary says what would change."""
    if batch < 1:
        raise ValueError(f"batch must be at least 1 (got {batch})")
    summary = ReanalysisSummary(version=VERSION, dry_run=dry_run)
    qs = transcripts_to_reanalyze(source=source, everything=everything)
    last_id = 0
    while True:
        rows = list(qs.filter(id__gt=last_id)[:batch])
        if not rows:
            break
        last_id = rows[-1].id
        with transaction.atomic():
            _reanalyze_batch(rows, summary, dry_run=dry_run, max_examples=max_examples)
        if progress is not None:
            progress(len(rows))
    return summary


def _reanalyze_batch(rows: list[Transcript], summary: ReanalysisSummary, *, dry_run: bool,
                     max_examples: int) -> None:
    now_bad, now_good = [], []
    for t in rows:
        enc = t.content_encoding
        verdict = transcript_metrics(
            text=content_codec.decode(t.response, enc), finish_reason=t.finish_reason,
            messages=content_codec.decode(t.messages, enc), logprobs=content_codec.decode(t.logprobs, enc))
        summary.examined += 1
        failed = "error" in verdict["metrics"]
        summary.failed += failed
        if verdict["degenerate"] != t.degenerate:
            summary.changed += 1
            (now_bad if verdict["degenerate"] else now_good).append(t)
            if len(summary.examples) < max_examples:
                summary.examples.append({
                    "id": t.id, "request_id": t.request_id, "was": t.degenerate, "now": verdict["degenerate"],
                    "version_was": (t.metrics or {}).get("version"),
                    "reasons": [r.get("code") for r in verdict["reasons"] if isinstance(r, dict)][:3]})
        if enc == content_codec.NUL_ESCAPED:  # (the verdict quotes the text)
            verdict = {**verdict, "metrics": content_codec.escape(verdict["metrics"]),
                       "reasons": content_codec.escape(verdict["reasons"])}
        warnings = [w for w in (t.warnings or []) if not str(w).startswith("metrics failed")]
        if failed:
            warnings.append(verdict["metrics"]["error"])
        if t.temperature == 0 and GREEDY_WARNING not in warnings:
            warnings.insert(0, GREEDY_WARNING)
        t.metrics, t.degenerate, t.severity = verdict["metrics"], verdict["degenerate"], verdict["severity"]
        t.reasons, t.warnings = verdict["reasons"], warnings
    summary.now_degenerate += len(now_bad)
    summary.no_longer_degenerate += len(now_good)
    if dry_run:
        return
    # newly degenerate: the automatic flag ingestion would have made
    flags = [Flag(transcript=t, reason=Flag.Reason.AUTO, source="auto", details=t.reasons,
                  note=f"severity {t.severity:.2f} (re-analysis, version {VERSION})") for t in now_bad]
    for t in now_bad:
        t.flagged = True
    Flag.objects.bulk_create(flags)
    summary.flags_created += len(flags)
    if now_good:
        ids = [t.id for t in now_good]
        stale = Flag.objects.filter(transcript_id__in=ids, reason=Flag.Reason.AUTO, status=Flag.Status.NEW)
        summary.flags_resolved += stale.update(
            status=Flag.Status.RESOLVED, updated_at=timezone.now(),
            note=Concat(F("note"), Value(f"; resolved by re-analysis: version {VERSION} finds no degeneration")))
        still_open = set(Flag.objects.filter(transcript_id__in=ids).exclude(status=Flag.Status.RESOLVED)
                         .values_list("transcript_id", flat=True))
        for t in now_good:
            t.flagged = t.id in still_open
    Transcript.objects.bulk_update(rows, _FIELDS)
