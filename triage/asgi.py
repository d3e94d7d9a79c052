"""ASGI entry point (uvicorn triage.asgi:application), used by bench_ingest; the sync
Django views run in a worker thread per process."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "triage.settings")
application = get_asgi_application()
