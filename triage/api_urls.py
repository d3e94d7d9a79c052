"""/api/ routes: v1 endpoints, the OpenAPI schema and its docs page (mounted by triage/urls.py)."""

from types import SimpleNamespace

from django.contrib.auth.decorators import login_not_required, login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.permissions import IsAuthenticated

from triage import api, api_experiments

transcript_list = api.TranscriptListApi.as_view()
transcript_ingest = api.TranscriptIngestApi.as_view()


def _v1(collection_views):
    return [
        *collection_views,
        path("transcripts/export", api.TranscriptExportApi.as_view(), name="api-transcript-export"),
        path("transcripts/<int:transcript_id>", api.TranscriptDetailApi.as_view(), name="api-transcript-detail"),
        path("transcripts/<int:transcript_id>/flags", api.FlagCreateApi.as_view(), name="api-flag-create"),
        path("transcripts/<int:transcript_id>/flags/<int:flag_id>", api.FlagUpdateApi.as_view(), name="api-flag-update"),
        path("experiments", api_experiments.ExperimentListCreateApi.as_view(), name="api-experiments"),
        path("experiments/<int:experiment_id>", api_experiments.ExperimentDetailApi.as_view(), name="api-experiment-detail"),
        path("experiments/<int:experiment_id>/cancel", api_experiments.ExperimentCancelApi.as_view(),
             name="api-experiment-cancel"),
        path("experiments/<int:experiment_id>/export", api_experiments.ExperimentExportApi.as_view(),
             name="api-experiment-export"),
    ]


v1_patterns = _v1([path("transcripts", api.by_method(GET=transcript_list, POST=transcript_ingest), name="api-transcripts")])

# The schema generator sees APIViews only, so it enumerates the two operations that share
# /transcripts from this copy of the routes (same paths, one view per method).
schema_urlconf = SimpleNamespace(urlpatterns=[
    path("api/v1/", include(_v1([path("transcripts", transcript_list), path("transcripts", transcript_ingest)]))),
])

urlpatterns = [
    path("v1/", include(v1_patterns)),
    # Schema: API key or session (no login redirect); docs page: a logged-in browser.
    path("schema/", login_not_required(SpectacularAPIView.as_view(
        urlconf=schema_urlconf, permission_classes=[IsAuthenticated])), name="api-schema"),
    # DRF marks its views login-exempt; the docs page is a page, so it asks for a login.
    path("docs/", login_required(SpectacularSwaggerView.as_view(url_name="api-schema")), name="api-docs"),
]
