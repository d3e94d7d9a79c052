"""Reads for the backends and kernel profiles pages. Never hands out a backend's api_key: the
pages get the fields they show, nothing else."""

from __future__ import annotations

from django.db.models import Count, QuerySet
from django.shortcuts import get_object_or_404

from triage.models import Backend, KernelProfile

BACKEND_FIELDS = ("id", "name", "kind", "base_url", "model_name", "max_concurrency", "chat_template", "capabilities")


def backend_list() -> QuerySet[Backend]:
    """Backends by name, with how many profiles point at each; the key is not loaded."""
    return Backend.objects.only(*BACKEND_FIELDS).annotate(profile_count=Count("kernelprofile")).order_by("name")


def backend_get(*, backend_id: int) -> Backend:
    """One backend with everything its client needs (the key included: for the health request
    only, never for a template)."""
    return get_object_or_404(Backend, pk=backend_id)


def kernel_profile_list() -> QuerySet[KernelProfile]:
    """Profiles by name with their backend's name and how many transcripts were served under each."""
    return (KernelProfile.objects.select_related("backend").only(
        "id", "name", "settings", "description", "backend__id", "backend__name", "backend__kind")
        .annotate(transcript_count=Count("transcripts")).order_by("name"))
