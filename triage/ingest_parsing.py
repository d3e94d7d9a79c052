"""The body of POST /api/v1/transcripts, parsed: Content-Type and charset, size limits, strict
JSON (one transcript, a list, or {"transcripts": [...]}) or NDJSON (one per line; a bad line is
an invalid item, not a failed batch). Errors say where the body is malformed (line, column,
offset) and how to fix it; the view answers them as they are (BodyError.response).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import exceptions
from rest_framework.parsers import BaseParser
from rest_framework.response import Response

from triage.api_errors import error_body

JSON_TYPES = ("application/json",)
NDJSON_TYPES = ("application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines")


class NDJSONParser(BaseParser):
    """Documents application/x-ndjson in the schema; the ingest view parses bodies itself, with
    parse_ingest_body (to report error positions and per-line errors)."""

    media_type = "application/x-ndjson"

    def parse(self, stream, media_type=None, parser_context=None):  # pragma: no cover - not used
        raise exceptions.UnsupportedMediaType(media_type)


class BodyError(Exception):
    """A body the ingest API refuses, answered as the API's JSON error (extra: e.g. the position)."""

    def __init__(self, status_code: int, message: str, fields: dict | None = None, extra: dict | None = None):
        super().__init__(message)
        self.status_code, self.message, self.fields, self.extra = status_code, message, fields, extra or {}

    def response(self) -> Response:
        body = error_body(self.status_code, self.message, self.fields)
        body["error"].update(self.extra)
        return Response(body, status=self.status_code)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]} is out of range for a double")
    return value


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON (use null or a finite number)")


def loads_strict(text: str):
    """json.loads that refuses NaN/Infinity and out-of-range numbers (jsonb cannot hold
    them). Raises json.JSONDecodeError (with position), ValueError or RecursionError."""
    return json.loads(text, parse_float=_finite_float, parse_constant=_reject_constant)


def _describe_parse_error(exc: Exception, *, line_offset: int = 0) -> tuple[str, dict]:
    if isinstance(exc, json.JSONDecodeError):
        line = exc.lineno + line_offset
        where = {"line": line, "column": exc.colno, "offset": exc.pos}
        return f"Malformed JSON at line {line}, column {exc.colno} (char {exc.pos}): {exc.msg}.", where
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply; flatten it.", {}
    return f"JSON not accepted: {exc}.", {}


def _decode_body(body: bytes) -> str:
    try:
        return body.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise BodyError(400, f"Body is not valid UTF-8 (bad byte at offset {exc.start}); JSON must be UTF-8 encoded.",
                        extra={"position": {"offset": exc.start}}) from None


def _read_body(request) -> tuple[str, bytes]:
    content_type = (request.META.get("CONTENT_TYPE") or "").strip()
    media_type, _, params = content_type.partition(";")
    media_type = media_type.strip().lower()
    charset = next((p.split("=", 1)[1].strip().strip('"').lower() for p in params.split(";") if "=" in p
                    and p.split("=", 1)[0].strip().lower() == "charset"), "utf-8")
    if media_type in JSON_TYPES:
        kind = "json"
    elif media_type in NDJSON_TYPES:
        kind = "ndjson"
    else:
        raise BodyError(415, f"Unsupported Content-Type {media_type or '(none)'!r}: send application/json "
                             "(one transcript or {\"transcripts\": [...]}) or application/x-ndjson (one per line).")
    if charset not in ("utf-8", "utf8"):
        raise BodyError(415, f"Unsupported charset {charset!r}: JSON must be UTF-8.")
    limit = settings.INGEST_MAX_BYTES
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        raise BodyError(413, f"Body of {declared} bytes is over the {limit} byte limit (INGEST_MAX_BYTES); "
                             "split it into smaller batches.")
    try:
        body = request.body
    except RequestDataTooBig:
        raise BodyError(413, f"Body is over the {limit} byte limit (INGEST_MAX_BYTES); split it into smaller batches.") from None
    if len(body) > limit:
        raise BodyError(413, f"Body of {len(body)} bytes is over the {limit} byte limit (INGEST_MAX_BYTES).")
    if not body.strip():
        raise BodyError(400, "Empty body: send one transcript object, {\"transcripts\": [...]}, or NDJSON lines.")
    return kind, body


def _check_batch_size(count: int) -> None:
    limit = settings.INGEST_MAX_BATCH
    if count > limit:
        raise BodyError(413, f"Batch of {count} transcripts is over the limit of {limit} (INGEST_MAX_BATCH); split it.")
    if count == 0:
        raise BodyError(400, "Empty batch: send at least one transcript.", {"transcripts": ["must not be empty."]})


def _parse_ndjson(body: bytes) -> tuple[list, dict[int, dict]]:
    """(payloads, {item index: errors}) — a bad line is an invalid item, not a failed batch."""
    payloads, bad = [], {}
    for number, raw in enumerate(body.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            payloads.append(loads_strict(_decode_body(raw)))
        except BodyError as exc:
            bad[len(payloads)] = {"body": [f"line {number}: {exc.message}"]}
            payloads.append(None)
        except (ValueError, RecursionError) as exc:
            message, _ = _describe_parse_error(exc, line_offset=number - 1)
            bad[len(payloads)] = {"body": [f"line {number}: {message}"]}
            payloads.append(None)
    return payloads, bad


@dataclass
class IngestBody:
    """The transcripts a body holds, not yet validated (triage.services.ingest does that)."""

    payloads: list  # in body order; None where an NDJSON line did not parse
    invalid: dict[int, dict]  # {index in payloads: errors} of those lines
    single: bool  # one transcript object (answered 201/200/409/400), not a batch (207)


def parse_ingest_body(request) -> IngestBody:
    """Read and parse an ingest request's body; raises BodyError (status, message, field paths)."""
    kind, body = _read_body(request)
    if kind == "ndjson":
        payloads, bad = _parse_ndjson(body)
        _check_batch_size(len(payloads))
        return IngestBody(payloads, bad, single=False)
    text = _decode_body(body)
    try:
        document = loads_strict(text)
    except (ValueError, RecursionError) as exc:
        message, where = _describe_parse_error(exc)
        raise BodyError(400, message + " Fix the body (python -m json.tool shows the spot).",
                        {"body": [message]}, {"position": where} if where else None) from None
    if isinstance(document, list) or (isinstance(document, dict) and "transcripts" in document
                                      and "request_id" not in document):
        items = document if isinstance(document, list) else document["transcripts"]
        if not isinstance(items, list):
            raise BodyError(400, "transcripts must be a list of transcript objects.",
                            {"transcripts": [f"must be a list, got {type(items).__name__}."]})
        _check_batch_size(len(items))
        return IngestBody(items, {}, single=False)
    if not isinstance(document, dict):
        raise BodyError(400, f"Expected a transcript object or {{\"transcripts\": [...]}}, got {type(document).__name__}.",
                        {"body": ["must be a JSON object."]})
    return IngestBody([document], {}, single=True)
