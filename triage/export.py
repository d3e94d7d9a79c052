"""Transcript export: JSONL (byte-exact, one object per line) or CSV (for a spreadsheet), streamed
in chunks. Used by the API's export (GET /api/v1/transcripts/export) and the queue's bulk export;
the experiment export (api_experiments) shares the CSV cell guard.
"""

from __future__ import annotations

import csv
import io
import json

from django.http import StreamingHttpResponse

from triage.serializers import TranscriptDetailOutput


class TranscriptExportOutput(TranscriptDetailOutput):
    """A JSONL export line: the detail's shape, without the flags."""

    def get_flags(self, transcript) -> list[dict]:  # not exported (would be a query per row)
        return []

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data.pop("flags", None)
        return data


CSV_COLUMNS = ["id", "source", "request_id", "received_at", "created_at", "model", "temperature", "kernel_profile",
               "finish_reason", "degenerate", "severity", "flagged", "reasons", "warnings", "response"]
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value) -> str:
    """Spreadsheets execute cells starting with = + - @ (CSV injection): prefix them with '.
    The CSV is for reading in a spreadsheet; JSONL is the byte-exact export."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


EXPORT_FORMATS = ("jsonl", "csv")
EXPORT_CHUNK = 500


def export_response(*, queryset, export_format: str, filename: str = "transcripts") -> StreamingHttpResponse:
    """Stream a transcript queryset as JSONL (byte-exact, one object per line) or CSV, in
    chunks of EXPORT_CHUNK rows (server-side cursor: memory stays flat). Shared by the API
    export and the queue's bulk export."""
    if export_format not in EXPORT_FORMATS:
        raise ValueError(f"'{export_format}' is not an export format; use jsonl or csv.")
    rows = queryset.iterator(chunk_size=EXPORT_CHUNK)
    if export_format == "jsonl":
        stream = (json.dumps(TranscriptExportOutput(t).data, ensure_ascii=False) + "\n" for t in rows)
        response = StreamingHttpResponse(stream, content_type="application/x-ndjson; charset=utf-8")
    else:
        response = StreamingHttpResponse(_csv_lines(rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}.{export_format}"'
    return response


def _csv_lines(rows):
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for t in rows:
        reasons = "; ".join(r.get("message", str(r)) if isinstance(r, dict) else str(r) for r in t.reasons)
        values = {
            **{c: getattr(t, c) for c in CSV_COLUMNS if hasattr(t, c)},
            "received_at": t.received_at.isoformat(), "created_at": t.created_at.isoformat() if t.created_at else "",
            "kernel_profile": t.kernel_profile.name if t.kernel_profile_id else "",
            "reasons": reasons, "warnings": "; ".join(t.warnings),
        }
        # NUL cannot live in a spreadsheet cell: escaped rows stay escaped here (␀0).
        writer.writerow([csv_cell(values[c]) for c in CSV_COLUMNS])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue()
    yield ""
