"""Serializers for the REST API (validation and representation only, no business logic).

`TranscriptIngestInput` is the one validator of a router payload: the API and
`triage.services.ingest.transcript_ingest_batch` (hence `load_demo`) both go through it.
Its fields are the strict ones of triage.serializer_fields (numbers are JSON numbers, strings
are strings, nesting is bounded), so what is stored is what was sent.
"""

from __future__ import annotations

from collections.abc import Mapping

from rest_framework import serializers

from triage import content_codec
from triage.models import Flag
from triage.serializer_fields import (
    MAX_JSON_DEPTH,
    IdentifierField,
    JsonObjectField,
    KernelSettingsField,
    LogprobsField,
    MessageContentField,
    RouteIdField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    TimestampField,
    json_depth_error,
)

MAX_MESSAGES = 10_000
ROLES = ("system", "user", "assistant", "tool", "developer", "function")
USER_FLAG_REASONS = [r for r in Flag.Reason.values if r != Flag.Reason.AUTO]


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
