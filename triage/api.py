"""REST API, /api/v1/ (DRF): ingestion from the router, reads, flags, export.

One APIView per operation; views parse and answer, services write, selectors read.
Errors are JSON: {"error": {"status", "message", "fields": {path: [...]}}} (api_errors).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework import exceptions, status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.pagination import CursorPagination
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from triage import selectors
from triage.api_errors import error_body, error_response
from triage.auth import HasScope, request_api_key
from triage.export import EXPORT_FORMATS, export_response
from triage.ingest_parsing import BodyError, NDJSONParser, parse_ingest_body
from triage.models import ApiKey
from triage.serializers import (
    FlagCreateInput,
    FlagOutput,
    FlagUpdateInput,
    IngestBatchOutput,
    IngestResultOutput,
    TranscriptBatchInput,
    TranscriptDetailOutput,
    TranscriptFilterInput,
    TranscriptIngestInput,
    TranscriptSummaryOutput,
)
from triage.services import flags, ingest
from triage.throttling import ApiKeyRateThrottle

class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "triage.auth.ApiKeyAuthentication"
    name = "routerKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer",
                "description": "Router API key: python manage.py create_api_key --name NAME --scopes ingest[,flag,read]"}


ERROR_RESPONSE = OpenApiResponse(OpenApiTypes.OBJECT, description='{"error": {"status", "message", "fields"}}')


class BaseApi(APIView):
    """API keys or session; scope per view (HasScope); rate limit per key. API views are
    exempt from the login redirect of LoginRequiredMiddleware: they answer 401 JSON."""

    permission_classes = [HasScope]
    throttle_classes = [ApiKeyRateThrottle]
    required_scope: str | None = ApiKey.Scope.READ

    @classmethod
    def as_view(cls, **initkwargs):
        return login_not_required(super().as_view(**initkwargs))

    def permission_denied(self, request, message=None, code=None):
        if request.authenticators and not request.successful_authenticator:
            raise exceptions.NotAuthenticated(
                "Authentication required: send 'Authorization: Bearer <api key>' (create one with "
                "'python manage.py create_api_key --name NAME --scopes ingest,read') or log in."
            )
        super().permission_denied(request, message=message, code=code)


def by_method(**views):
    """One URL, one APIView per HTTP method (GET list / POST ingest share /transcripts)."""
    views = {method.upper(): view for method, view in views.items()}

    @csrf_exempt  # each APIView enforces CSRF for session users itself
    @login_not_required
    def dispatch(request, *args, **kwargs):
        view = views.get(request.method) or (views.get("GET") if request.method in ("HEAD", "OPTIONS") else None)
        if view is None:
            response = JsonResponse(
                error_body(405, f"Method {request.method} not allowed here; use {', '.join(views)}."), status=405
            )
            response["Allow"] = ", ".join(views)
            return response
        return view(request, *args, **kwargs)

    return dispatch


# --- ingestion -------------------------------------------------------------------------


class TranscriptIngestApi(BaseApi):
    """POST /api/v1/transcripts — ingest one transcript, a batch, or NDJSON lines."""

    required_scope = ApiKey.Scope.INGEST
    parser_classes = [JSONParser, NDJSONParser]  # for the schema; see parse_ingest_body
    renderer_classes = [JSONRenderer]

    @extend_schema(
        operation_id="transcripts_ingest",
        summary="Ingest transcripts from the router (idempotent on request_id)",
        description=(
            "Body: one transcript, `{\"transcripts\": [...]}` (up to INGEST_MAX_BATCH items, default 500), "
            "or `application/x-ndjson` with one transcript per line. A single transcript answers 201 (new), "
            "200 (replay with identical content, same id), 409 (same request_id, different content) or 400. "
            "Batches and NDJSON answer 207 with a status per item and commit the valid items. "
            "Unknown top-level fields are kept in `metadata`."
        ),
        request={
            "application/json": PolymorphicProxySerializer(
                component_name="TranscriptIngestBody", serializers=[TranscriptIngestInput, TranscriptBatchInput],
                resource_type_field_name=None,
            ),
            "application/x-ndjson": TranscriptIngestInput,
        },
        responses={
            201: IngestResultOutput, 200: IngestResultOutput, 207: IngestBatchOutput,
            400: ERROR_RESPONSE, 401: ERROR_RESPONSE, 403: ERROR_RESPONSE, 409: ERROR_RESPONSE,
            413: ERROR_RESPONSE, 415: ERROR_RESPONSE, 429: ERROR_RESPONSE,
        },
        examples=[OpenApiExample("one transcript", request_only=True, value={
            "request_id": "req-0001", "model": "smollm2-135m-instruct", "created_at": "2025-01-31T12:00:00Z",
            "messages": [{"role": "user", "content": "Write a small HTML page."}],
            "response": {"content": "<html>…</html>", "finish_reason": "stop"},
            "sampling": {"temperature": 0.6, "top_p": 0.95, "max_tokens": 512, "seed": 7},
            "kernel": {"attention": "sparse", "sparse_budget": 512},
            "usage": {"prompt_tokens": 20, "completion_tokens": 300},
            "timings": {"ttft_ms": 35.2, "latency_ms": 1840.0}, "route": {"prefill": "p-3", "decode": "d-7"},
        })],
    )
    def post(self, request):
        try:
            body = parse_ingest_body(request)
        except BodyError as exc:
            return exc.response()
        key = request_api_key(request)
        source = key.source if key else "web"
        if body.single:
            return self._single_response(source, key, body.payloads[0])
        return self._batch_response(source, key, body.payloads, body.invalid)

    def _single_response(self, source, key, payload) -> Response:
        result = ingest.transcript_ingest(source=source, payload=payload, api_key=key)
        if result.status == ingest.INVALID:
            message = "Invalid transcript: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in list(result.errors.items())[:5])
            return error_response(400, message, result.errors)
        if result.status == ingest.CONFLICT:
            body = error_body(409, result.errors["request_id"][0], result.errors)
            body["error"].update({"id": result.id, "request_id": result.request_id})
            return Response(body, status=409)
        code = status.HTTP_201_CREATED if result.status == ingest.CREATED else status.HTTP_200_OK
        location = reverse("api-transcript-detail", kwargs={"transcript_id": result.id})
        return Response(result.to_dict(), status=code, headers={"Location": location})  # IngestResultOutput's shape

    def _batch_response(self, source, key, payloads, bad: dict[int, dict]) -> Response:
        good = [(index, payload) for index, payload in enumerate(payloads) if index not in bad]
        stored = ingest.transcript_ingest_batch(source=source, payloads=[p for _, p in good], api_key=key)
        results: list[ingest.IngestResult] = [
            ingest.IngestResult(ingest.INVALID, None, errors=errors, index=index) for index, errors in bad.items()
        ]
        for (index, _), result in zip(good, stored):
            result.index = index
            results.append(result)
        results.sort(key=lambda r: r.index)
        counts = dict.fromkeys((ingest.CREATED, ingest.DUPLICATE, ingest.CONFLICT, ingest.INVALID), 0)
        for result in results:
            counts[result.status] += 1
        return Response({"results": [r.to_dict() for r in results], "counts": counts}, status=207)


# --- reads -----------------------------------------------------------------------------


class TranscriptCursorPagination(CursorPagination):
    ordering = ("-received_at", "-id")
    page_size = 50
    page_size_query_param = "limit"
    max_page_size = 500

    def decode_cursor(self, request):
        try:
            return super().decode_cursor(request)
        except exceptions.NotFound:
            raise exceptions.ValidationError(
                {"cursor": ["invalid cursor; use the 'next'/'previous' links of a previous page as they are."]}
            ) from None


FILTER_PARAMETERS = [
    OpenApiParameter("degenerate", bool), OpenApiParameter("flagged", bool),
    OpenApiParameter("flag_status", str, enum=["new", "investigating", "diagnosed", "resolved"]),
    OpenApiParameter("model", str), OpenApiParameter("kernel_profile", str), OpenApiParameter("source", str),
    OpenApiParameter("temperature_min", float), OpenApiParameter("temperature_max", float),
    OpenApiParameter("received_after", OpenApiTypes.DATETIME), OpenApiParameter("received_before", OpenApiTypes.DATETIME),
    OpenApiParameter("q", str, description="text search in the response"),
]


def _filters(request) -> dict:
    data = {k: v for k, v in request.query_params.items() if k in TranscriptFilterInput().fields}
    serializer = TranscriptFilterInput(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class TranscriptListApi(BaseApi):
    """GET /api/v1/transcripts — newest first, filtered, cursor-paginated."""

    required_scope = ApiKey.Scope.READ

    @extend_schema(
        operation_id="transcripts_list",
        parameters=FILTER_PARAMETERS + [OpenApiParameter("cursor", str), OpenApiParameter("limit", int)],
        responses={200: TranscriptSummaryOutput(many=True), 400: ERROR_RESPONSE, 401: ERROR_RESPONSE, 403: ERROR_RESPONSE},
    )
    def get(self, request):
        queryset = selectors.transcript_summaries(filters=_filters(request))
        paginator = TranscriptCursorPagination()
        page = paginator.paginate_queryset(queryset, request, view=self)
        return paginator.get_paginated_response(TranscriptSummaryOutput(page, many=True).data)


class TranscriptDetailApi(BaseApi):
    """GET /api/v1/transcripts/{id} — everything, content exactly as ingested, with flags."""

    required_scope = ApiKey.Scope.READ

    @extend_schema(operation_id="transcripts_retrieve",
                   responses={200: TranscriptDetailOutput, 401: ERROR_RESPONSE, 403: ERROR_RESPONSE, 404: ERROR_RESPONSE})
    def get(self, request, transcript_id: int):
        transcript = selectors.transcript_get(transcript_id=transcript_id)
        return Response(TranscriptDetailOutput(transcript).data)


# --- export (triage.export streams the rows) -------------------------------------------


class _IgnoreFormatNegotiation(DefaultContentNegotiation):
    """`?format=` selects the export format here, not a DRF renderer."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class TranscriptExportApi(BaseApi):
    """GET /api/v1/transcripts/export?format=jsonl|csv&<filters> — streams the selection."""

    required_scope = ApiKey.Scope.READ
    content_negotiation_class = _IgnoreFormatNegotiation
    renderer_classes = [JSONRenderer]

    @extend_schema(
        operation_id="transcripts_export",
        parameters=FILTER_PARAMETERS + [OpenApiParameter("format", str, enum=list(EXPORT_FORMATS))],
        responses={(200, "application/x-ndjson"): OpenApiTypes.STR, (200, "text/csv"): OpenApiTypes.STR,
                   400: ERROR_RESPONSE},
    )
    def get(self, request):
        export_format = request.query_params.get("format", "jsonl")
        if export_format not in EXPORT_FORMATS:
            raise exceptions.ValidationError({"format": [f"'{export_format}' is not an export format; use jsonl or csv."]})
        return export_response(queryset=selectors.transcript_list(filters=_filters(request)), export_format=export_format)


