"""Strict DRF fields: a JSON value is taken as sent or refused with a message that says what
was expected. Numbers are JSON numbers (no "0.6" strings, no booleans, no NaN/Infinity: jsonb
cannot store those), strings are strings (kept untrimmed), objects are objects, and nesting is
bounded so that json/jsonb never overflow the stack. The ingestion and experiment serializers
(triage.serializers, triage.api_experiments) are built from them.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone as dt_timezone

from django.core.validators import ProhibitNullCharactersValidator
from django.utils import timezone
from rest_framework import serializers
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from kernels.settings import KernelSettings, KernelSettingsError

MAX_LOGPROBS = 1_000_000
MAX_JSON_DEPTH = 32


def json_depth_error(value, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Iterative depth check (deep nesting would overflow the stack of json/jsonb)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return f"nested deeper than {limit} levels; flatten it"
        stack.extend((child, depth + 1) for child in children)
    return None


# --- strict scalar fields -------------------------------------------------------------


class StrictFloatField(serializers.Field):
    default_error_messages = {
        "invalid": "must be a number, got {kind}.",
        "non_finite": "must be a finite number.",
        "min_value": "must be ≥ {min_value}, got {value}.",
        "max_value": "must be ≤ {max_value}, got {value}.",
    }

    def __init__(self, *, min_value=None, max_value=None, **kwargs):
        self.min_value, self.max_value = min_value, max_value
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid", kind=type(data).__name__)
        if isinstance(data, float) and not math.isfinite(data):
            self.fail("non_finite")
        if self.min_value is not None and data < self.min_value:
            self.fail("min_value", min_value=self.min_value, value=data)
        if self.max_value is not None and data > self.max_value:
            self.fail("max_value", max_value=self.max_value, value=data)
        return data

    def to_representation(self, value):
        return value


class StrictIntegerField(StrictFloatField):
    default_error_messages = {"invalid": "must be an integer, got {kind}."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            if isinstance(data, float) and data.is_integer() and abs(data) < 2**53:
                data = int(data)
            else:
                self.fail("invalid", kind=type(data).__name__)
        return super().to_internal_value(data)


class StrictCharField(serializers.CharField):
    """A JSON string (numbers are not coerced), kept exactly: no trimming."""

    default_error_messages = {"invalid": "must be a string, got {kind}."}

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)
        # DRF rejects NUL in every CharField; content may hold it (content_codec stores it).
        # Its surrogate check walks every character in Python (0.6 ms per 4 KB transcript);
        # triage.services.ingest.transcript_validate finds lone surrogates in one encode instead.
        self.validators = [v for v in self.validators
                           if not isinstance(v, (ProhibitNullCharactersValidator, ProhibitSurrogateCharactersValidator))]

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid", kind=type(data).__name__)
        return super().to_internal_value(data)


class IdentifierField(StrictCharField):
    """request_id and similar keys: printable, no NUL or line breaks."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if any(ch in value for ch in "\x00\r\n"):
            raise serializers.ValidationError("must not contain NUL or line breaks.")
        return value


class RouteIdField(serializers.Field):
    """The instance that served a phase (route.prefill, route.decode): a string or an integer."""

    default_error_messages = {"invalid": "must be an instance id (string or integer), got {kind}."}

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (str, int)) or (isinstance(data, str) and len(data) > 200):
            self.fail("invalid", kind=type(data).__name__)
        return data

    def to_representation(self, value):
        return value


class TimestampField(serializers.Field):
    """ISO 8601 (naive = UTC) or Unix seconds, as OpenAI's `created`."""

    default_error_messages = {
        "invalid": "must be an ISO 8601 datetime (e.g. 2025-01-31T12:00:00Z) or Unix seconds.",
    }

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        if isinstance(data, (int, float)):
            if not math.isfinite(data) or not 0 <= data < 253402300800:
                self.fail("invalid")
            return datetime.fromtimestamp(data, tz=dt_timezone.utc)
        if not isinstance(data, str) or len(data) > 64:
            self.fail("invalid")
        text = data.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            self.fail("invalid")
        if timezone.is_naive(value):
            value = value.replace(tzinfo=dt_timezone.utc)
        return value

    def to_representation(self, value):
        return value.isoformat() if value else None


# --- JSON structures ------------------------------------------------------------------


class JsonObjectField(serializers.Field):
    """A free JSON object (bounded nesting)."""

    default_error_messages = {"invalid": "must be a JSON object, got {kind}."}

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            self.fail("invalid", kind=type(data).__name__)
        problem = json_depth_error(data)
        if problem:
            raise serializers.ValidationError(problem)
        return data

    def to_representation(self, value):
        return value


class MessageContentField(serializers.Field):
    """OpenAI chat content: a string, a list of parts ({"type": ..., ...}), or null."""

    default_error_messages = {
        "invalid": "must be a string, a list of content parts, or null; got {kind}.",
    }

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, str):
            return data
        if not isinstance(data, list):
            self.fail("invalid", kind=type(data).__name__)
        errors = {}
        for index, part in enumerate(data):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                errors[index] = ['each content part must be an object with a string "type", e.g. {"type": "text", "text": "..."}.']
            elif part["type"] == "text" and not isinstance(part.get("text"), str):
                errors[index] = {"text": ["a text part needs a string 'text'."]}
        if errors:
            raise serializers.ValidationError(errors)
        problem = json_depth_error(data)
        if problem:
            raise serializers.ValidationError(problem)
        return data

    def to_representation(self, value):
        return value


class KernelSettingsField(serializers.Field):
    """The kernel settings object of docs/architecture.md; stored complete (defaults filled in)."""

    def to_internal_value(self, data):
        try:
            return KernelSettings.from_dict(data, path="kernel").to_dict()
        except KernelSettingsError as exc:
            raise serializers.ValidationError(
                {path.removeprefix("kernel.").removeprefix("kernel"): [message] for path, message in exc.errors.items()}
            ) from None

    def to_representation(self, value):
        return value


class LogprobsField(serializers.Field):
    """Per-token logprobs: a list of numbers, or of {"token", "logprob", "top_logprobs"}
    objects (OpenAI's `logprobs.content`); OpenAI's {"content": [...]} wrapper is accepted."""

    default_error_messages = {
        "invalid": 'must be a list of numbers or of {{"token": str, "logprob": number}} objects.',
        "too_long": f"has more than {MAX_LOGPROBS} entries.",
    }

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        entries = data.get("content") if isinstance(data, dict) else data
        if not isinstance(entries, list):
            self.fail("invalid")
        if len(entries) > MAX_LOGPROBS:
            self.fail("too_long")
        errors = {}
        for index, entry in enumerate(entries):
            value = entry.get("logprob") if isinstance(entry, dict) else entry
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                errors[index] = ["each entry needs a finite number logprob (a number, or an object with 'logprob')."]
                if len(errors) >= 5:
                    break
        if errors:
            raise serializers.ValidationError(errors)
        problem = json_depth_error(data, limit=8)
        if problem:
            raise serializers.ValidationError(problem)
        return data

    def to_representation(self, value):
        return value
