"""Transcript ingestion (REST and load_demo): validate router payloads, store them, flag
the degenerate ones.

Ingestion is idempotent on (source, request_id): a replay with identical content is a
`duplicate` with the existing id, different content is a `conflict`. It is race-safe
without locks: rows are inserted with INSERT … ON CONFLICT DO NOTHING RETURNING, so the
unique constraint decides which of two concurrent requests creates the row, and the
loser re-reads it. Rows are inserted in request_id order so concurrent batches take their
index locks in the same order (no deadlock cycle); a deadlock or serialization failure
is retried anyway.

A batch does its database work in a handful of queries whatever its size: one read of the
existing request_ids, one of the kernel profiles named, one multi-row insert, one insert
of the automatic flags. The degeneration verdict of each row comes from
triage.services.metrics.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError, IntegrityError, OperationalError, connection, transaction
from django.utils import timezone
from rest_framework import serializers as drf_serializers

from kernels.settings import KernelSettings, KernelSettingsError
from triage import content_codec
from triage.api_errors import flatten_errors
from triage.models import ApiKey, Flag, KernelProfile, Transcript
from triage.serializers import TranscriptIngestInput
from triage.services.metrics import transcript_metrics

logger = logging.getLogger(__name__)

GREEDY_WARNING = (
    "greedy decoding: known cause of repetition loops; regenerate at the production "
    "temperature before suspecting kernels"
)
CREATED, DUPLICATE, CONFLICT, INVALID = "created", "duplicate", "conflict", "invalid"
INSERT_CHUNK = 250
DB_RETRIES = 3


@dataclass
class IngestResult:
    status: str
    request_id: str | None
    id: int | None = None
    errors: dict[str, list[str]] = field(default_factory=dict)
    index: int = 0
    degenerate: bool = False
    flagged: bool = False
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index, "request_id": self.request_id, "status": self.status, "id": self.id,
            "degenerate": self.degenerate, "flagged": self.flagged, "warnings": self.warnings,
            "errors": self.errors,
        }


# --- validation (shared by the API and load_demo) --------------------------------------


def _request_id_of(payload: Any) -> str | None:
    value = payload.get("request_id") if isinstance(payload, dict) else None
    return value if isinstance(value, str) else None


def _first_bad_string(value: Any, path: str) -> str | None:
    """Path of the first string that is not valid Unicode (a lone surrogate from a
    "\\ud800" escape: neither UTF-8 nor PostgreSQL can hold it)."""
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return where or "body"
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and _first_bad_string(key, "") is not None:
                    return f"{where}.{key!r}" if where else repr(key)
                stack.append((child, f"{where}.{key}" if where else str(key)))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))
    return None


@dataclass
class _Prepared:
    index: int
    request_id: str
    data: dict
    canonical: str
    content_hash: str


def _canonical_content(data: dict) -> dict:
    created_at = data.get("created_at")
    return {
        "request_id": data["request_id"],
        "model": data.get("model", ""),
        "created_at": created_at.isoformat() if created_at else None,
        "messages": data["messages"],
        "response": data["response"],
        "sampling": data.get("sampling", {}),
        "kernel": data.get("kernel"),
        "kernel_profile": data.get("kernel_profile") or None,
        "usage": data.get("usage", {}),
        "timings": data.get("timings", {}),
        "route": data.get("route", {}),
        "logprobs": data.get("logprobs"),
        "metadata": data.get("metadata", {}),
    }


_local = threading.local()


def _validator() -> TranscriptIngestInput:
    """One validator per thread: building a serializer deep-copies its ~60 fields (~1.5 ms),
    and run_validation keeps no state on the instance between calls."""
    if not hasattr(_local, "validator"):
        _local.validator = TranscriptIngestInput()
    return _local.validator


def transcript_validate(*, payload: Any, validator: TranscriptIngestInput | None = None) -> tuple[_Prepared | None, dict]:
    """Validate one raw router payload. Returns (prepared, {}) or (None, field errors)."""
    validator = validator or _validator()
    try:
        data = validator.run_validation(payload)
    except drf_serializers.ValidationError as exc:
        return None, flatten_errors(exc.detail)
    except RecursionError:
        return None, {"body": ["nested too deeply; flatten it"]}
    except Exception as exc:  # noqa: BLE001 - a validator bug must not become a 500 or lose the batch
        logger.exception("transcript validation crashed")
        return None, {"body": [f"could not be validated ({exc.__class__.__name__}); please report this payload"]}
    content = _canonical_content(data)
    try:
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    except UnicodeEncodeError:
        path = _first_bad_string(content, "") or "body"
        return None, {path: ["contains a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which is not Unicode text; send valid UTF-8."]}
    except (ValueError, RecursionError) as exc:
        return None, {"body": [f"cannot be stored: {exc}"]}
    return _Prepared(0, data["request_id"], data, canonical, digest), {}


# --- ingestion -------------------------------------------------------------------------


def _settings_key(kernel: Any) -> str | None:
    """Kernel settings in one canonical form (defaults filled in), for matching them to a profile."""
    if not isinstance(kernel, dict) or not kernel:
        return None
    try:
        return json.dumps(KernelSettings.from_dict(kernel).to_dict(), sort_keys=True)
    except (KernelSettingsError, TypeError, ValueError):
        return None


def _profiles_by_settings(items) -> dict[str, KernelProfile]:
    """The profiles whose settings equal those of a transcript that names no profile (a router that
    sends its kernel settings but not the profile's name): one query, only when such a row exists.
    Two profiles with the same settings: the first by name."""
    if not any(_settings_key(i.data.get("kernel")) and not i.data.get("kernel_profile") for i in items):
        return {}
    out: dict[str, KernelProfile] = {}
    for profile in KernelProfile.objects.order_by("name"):
        key = _settings_key(profile.settings)
        if key is not None:
            out.setdefault(key, profile)
    return out


def verdict_warnings(*, temperature, verdict: dict) -> list[str]:
    """A transcript's warnings: greedy decoding, and a failed analysis (its error)."""
    warnings = [GREEDY_WARNING] if temperature == 0 else []
    if "error" in verdict["metrics"]:
        warnings.append(verdict["metrics"]["error"])
    return warnings


def escape_verdict(verdict: dict) -> dict:
    """The verdict of NUL-escaped content, escaped too: it quotes the text (loop excerpts)."""
    return {**verdict, "metrics": content_codec.escape(verdict["metrics"]),
            "reasons": content_codec.escape(verdict["reasons"])}


def auto_flag(transcript_id: int, row: Transcript, note: str = "") -> Flag:
    """The automatic flag of a transcript found degenerate (its reasons and severity)."""
    return Flag(transcript_id=transcript_id, reason=Flag.Reason.AUTO, source="auto", details=row.reasons,
                note=f"severity {row.severity:.2f}{note}")


def _build_transcript(item: _Prepared, *, source: str, profile: KernelProfile | None, now) -> Transcript:
    data = item.data
    response = data["response"]
    text = response.get("content") or ""
    finish_reason = response.get("finish_reason") or ""
    sampling = data.get("sampling", {})
    temperature = sampling.get("temperature")
    kernel = data.get("kernel")
    if kernel is None and profile is not None:
        kernel = profile.settings
    verdict = transcript_metrics(text=text, finish_reason=finish_reason, messages=data["messages"],
                                 logprobs=data.get("logprobs"))
    warnings = verdict_warnings(temperature=temperature, verdict=verdict)
    response_extra = {k: v for k, v in response.items() if k not in ("content", "finish_reason")}
    metadata = data.get("metadata", {})
    if response_extra:
        metadata = {**metadata, "response_extra": response_extra}
    content = {
        "model": data.get("model", ""), "messages": data["messages"], "response": text,
        "finish_reason": finish_reason, "sampling": sampling, "usage": data.get("usage", {}),
        "timings": data.get("timings", {}), "route": data.get("route", {}),
        "logprobs": data.get("logprobs"), "metadata": metadata,
    }
    encoding = ""
    if "\\u0000" in item.canonical:  # a NUL somewhere: PostgreSQL cannot store it as is
        encoding = content_codec.NUL_ESCAPED
        content = {key: content_codec.escape(value) for key, value in content.items()}
        verdict = escape_verdict(verdict)
    return Transcript(
        source=source, request_id=item.request_id, content_hash=item.content_hash, received_at=now,
        created_at=data.get("created_at"), temperature=temperature, kernel=kernel or {},
        kernel_profile=profile, metrics=verdict["metrics"], degenerate=verdict["degenerate"],
        severity=verdict["severity"], reasons=verdict["reasons"], warnings=warnings,
        flagged=verdict["degenerate"], content_encoding=encoding, **content,
    )


_INSERT_FIELDS = [f for f in Transcript._meta.concrete_fields if not f.primary_key]


def _insert_ignoring_existing(rows: list[Transcript]) -> dict[str, int]:
    """INSERT … ON CONFLICT (source, request_id) DO NOTHING RETURNING id, request_id.
    Returns {request_id: id} of the rows this statement created (PostgreSQL and SQLite)."""
    qn = connection.ops.quote_name
    table = qn(Transcript._meta.db_table)
    columns = ", ".join(qn(f.column) for f in _INSERT_FIELDS)
    row_sql = "(" + ", ".join(["%s"] * len(_INSERT_FIELDS)) + ")"
    created: dict[str, int] = {}
    with connection.cursor() as cursor:
        for start in range(0, len(rows), INSERT_CHUNK):
            chunk = rows[start : start + INSERT_CHUNK]
            params = [f.get_db_prep_save(getattr(obj, f.attname), connection) for obj in chunk for f in _INSERT_FIELDS]
            cursor.execute(
                f"INSERT INTO {table} ({columns}) VALUES {', '.join([row_sql] * len(chunk))} "
                f"ON CONFLICT ({qn('source')}, {qn('request_id')}) DO NOTHING RETURNING {qn('id')}, {qn('request_id')}",
                params,
            )
            created.update((request_id, pk) for pk, request_id in cursor.fetchall())
    return created


def _store(*, source: str, rows: list[Transcript]) -> tuple[dict[str, int], dict[str, tuple[int, str]]]:
    """Insert the rows; returns (created {request_id: id}, lost races {request_id: (id, hash)}).

    One multi-row INSERT is atomic on its own, so the usual case (no automatic flag, one
    chunk) runs in autocommit: one round trip instead of BEGIN/INSERT/COMMIT. Rows and
    their flags, or several chunks, are written in one transaction."""
    rows = sorted(rows, key=lambda row: row.request_id)  # same lock order in every transaction
    if len(rows) > INSERT_CHUNK or any(row.degenerate for row in rows):
        with transaction.atomic():
            return _store_rows(source=source, rows=rows)
    return _store_rows(source=source, rows=rows)


def _store_rows(*, source: str, rows: list[Transcript]) -> tuple[dict[str, int], dict[str, tuple[int, str]]]:
    created = _insert_ignoring_existing(rows)
    lost = [row.request_id for row in rows if row.request_id not in created]
    existing = {}
    if lost:  # another request created them since we looked: re-read (READ COMMITTED sees it)
        existing = {
            rid: (pk, digest)
            for rid, pk, digest in Transcript.objects.filter(source=source, request_id__in=lost)
            .values_list("request_id", "id", "content_hash")
        }
    flags = [auto_flag(created[row.request_id], row) for row in rows if row.degenerate and row.request_id in created]
    if flags:
        Flag.objects.bulk_create(flags)
    return created, existing


def _is_retryable(exc: DatabaseError) -> bool:
    cause = getattr(exc, "__cause__", None)
    sqlstate = getattr(cause, "sqlstate", None) or getattr(getattr(cause, "diag", None), "sqlstate", None)
    return sqlstate in ("40P01", "40001") or "database is locked" in str(exc)


def transcript_ingest_batch(*, source: str, payloads: list[Any], api_key: ApiKey | None = None) -> list[IngestResult]:
    """Validate and store router payloads; one IngestResult per payload, in order.
    Valid items are committed even when others in the batch are invalid."""
    source = source or (api_key.source if api_key else "default")
    validator = _validator()
    results: list[IngestResult | None] = [None] * len(payloads)
    prepared: list[_Prepared] = []
    for index, payload in enumerate(payloads):
        item, errors = transcript_validate(payload=payload, validator=validator)
        if item is None:
            results[index] = IngestResult(INVALID, _request_id_of(payload), errors=errors, index=index)
        else:
            item.index = index
            prepared.append(item)

    profile_names = {item.data["kernel_profile"] for item in prepared if item.data.get("kernel_profile")}
    profiles = {p.name: p for p in KernelProfile.objects.filter(name__in=profile_names)} if profile_names else {}
    primaries: dict[str, _Prepared] = {}
    repeats: list[_Prepared] = []
    known = None
    for item in prepared:
        name = item.data.get("kernel_profile")
        if name and name not in profiles:
            if known is None:
                known = ", ".join(sorted(KernelProfile.objects.values_list("name", flat=True))) or "none defined yet"
            results[item.index] = IngestResult(
                INVALID, item.request_id, index=item.index,
                errors={"kernel_profile": [f"unknown kernel profile '{name}'; known profiles: {known}."]},
            )
        elif item.request_id in primaries:
            repeats.append(item)  # the same request_id twice in one batch: judged after the first
        else:
            primaries[item.request_id] = item

    stored: dict[str, tuple[int, str, IngestResult]] = {}  # request_id -> (id, hash, result)
    if primaries:
        existing: dict[str, tuple[int, str]] = {}
        # Batches look up replays first (retried batches are mostly replays: no metrics for
        # them); a single transcript goes straight to the insert, whose conflict path
        # re-reads the row, saving a round trip on the usual, new, transcript.
        for start in range(0, len(primaries) if len(primaries) > 1 else 0, 1000):
            ids = list(primaries)[start : start + 1000]
            existing.update(
                (rid, (pk, digest))
                for rid, pk, digest in Transcript.objects.filter(source=source, request_id__in=ids)
                .values_list("request_id", "id", "content_hash")
            )
        for rid, (pk, digest) in existing.items():
            item = primaries.pop(rid)
            result = _replay_result(item, pk, digest)
            results[item.index] = result
            stored[rid] = (pk, digest, result)

        now = timezone.now()
        by_settings = _profiles_by_settings(primaries.values())
        rows = [_build_transcript(item, source=source, now=now, profile=profiles.get(item.data.get("kernel_profile"))
                                  or (by_settings and by_settings.get(_settings_key(item.data.get("kernel")))) or None)
                for item in primaries.values()]
        created, lost = _store_with_retries(source=source, rows=rows)
        for row in rows:
            item = primaries[row.request_id]
            if row.request_id in created:
                result = IngestResult(CREATED, row.request_id, id=created[row.request_id], index=item.index,
                                      degenerate=row.degenerate, flagged=row.flagged, warnings=row.warnings)
                stored[row.request_id] = (result.id, item.content_hash, result)
            elif row.request_id in lost:  # another client inserted it first: a replay of its row
                pk, digest = lost[row.request_id]
                result = _replay_result(item, pk, digest)
                stored[row.request_id] = (pk, digest, result)  # (repeats in this batch are judged against it)
            else:  # the conflicting row was deleted before we could re-read it
                result = IngestResult(CONFLICT, row.request_id, index=item.index, errors={"request_id": [
                    f"'{row.request_id}' was being deleted while this request ran; send it again."]})
            results[item.index] = result

    for item in repeats:
        if item.request_id not in stored:  # its first occurrence met a concurrent delete
            results[item.index] = IngestResult(CONFLICT, item.request_id, index=item.index, errors={"request_id": [
                f"'{item.request_id}' was being deleted while this request ran; send it again."]})
            continue
        pk, digest, first = stored[item.request_id]
        results[item.index] = _replay_result(item, pk, digest, degenerate=first.degenerate, flagged=first.flagged)
    return results  # type: ignore[return-value]


def _replay_result(item: _Prepared, pk: int, digest: str, *, degenerate: bool = False, flagged: bool = False) -> IngestResult:
    if digest == item.content_hash:
        return IngestResult(DUPLICATE, item.request_id, id=pk, index=item.index, degenerate=degenerate, flagged=flagged)
    return IngestResult(
        CONFLICT, item.request_id, id=pk, index=item.index,
        errors={"request_id": [
            f"'{item.request_id}' was already ingested (id {pk}) with different content; a retry must send "
            "identical content, a new conversation needs a new request_id."
        ]},
    )


def _store_with_retries(*, source: str, rows: list[Transcript]):
    if not rows:
        return {}, {}
    for attempt in range(DB_RETRIES):
        try:
            return _store(source=source, rows=rows)
        except (OperationalError, IntegrityError) as exc:
            # A deadlock/serialization failure, or a row deleted under us (FK): try again,
            # unless an outer transaction owns the connection (its state is gone).
            if connection.in_atomic_block or attempt == DB_RETRIES - 1 or not (
                isinstance(exc, IntegrityError) or _is_retryable(exc)
            ):
                raise
            logger.warning("ingest batch retry %d after %s", attempt + 1, exc)
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def transcript_ingest(*, source: str, payload: Any, api_key: ApiKey | None = None) -> IngestResult:
    """Ingest one router payload (see transcript_ingest_batch)."""
    return transcript_ingest_batch(source=source, payloads=[payload], api_key=api_key)[0]


def transcripts_spread_received(*, ids: list[int], days: float, now=None) -> None:
    """Demo data only: spread the transcripts' received time evenly over the last ``days`` days,
    the first id oldest (a file of demo traffic has no arrival times of its own)."""
    from datetime import timedelta

    now = now or timezone.now()
    step = timedelta(days=days) / max(1, len(ids) - 1)
    rows = [Transcript(pk=pk, received_at=now - step * (len(ids) - 1 - k)) for k, pk in enumerate(ids)]
    Transcript.objects.bulk_update(rows, ["received_at"], batch_size=500)
