"""`make run`'s start-up path as a subprocess: migrate, bootstrap (demo user + demo data),
the web server on a free port, log in, the list shows demo transcripts. Also: the Celery
app consumes both the embedded filesystem broker and real Redis."""

import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from inference.testing import stop_process
from triage.net import free_port

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # (manage.py, runserver and Celery workers as subprocesses)


def _env(tmp_path, **extra) -> dict:
    env = dict(os.environ)
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY"):
        env.pop(name, None)
    env.update({"TRIAGE_VAR_DIR": str(tmp_path / "var"), "DEBUG": "1", "PYTHONUNBUFFERED": "1"}, **extra)
    return env


def _manage(args, env, timeout=240) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result


def _wait_http(url: str, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited early: {proc.stdout.read() if proc.stdout else ''}")
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.3)
    raise AssertionError(f"{url} did not answer within {seconds}s")


def test_make_run_startup_path_serves_the_list_after_login(tmp_path):
    env = _env(tmp_path)
    _manage(["migrate", "--noinput"], env)
    boot = _manage(["bootstrap"], env)
    match = re.search(r"as\s+demo / (\S+)", boot.stdout)
    assert match, f"bootstrap did not print the demo login:\n{boot.stdout}"
    password = match.group(1)
    again = _manage(["bootstrap"], env)  # idempotent, password not shown twice
    assert password not in again.stdout and "demo" in again.stdout

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_http(base + "/accounts/login/", server)
        with httpx.Client(base_url=base, follow_redirects=False, timeout=30) as web:
            assert web.get("/").status_code == 302  # login required
            login_page = web.get("/accounts/login/")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login_page.text).group(1)
            done = web.post("/accounts/login/", data={
                "username": "demo", "password": password, "csrfmiddlewaretoken": token, "next": "/"})
            assert done.status_code == 302, done.text[:500]
            home = web.get("/")
            assert home.status_code == 200
            assert "degenerate" in home.text and "Transcripts" in home.text
            plotly = web.get("/static/plotly/plotly.min.js")
            assert plotly.status_code == 200 and len(plotly.content) > 1_000_000
    finally:
        stop_process(server, timeout=20)


def _round_trip_through_worker(env: dict, tmp_path: Path) -> str:
    """A ping sent through the broker comes back from a worker. The ping travels on a queue of its
    own, so a message another test left in a shared broker (a Redis database that earlier tests'
    workers used) cannot hold up or take the ping; the worker's log is in the failure message."""
    queue = f"ping-{uuid.uuid4().hex[:12]}"
    log_path = tmp_path / "worker.log"
    with open(log_path, "w") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "triage.celery_app", "worker", "--pool=solo", "-Q", queue,
             "--loglevel=INFO", "--without-heartbeat", "--without-gossip", "--without-mingle"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
        )
    try:
        sender = subprocess.run(
            [sys.executable, "-c",
             "import django, os; django.setup();"
             "from triage.celery_app import app;"
             f"r = app.send_task('triage.ping', args=['hello-worker'], queue={queue!r});"
             "print(r.get(timeout=90))"],
            cwd=ROOT, env={**env, "DJANGO_SETTINGS_MODULE": "triage.settings"},
            capture_output=True, text=True, timeout=150,
        )
        assert sender.returncode == 0, (f"{sender.stderr[-2000:]}\n--- worker log (exit {worker.poll()})\n"
                                        f"{log_path.read_text()[-3000:]}")
        return sender.stdout.strip().splitlines()[-1]
    finally:
        stop_process(worker, timeout=20)


def test_worker_consumes_the_embedded_filesystem_broker(tmp_path):
    env = _env(tmp_path, CELERY_RESULT_BACKEND=f"file://{tmp_path}/results")
    (tmp_path / "results").mkdir()
    assert _round_trip_through_worker(env, tmp_path) == "hello-worker"


def test_worker_consumes_a_real_redis_broker(tmp_path, redis_url):
    env = _env(tmp_path, CELERY_BROKER_URL=redis_url, CELERY_RESULT_BACKEND=redis_url)
    assert _round_trip_through_worker(env, tmp_path) == "hello-worker"
