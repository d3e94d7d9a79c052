from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from triage import views

urlpatterns = [
    path("", views.TranscriptListView.as_view(), name="transcript-list"),
    path("transcripts/<int:pk>/", views.TranscriptDetailView.as_view(), name="transcript-detail"),
    path("transcripts/<int:pk>/flags/", views.flag_create_view, name="transcript-flag"),
    path("transcripts/<int:pk>/flags/<int:flag_id>/status/", views.flag_status_view, name="flag-status"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", include("triage.api_urls")),
]
