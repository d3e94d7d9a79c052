"""DRF errors as JSON with field paths: {"error": {"status", "message", "fields": {path: [..]}}}."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def flatten_errors(detail, prefix: str = "") -> dict[str, list[str]]:
    """Turn DRF's nested error detail into {"messages[2].content": ["..."]}."""
    out: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            if key == "non_field_errors":
                path = prefix
            elif isinstance(key, int):  # DRF ListField errors: {index: detail}
                path = f"{prefix}[{key}]"
            else:
                path = f"{prefix}.{key}" if prefix else str(key)
            for p, msgs in flatten_errors(value, path).items():
                out.setdefault(p, []).extend(msgs)
    elif isinstance(detail, list):
        if all(not isinstance(item, (dict, list)) for item in detail):
            out.setdefault(prefix or "body", []).extend(str(item) for item in detail)
        else:
            for index, item in enumerate(detail):
                if item in ({}, []):
                    continue
                for p, msgs in flatten_errors(item, f"{prefix}[{index}]").items():
                    out.setdefault(p, []).extend(msgs)
    else:
        out.setdefault(prefix or "body", []).append(str(detail))
    return out


def error_body(status_code: int, message: str, fields: dict | None = None) -> dict:
    body = {"error": {"status": status_code, "message": message}}
    if fields:
        body["error"]["fields"] = fields
    return body


def exception_handler(exc, context):
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return error_response(
            status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            f"Request body is over the {limit} byte limit (INGEST_MAX_BYTES); split it into smaller batches.",
        )
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        fields = flatten_errors(exc.detail)
        message = "Invalid input: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in list(fields.items())[:5])
        response.data = error_body(status.HTTP_400_BAD_REQUEST, message, fields)
    else:
        detail = getattr(exc, "detail", str(exc))
        response.data = error_body(response.status_code, str(detail))
    return response


def error_response(status_code: int, message: str, fields: dict | None = None, headers=None) -> Response:
    return Response(error_body(status_code, message, fields), status=status_code, headers=headers)