# --- flags -----------------------------------------------------------------------------


def _actor(request) -> tuple[object | None, str]:
    key = request_api_key(request)
    if key is not None:
        return None, f"api-key:{key.name}"
    return request.user, ""


class FlagCreateApi(BaseApi):
    """POST /api/v1/transcripts/{id}/flags — ops flag a bad response."""

    required_scope = ApiKey.Scope.FLAG

    @extend_schema(operation_id="flags_create", request=FlagCreateInput,
                   responses={201: FlagOutput, 400: ERROR_RESPONSE, 401: ERROR_RESPONSE, 403: ERROR_RESPONSE, 404: ERROR_RESPONSE})
    def post(self, request, transcript_id: int):
        transcript = selectors.transcript_get(transcript_id=transcript_id)
        serializer = FlagCreateInput(data=_json_object(request))
        serializer.is_valid(raise_exception=True)
        user, source = _actor(request)
        flag = flags.flag_create(transcript=transcript, user=user, source=source, **serializer.validated_data)
        return Response(FlagOutput(flag).data, status=status.HTTP_201_CREATED)


class FlagUpdateApi(BaseApi):
    """PATCH /api/v1/transcripts/{id}/flags/{flag_id} — move the status forward."""

    required_scope = ApiKey.Scope.FLAG

    @extend_schema(operation_id="flags_update", request=FlagUpdateInput,
                   responses={200: FlagOutput, 400: ERROR_RESPONSE, 404: ERROR_RESPONSE, 409: ERROR_RESPONSE})
    def patch(self, request, transcript_id: int, flag_id: int):
        flag = selectors.flag_get(transcript_id=transcript_id, flag_id=flag_id)
        serializer = FlagUpdateInput(data=_json_object(request))
        serializer.is_valid(raise_exception=True)
        user, _ = _actor(request)
        try:
            flag = flags.flag_update_status(flag=flag, user=user, **serializer.validated_data)
        except flags.FlagTransitionError as exc:
            return error_response(409, str(exc), {"status": [str(exc)]})
        return Response(FlagOutput(flag).data)


def _json_object(request) -> dict:
    """request.data for small JSON bodies, insisting on an object."""
    try:
        data = request.data
    except exceptions.ParseError as exc:
        raise exceptions.ValidationError({"body": [str(exc.detail)]}) from None
    if not isinstance(data, dict):
        raise exceptions.ValidationError({"body": [f"must be a JSON object, got {type(data).__name__}."]})
    return data
