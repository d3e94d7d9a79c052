"""Celery tasks: thin — an id in, a service call (docs/architecture.md, "Conventions"). Retries and time limits
are declared here; idempotency lives in the services (unique samples, claimed finalization)."""

from celery import shared_task
from django.conf import settings
from django.db import DatabaseError

from triage.experiments import services as experiments


@shared_task(name="triage.ping", ignore_result=False, time_limit=30)
def ping(value: str = "pong") -> str:
    """Round-trip check used by tests and `celery inspect`: proves a worker consumes the broker."""
    return value


@shared_task(name="triage.experiment_chunk", acks_late=True, reject_on_worker_lost=True,
             autoretry_for=(DatabaseError,), retry_backoff=2, retry_backoff_max=60, max_retries=3,
             time_limit=settings.EXPERIMENT_CHUNK_TIME_LIMIT, soft_time_limit=settings.EXPERIMENT_CHUNK_TIME_LIMIT - 30)
def experiment_chunk(chunk_id: int) -> str:
    """Generate one chunk (a case's seed indices, every arm at once)."""
    return experiments.chunk_run(chunk_id=chunk_id)


@shared_task(name="triage.experiment_finalize", acks_late=True, reject_on_worker_lost=True,
             autoretry_for=(DatabaseError,), retry_backoff=2, max_retries=3, time_limit=3600, soft_time_limit=3540)
def experiment_finalize(experiment_id: int) -> str | None:
    """Statistics, divergence and diagnosis once every chunk has ended."""
    return experiments.experiment_finalize(experiment_id=experiment_id)


@shared_task(name="triage.experiment_sweep", time_limit=120)
def experiment_sweep() -> dict:
    """Periodic (celery beat): re-dispatch chunks whose worker is gone, close experiments."""
    return experiments.experiment_sweep()
