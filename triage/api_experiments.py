"""REST API for experiments, /api/v1/experiments (DRF): start, read, list, cancel, export.

Starting one needs an engineer's session or a key with the `experiment` scope; reading
needs `read` or `experiment`. Bad input answers 400 naming the field, never a 500.
"""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import timedelta

from django.http import StreamingHttpResponse
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from triage.api import ERROR_RESPONSE, BaseApi, _IgnoreFormatNegotiation, _actor, _json_object
from triage.api_errors import error_response
from triage.experiments import selectors, services
from triage.experiments.arms import ExperimentInputError
from triage.export import csv_cell
from triage.models import ApiKey, Experiment
from triage.serializer_fields import StrictIntegerField
from triage.serializers import TranscriptFilterInput


class SelectionInput(TranscriptFilterInput):
    last_hours = serializers.FloatField(required=False, min_value=0.01, help_text="Received in the last N hours.")

    def validate(self, data):
        hours = data.pop("last_hours", None)
        if hours is not None:
            data["received_after"] = timezone.now() - timedelta(hours=hours)
        return {k: v for k, v in data.items() if v is not None}


class ExperimentStartInput(serializers.Serializer):
    transcript = StrictIntegerField(required=False, min_value=1, max_value=2**63 - 1,
                                    help_text="One transcript (a single case).")
    transcripts = serializers.ListField(child=StrictIntegerField(min_value=1, max_value=2**63 - 1), required=False,
                                        allow_empty=False,
                                        help_text="A suite: the transcripts, the same arms on each.")
    selection = SelectionInput(required=False, help_text="A suite from a queue selection (capped by EXPERIMENT_MAX_CASES).")
    arms = serializers.ListField(child=serializers.DictField(), required=False, allow_empty=False,
                                 help_text="[{name, profile, kernel, temperature, top_p, top_k, min_p, max_tokens}]; "
                                           "default: stock and the served profile at the production temperature, "
                                           "plus a greedy control when the transcript was served at T=0.")
    samples = StrictIntegerField(required=False, min_value=1, max_value=2**31,
                                 help_text="Samples per arm and case (default 16).")
    max_tokens = StrictIntegerField(required=False, min_value=1, max_value=2**31)
    base_seed = StrictIntegerField(required=False, min_value=0, max_value=2**62)
    ablate = serializers.BooleanField(required=False, default=False)
    allow_greedy_only = serializers.BooleanField(required=False, default=False)
    name = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")

    def validate(self, data):
        given = [k for k in ("transcript", "transcripts", "selection") if data.get(k) is not None]
        if len(given) != 1:
            raise serializers.ValidationError({"transcripts": "give exactly one of transcript, transcripts or selection"})
        return data


class ExperimentSummaryOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    status = serializers.CharField()
    verdict = serializers.CharField()
    samples_per_arm = serializers.IntegerField()
    case_count = serializers.IntegerField()
    arm_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField()
    url = serializers.SerializerMethodField()

    def get_url(self, experiment) -> str:
        return reverse("api-experiment-detail", kwargs={"experiment_id": experiment.pk})


def _detail(experiment: Experiment, *, positions: bool = True) -> dict:
    return json.loads(json.dumps(selectors.experiment_detail(experiment=experiment, positions=positions), default=str))


class ExperimentListCreateApi(BaseApi):
    """GET /api/v1/experiments (list) and POST (start one)."""

    @property
    def required_scope(self):
        if self.request.method == "POST":
            return ApiKey.Scope.EXPERIMENT
        return (ApiKey.Scope.READ, ApiKey.Scope.EXPERIMENT)

    @extend_schema(operation_id="experiments_list",
                   parameters=[OpenApiParameter("status", str, enum=Experiment.Status.values),
                               OpenApiParameter("transcript", int), OpenApiParameter("limit", int)],
                   responses={200: ExperimentSummaryOutput(many=True), 400: ERROR_RESPONSE, 401: ERROR_RESPONSE})
    def get(self, request):
        status_filter = request.query_params.get("status")
        if status_filter and status_filter not in Experiment.Status.values:
            raise exceptions.ValidationError({"status": [f"'{status_filter}' is not a status; use one of "
                                                         f"{', '.join(Experiment.Status.values)}."]})
        transcript = request.query_params.get("transcript")
        if transcript is not None and not re.fullmatch(r"[0-9]{1,18}", transcript):
            raise exceptions.ValidationError({"transcript": ["must be a transcript id."]})
        try:
            limit = min(500, max(1, int(request.query_params.get("limit", 50))))
        except ValueError:
            raise exceptions.ValidationError({"limit": ["must be an integer."]}) from None
        rows = selectors.experiment_list(status=status_filter, transcript_id=int(transcript) if transcript else None)[:limit]
        return Response({"results": ExperimentSummaryOutput(rows, many=True).data})

    @extend_schema(
        operation_id="experiments_create", request=ExperimentStartInput,
        responses={201: OpenApiTypes.OBJECT, 400: ERROR_RESPONSE, 401: ERROR_RESPONSE, 403: ERROR_RESPONSE},
        examples=[OpenApiExample("defaults on one flagged transcript", request_only=True, value={"transcript": 11}),
                  OpenApiExample("ablate a sparse profile", request_only=True, value={
                      "transcript": 18, "samples": 16, "ablate": True,
                      "arms": [{"profile": "stock"}, {"name": "sparse-64", "profile": "sparse",
                                                       "kernel": {"sparse_budget": 64}}]})],
    )
    def post(self, request):
        serializer = ExperimentStartInput(data=_json_object(request))
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        user, via = _actor(request)
        try:
            experiment = services.experiment_start(
                transcripts=data.get("transcripts") or ([data["transcript"]] if data.get("transcript") else None),
                selection=data.get("selection"), arms=data.get("arms"), samples=data.get("samples"),
                max_tokens=data.get("max_tokens"), ablate=data["ablate"], allow_greedy_only=data["allow_greedy_only"],
                base_seed=data.get("base_seed"), name=data["name"], user=user, via=via or "web")
        except ExperimentInputError as exc:
            fields = {k: [v] for k, v in exc.errors.items()}
            return error_response(400, "Invalid experiment: " + "; ".join(f"{k}: {v}" for k, v in exc.errors.items()),
                                  fields)
        location = reverse("api-experiment-detail", kwargs={"experiment_id": experiment.pk})
        return Response(_detail(experiment), status=status.HTTP_201_CREATED, headers={"Location": location})


