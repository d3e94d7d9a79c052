"""Serializers for the REST API (validation and representation only, no business logic).

`TranscriptIngestInput` is the one validator of a router payload: the API and
`triage.services.transcript_ingest_batch` (hence `load_demo`) both go through it.
Numbers are strict JSON numbers (no "0.6" strings, no booleans, no NaN/Infinity: jsonb
cannot store those), so what is stored is what was sent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timezone as dt_timezone

from django.utils import timezone
from rest_framework import serializers
from rest_framework.validators import ProhibitSurrogateCharactersValidator
from django.core.validators import ProhibitNullCharactersValidator

from kernels.settings import KernelSettings, KernelSettingsError
from triage import content_codec
from triage.models import Flag

MAX_MESSAGES = 10_000
MAX_LOGPROBS = 1_000_000
MAX_JSON_DEPTH = 32
ROLES = ("system", "user", "assistant", "tool", "developer", "function")
USER_FLAG_REASONS = [r for r in Flag.Reason.values if r != Flag.Reason.AUTO]


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
        # services.transcript_validate finds lone surrogates in one encode instead.
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


# --- ingestion input ------------------------------------------------------------------


class OpenSerializer(serializers.Serializer):
    """Validates the keys it knows and keeps the others as sent (router extensions such as
    repetition_penalty or prompt_tokens_details are data, not errors)."""

    def to_internal_value(self, data):
        validated = super().to_internal_value(data)
        extra = {k: v for k, v in data.items() if k not in self.fields}
        if extra:
            problem = json_depth_error(extra, limit=MAX_JSON_DEPTH - 1)
            if problem:
                raise serializers.ValidationError({next(iter(extra)): [problem]})
            validated.update(extra)
        return validated

    def to_representation(self, instance):
        return instance


class MessageInput(OpenSerializer):
    role = serializers.ChoiceField(
        choices=ROLES,
        error_messages={"invalid_choice": '"{input}" is not a chat role; use one of ' + ", ".join(ROLES) + "."},
    )
    content = MessageContentField(required=False)
    name = StrictCharField(required=False, max_length=200)


class ResponseInput(OpenSerializer):
    content = StrictCharField(allow_null=True, allow_blank=True)
    finish_reason = IdentifierField(required=False, allow_null=True, allow_blank=True, max_length=40)


class SamplingInput(OpenSerializer):
    temperature = StrictFloatField(required=False, allow_null=True, min_value=0, max_value=100)
    top_p = StrictFloatField(required=False, allow_null=True, min_value=0, max_value=1)
    top_k = StrictIntegerField(required=False, allow_null=True, min_value=-1, max_value=10_000_000)
    min_p = StrictFloatField(required=False, allow_null=True, min_value=0, max_value=1)
    max_tokens = StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=100_000_000)
    seed = StrictIntegerField(required=False, allow_null=True, min_value=-(2**63), max_value=2**64 - 1)
    presence_penalty = StrictFloatField(required=False, allow_null=True, min_value=-2, max_value=2)
    frequency_penalty = StrictFloatField(required=False, allow_null=True, min_value=-2, max_value=2)
    repetition_penalty = StrictFloatField(required=False, allow_null=True, min_value=0, max_value=100)


class UsageInput(OpenSerializer):
    prompt_tokens = StrictIntegerField(required=False, allow_null=True, min_value=0, max_value=2**31 - 1)
    completion_tokens = StrictIntegerField(required=False, allow_null=True, min_value=0, max_value=2**31 - 1)
    total_tokens = StrictIntegerField(required=False, allow_null=True, min_value=0, max_value=2**31 - 1)


class TimingsInput(OpenSerializer):
    ttft_ms = StrictFloatField(required=False, allow_null=True, min_value=0, max_value=1e9)
    latency_ms = StrictFloatField(required=False, allow_null=True, min_value=0, max_value=1e9)


class RouteIdField(serializers.Field):
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


class RouteInput(OpenSerializer):
    prefill = RouteIdField()
    decode = RouteIdField()


class TranscriptIngestInput(serializers.Serializer):
    """One finished conversation as the router posts it. Unknown top-level keys are kept
    in `metadata` (under their own name; under `unknown_fields` if metadata has that name)."""

    request_id = IdentifierField(max_length=200, help_text="Idempotency key, unique per API key's source.")
    model = StrictCharField(required=False, allow_blank=True, max_length=200)
    created_at = TimestampField(required=False, allow_null=True)
    messages = serializers.ListField(child=MessageInput(), max_length=MAX_MESSAGES)
    response = ResponseInput()
    sampling = SamplingInput(required=False)
    kernel = KernelSettingsField(required=False, allow_null=True)
    kernel_profile = IdentifierField(required=False, allow_null=True, allow_blank=True, max_length=100)
    usage = UsageInput(required=False)
    timings = TimingsInput(required=False)
    route = RouteInput(required=False)
    logprobs = LogprobsField(required=False)
    metadata = JsonObjectField(required=False)

    def to_internal_value(self, data):
        if not isinstance(data, Mapping):
            raise serializers.ValidationError(
                {"body": [f"a transcript must be a JSON object, got {type(data).__name__}."]}
            )
        validated = super().to_internal_value(data)
        unknown = {k: v for k, v in data.items() if k not in self.fields}
        if unknown:
            problem = json_depth_error(unknown, limit=MAX_JSON_DEPTH - 1)
            if problem:
                raise serializers.ValidationError({next(iter(unknown)): [problem]})
            metadata = dict(validated.get("metadata") or {})
            for key, value in unknown.items():
                if key in metadata:
                    metadata.setdefault("unknown_fields", {})[key] = value
                else:
                    metadata[key] = value
            validated["metadata"] = metadata
        return validated


class TranscriptBatchInput(serializers.Serializer):
    """Schema only: {"transcripts": [...]} (each item validated on its own)."""

    transcripts = TranscriptIngestInput(many=True)


# --- ingestion output -----------------------------------------------------------------


class IngestResultOutput(serializers.Serializer):
    index = serializers.IntegerField()
    request_id = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=["created", "duplicate", "conflict", "invalid"])
    id = serializers.IntegerField(allow_null=True)
    degenerate = serializers.BooleanField()
    flagged = serializers.BooleanField()
    warnings = serializers.ListField(child=serializers.CharField())
    errors = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))


class IngestBatchOutput(serializers.Serializer):
    results = IngestResultOutput(many=True)
    counts = serializers.DictField(child=serializers.IntegerField())


# --- reads ----------------------------------------------------------------------------


class FlagOutput(serializers.Serializer):
    id = serializers.IntegerField()
    transcript = serializers.IntegerField(source="transcript_id")
    reason = serializers.CharField()
    note = serializers.CharField()
    status = serializers.CharField()
    details = serializers.JSONField()
    source = serializers.CharField()
    user = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_user(self, flag) -> str | None:
        return flag.user.get_username() if flag.user_id else None


class TranscriptSummaryOutput(serializers.Serializer):
    id = serializers.IntegerField()
    source = serializers.CharField()
    request_id = serializers.CharField()
    received_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField(allow_null=True)
    model = serializers.CharField()
    finish_reason = serializers.CharField()
    temperature = serializers.FloatField(allow_null=True)
    kernel_profile = serializers.SerializerMethodField()
    degenerate = serializers.BooleanField()
    severity = serializers.FloatField()
    reasons = serializers.JSONField()
    warnings = serializers.JSONField()
    flagged = serializers.BooleanField()
    response_preview = serializers.SerializerMethodField()

    PREVIEW_CHARS = 200

    def get_kernel_profile(self, transcript) -> str | None:
        return transcript.kernel_profile.name if transcript.kernel_profile_id else None

    def get_response_preview(self, transcript) -> str:
        # Slice after decoding so an escaped NUL is never cut in half.
        text = getattr(transcript, "response_head", None)
        if text is None:
            text = transcript.response
        return content_codec.decode(text, transcript.content_encoding)[: self.PREVIEW_CHARS]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        for name in ("model", "finish_reason", "reasons"):
            data[name] = content_codec.decode(data[name], instance.content_encoding)
        return data


class TranscriptDetailOutput(TranscriptSummaryOutput):
    """Everything as the router sent it (byte-exact: escaped content is decoded here)."""

    CONTENT_FIELDS = ("messages", "response", "sampling", "usage", "timings", "route", "logprobs", "metadata", "metrics")

    messages = serializers.JSONField()
    response = serializers.CharField()
    sampling = serializers.JSONField()
    kernel = serializers.JSONField()
    usage = serializers.JSONField()
    timings = serializers.JSONField()
    route = serializers.JSONField()
    logprobs = serializers.JSONField(allow_null=True)
    metadata = serializers.JSONField()
    metrics = serializers.JSONField()
    content_hash = serializers.CharField()
    flags = serializers.SerializerMethodField()

    def get_response_preview(self, transcript) -> str:  # the full response is right there
        return ""

    def get_flags(self, transcript) -> list[dict]:
        return FlagOutput(transcript.flags.all(), many=True).data

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data.pop("response_preview", None)
        for name in self.CONTENT_FIELDS:
            data[name] = content_codec.decode(getattr(instance, name), instance.content_encoding)
        return data


class TranscriptFilterInput(serializers.Serializer):
    degenerate = serializers.BooleanField(required=False, allow_null=True, default=None)
    flagged = serializers.BooleanField(required=False, allow_null=True, default=None)
    flag_status = serializers.ChoiceField(choices=Flag.Status.values, required=False)
    model = serializers.CharField(required=False, max_length=200)
    kernel_profile = serializers.CharField(required=False, max_length=100)
    source = serializers.CharField(required=False, max_length=100)
    temperature_min = serializers.FloatField(required=False)
    temperature_max = serializers.FloatField(required=False)
    received_after = serializers.DateTimeField(required=False)
    received_before = serializers.DateTimeField(required=False)
    q = serializers.CharField(required=False, max_length=500, help_text="Text search in the response.")


class FlagCreateInput(serializers.Serializer):
    reason = serializers.ChoiceField(
        choices=USER_FLAG_REASONS,
        error_messages={"invalid_choice": '"{input}" is not a flag reason; use one of ' + ", ".join(USER_FLAG_REASONS) + "."},
    )
    note = serializers.CharField(required=False, allow_blank=True, max_length=10_000, default="", trim_whitespace=False)


class FlagUpdateInput(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=Flag.Status.values,
        error_messages={"invalid_choice": '"{input}" is not a flag status; use one of ' + ", ".join(Flag.Status.values) + "."},
    )
    note = serializers.CharField(required=False, allow_blank=True, max_length=10_000, trim_whitespace=False)
