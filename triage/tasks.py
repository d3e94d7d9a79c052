"""Celery tasks: thin — an id in, a service call (CONVENTIONS.md)."""

from celery import shared_task


@shared_task(name="triage.ping", ignore_result=False, time_limit=30)
def ping(value: str = "pong") -> str:
    """Round-trip check used by tests and `celery inspect`: proves a worker consumes the broker."""
    return value