class ExperimentDetailApi(BaseApi):
    """GET /api/v1/experiments/{id} — status, progress per arm, stats, tests, divergence, verdict."""

    required_scope = (ApiKey.Scope.READ, ApiKey.Scope.EXPERIMENT)

    @extend_schema(operation_id="experiments_retrieve",
                   parameters=[OpenApiParameter("positions", bool, description="include per-position KL (default true)")],
                   responses={200: OpenApiTypes.OBJECT, 404: ERROR_RESPONSE})
    def get(self, request, experiment_id: int):
        experiment = selectors.experiment_get(experiment_id=experiment_id)
        positions = request.query_params.get("positions", "true").lower() not in ("0", "false", "no")
        return Response(_detail(experiment, positions=positions))


class ExperimentCancelApi(BaseApi):
    """POST /api/v1/experiments/{id}/cancel — revoke pending work; a running chunk stops at its next heartbeat."""

    required_scope = ApiKey.Scope.EXPERIMENT

    @extend_schema(operation_id="experiments_cancel", request=None,
                   responses={200: OpenApiTypes.OBJECT, 404: ERROR_RESPONSE, 409: ERROR_RESPONSE})
    def post(self, request, experiment_id: int):
        experiment = selectors.experiment_get(experiment_id=experiment_id)
        if experiment.is_final or experiment.status == Experiment.Status.FINALIZING:
            return error_response(409, f"experiment {experiment.pk} has already ended ({experiment.status}); "
                                       "nothing to cancel.", {"status": [experiment.status]})
        experiment = services.experiment_cancel(experiment=experiment)
        return Response(_detail(experiment, positions=False))


EXPORT_COLUMNS = ["case_id", "transcript_id", "arm", "role", "index", "seed", "degenerate", "severity", "finish_reason",
                  "completion_tokens", "seq_rep_4", "compression_ratio", "reasons", "text"]


class ExperimentExportApi(BaseApi):
    """GET /api/v1/experiments/{id}/export?format=json|csv — every sample with its seed, text and metrics."""

    required_scope = (ApiKey.Scope.READ, ApiKey.Scope.EXPERIMENT)
    content_negotiation_class = _IgnoreFormatNegotiation
    renderer_classes = [JSONRenderer]

    @extend_schema(operation_id="experiments_export", parameters=[OpenApiParameter("format", str, enum=["json", "csv"])],
                   responses={(200, "application/json"): OpenApiTypes.OBJECT, (200, "text/csv"): OpenApiTypes.STR,
                              400: ERROR_RESPONSE, 404: ERROR_RESPONSE})
    def get(self, request, experiment_id: int):
        export_format = request.query_params.get("format", "json")
        if export_format not in ("json", "csv"):
            raise exceptions.ValidationError({"format": [f"'{export_format}' is not an export format; use json or csv."]})
        experiment = selectors.experiment_get(experiment_id=experiment_id)
        samples = selectors.experiment_samples(experiment=experiment)
        if export_format == "json":
            detail = _detail(experiment)

            def stream():
                head = json.dumps({"experiment": detail}, ensure_ascii=False)[:-1]
                yield head + ', "samples": ['
                for i, sample in enumerate(samples):
                    yield ("," if i else "") + json.dumps(sample, ensure_ascii=False, default=str)
                yield "]}"

            response = StreamingHttpResponse(stream(), content_type="application/json; charset=utf-8")
        else:
            response = StreamingHttpResponse(self._csv(samples), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="experiment-{experiment.pk}.{export_format}"'
        return response

    @staticmethod
    def _csv(samples):
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(EXPORT_COLUMNS)
        yield buffer.getvalue()
        for s in samples:
            buffer.seek(0)
            buffer.truncate()
            metrics = s["metrics"] or {}
            reasons = "; ".join(r.get("code", "") if isinstance(r, dict) else str(r) for r in s["reasons"] or [])
            row = {**s, "seq_rep_4": metrics.get("seq_rep_4"), "compression_ratio": metrics.get("compression_ratio"),
                   "reasons": reasons, "text": s["text"].replace("\x00", "\u2400")}
            writer.writerow([csv_cell(row[c]) for c in EXPORT_COLUMNS])
            yield buffer.getvalue()
