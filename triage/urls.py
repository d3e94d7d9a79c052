from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from triage import views, views_backends, views_experiments, views_overview, views_queue

urlpatterns = [
    path("", views_overview.overview_view, name="overview"),
    path("transcripts/", views_queue.TranscriptListView.as_view(), name="transcript-list"),
    path("transcripts/bulk/flag/", views_queue.bulk_flag_view, name="queue-bulk-flag"),
    path("transcripts/bulk/experiment/", views_queue.bulk_experiment_view, name="queue-bulk-experiment"),
    path("transcripts/bulk/export/", views_queue.bulk_export_view, name="queue-bulk-export"),
    path("transcripts/<int:pk>/", views.TranscriptDetailView.as_view(), name="transcript-detail"),
    path("transcripts/<int:pk>/flags/", views.flag_create_view, name="transcript-flag"),
    path("transcripts/<int:pk>/flags/<int:flag_id>/status/", views.flag_status_view, name="flag-status"),
    path("transcripts/<int:transcript_pk>/experiment/", views_experiments.experiment_start_view, name="experiment-start"),
    path("experiments/", views_experiments.experiment_list_view, name="experiment-list"),
    path("experiments/<int:pk>/", views_experiments.experiment_detail_view, name="experiment-detail"),
    path("experiments/<int:pk>/progress/", views_experiments.experiment_progress_view, name="experiment-progress"),
    path("experiments/<int:pk>/report.html", views_experiments.experiment_report_view, name="experiment-report"),
    path("backends/", views_backends.backend_list_view, name="backend-list"),
    path("backends/<int:pk>/health/", views_backends.backend_health_view, name="backend-health"),
    path("profiles/", views_backends.kernel_profile_list_view, name="profile-list"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", include("triage.api_urls")),
]
