"""Experiments through real Celery worker processes and Redis: a worker SIGKILLed in the middle
of an experiment and restarted finishes with exactly N samples per arm and case (the sweep
re-dispatches the chunk whose heartbeat stopped; unique samples make redelivery harmless)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from triage.experiments import services
from triage.models import Arm, Experiment, ExperimentChunk, Sample

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.services]


def _database_url() -> str:
    s = connection.settings_dict
    if connection.vendor == "postgresql":
        return f"postgres://{s['USER'] or 'postgres'}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    return f"sqlite:///{s['NAME']}"


def _worker(env: dict, tmp_path: Path, name: str) -> subprocess.Popen:
    log = open(tmp_path / f"{name}.log", "w")
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "triage.celery_app", "worker", "--pool=solo", "--loglevel=INFO",
         "-B", "--schedule", str(tmp_path / f"beat-{name}"), "--without-heartbeat", "--without-gossip",
         "--without-mingle", "-n", f"{name}@%h"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _wait(predicate, seconds: float, what: str, logs: list[Path]):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    tails = "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in logs if p.exists())
    raise AssertionError(f"timed out after {seconds:.0f}s waiting for {what}\n{tails}")


def test_worker_sigkilled_mid_experiment_and_restarted_finishes_with_exactly_n(
        postgres_transactional_db, redis_url, bundled_server_url, demo_transcripts, tmp_path, settings):
    from kombu import Connection

    from triage.management.commands.bootstrap import profiles_ensure
    from triage.models import Backend
    from triage.tasks import experiment_chunk

    profiles_ensure()
    Backend.objects.filter(name="bundled").update(base_url=bundled_server_url)
    settings.EXPERIMENT_CHUNK_SIZE = 2
    samples = 8
    experiment = services.experiment_start(
        transcripts=[demo_transcripts["demo-0024"].pk, demo_transcripts["demo-0019"].pk], samples=samples,
        max_tokens=24, arms=[{"profile": "stock"}, {"profile": "sparse"}], dispatch=False)
    env = {**os.environ, "DATABASE_URL": _database_url(), "CELERY_BROKER_URL": redis_url,
           "EXPERIMENT_HEARTBEAT_SECONDS": "1", "EXPERIMENT_STALE_SECONDS": "8", "EXPERIMENT_SWEEP_SECONDS": "2",
           "EXPERIMENT_CHUNK_SIZE": "2", "DJANGO_SETTINGS_MODULE": "triage.settings", "PYTHONUNBUFFERED": "1"}
    env.pop("CELERY_TASK_ALWAYS_EAGER", None)
    with Connection(redis_url) as broker:
        broker.default_channel.client.flushdb()  # no stale messages from earlier runs
        for chunk in ExperimentChunk.objects.filter(experiment=experiment):
            ExperimentChunk.objects.filter(pk=chunk.pk).update(dispatched_at=chunk.experiment.created_at)
            experiment_chunk.apply_async(args=[chunk.pk], connection=broker)
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    first = _worker(env, tmp_path, "first")
    try:
        _wait(lambda: Sample.objects.filter(arm__experiment=experiment).exists(), 240, "the first samples", logs)
        os.killpg(first.pid, signal.SIGKILL)  # the worker and its embedded beat, mid-experiment
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    done_at_kill = Sample.objects.filter(arm__experiment=experiment).count()
    total = 2 * 2 * samples
    assert done_at_kill < total, "the worker finished before it was killed; lower the chunk size"
    second = _worker(env, tmp_path, "second")
    try:
        _wait(lambda: Experiment.objects.get(pk=experiment.pk).is_final, 420, "the experiment to end", logs)
    finally:
        os.killpg(second.pid, signal.SIGTERM)
        second.wait(timeout=60)
        with Connection(redis_url) as broker:
            broker.default_channel.client.flushdb()  # leave no sweeps or redeliveries to later tests
    experiment.refresh_from_db()
    assert experiment.status == "done", experiment.error
    for arm in Arm.objects.filter(experiment=experiment):
        for case in experiment.cases.all():
            indices = sorted(Sample.objects.filter(arm=arm, case=case).values_list("index", flat=True))
            assert indices == list(range(samples)), (arm.name, case.pk)
    assert experiment.verdict and experiment.diagnosis["evidence"]
