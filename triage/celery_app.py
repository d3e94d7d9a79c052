"""The Celery app. Embedded default: the filesystem broker under var/celery (no Redis);
production: CELERY_BROKER_URL=redis://... (settings.py holds both)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "triage.settings")

app = Celery("triage")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["triage"])
