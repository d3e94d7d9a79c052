"""`python manage.py bench_experiment [--json] [--samples 16] [--max-tokens 128] [--backend-url URL]`

A 3-arm experiment (dense, sparse budget 512, sparse budget 128) × 16 samples × 128 tokens
on a ~1,500-token conversation, through a real Celery worker and the bundled backend, timed
against the same 48 requests sent straight to the backend: all at once (the floor) and one
after another (the naive loop). Also prints the engine's prefill count for the experiment
(1 per cache layout when sharing works: the three arms share one layout).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Max

from triage.backends import BackendClient
from triage.experiments import services
from triage.management.commands.bootstrap import profiles_ensure
from triage.models import Backend, Experiment, Sample, Transcript
from triage.services.ingest import transcript_ingest

ARMS = [
    {"name": "dense", "profile": "stock"},
    {"name": "sparse-512", "kernel": {"attention": "sparse", "sparse_budget": 512}},
    {"name": "sparse-128", "kernel": {"attention": "sparse", "sparse_budget": 128}},
]
ROOT = Path(__file__).resolve().parents[3]


def bench_conversation(target_chars: int = 6000) -> list[dict]:
    """A pasted document and a question, about 1,500 tokens (the demo data's long chats)."""
    from inference.demo_data import long_conversations

    messages = long_conversations(random.Random(7))[0]
    out, total = [], 0
    for message in messages:
        content = message["content"]
        if total + len(content) > target_chars:
            content = content[: max(200, target_chars - total)]
        out.append({"role": message["role"], "content": content})
        total += len(content)
        if total >= target_chars:
            break
    if out[-1]["role"] != "user":
        out.append({"role": "user", "content": "Summarize the discussion above in five bullet points."})
    return out


@contextlib.contextmanager
def _worker(env: dict):
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "triage.celery_app", "worker", "--pool=solo", "--loglevel=WARNING",
         "--without-heartbeat", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        from inference.testing import stop_process

        stop_process(process, timeout=30)


class Command(BaseCommand):
    help = "Time an experiment through the worker against the same requests sent straight to the backend."

    def add_arguments(self, parser):
        parser.add_argument("--samples", type=int, default=16)
        parser.add_argument("--max-tokens", type=int, default=128)
        parser.add_argument("--backend-url", default=None, help="a running bundled backend (default: start one)")
        parser.add_argument("--timeout", type=float, default=1800)
        parser.add_argument("--skip-naive", action="store_true", help="skip the one-after-another loop (slow)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        profiles_ensure()
        if options["backend_url"]:
            self._run(options["backend_url"], options)
            return
        from inference.testing import spawn_server

        self.stderr.write("starting the bundled backend …")
        with spawn_server("--devices", "cpu", "--max-cache-tokens", "65536") as url:
            self._run(url + "/v1", options)

    def _log(self, text: str) -> None:
        self.stderr.write(text)

    def _run(self, url: str, options) -> None:
        samples, max_tokens = options["samples"], options["max_tokens"]
        backend, _ = Backend.objects.update_or_create(name="bench", defaults={"kind": Backend.Kind.BUNDLED, "base_url": url})
        messages = bench_conversation()
        result = transcript_ingest(source="bench", payload={
            "request_id": "bench-1500", "messages": messages, "model": "bench",
            "response": {"content": "(benchmark conversation)", "finish_reason": "stop"},
            "sampling": {"temperature": 0.6, "top_p": 0.95, "max_tokens": max_tokens}})
        transcript = Transcript.objects.get(pk=result.id)
        client = BackendClient.for_backend(backend, timeout=settings.BACKEND_TIMEOUT)
        sampling = {"temperature": 0.6, "top_p": 0.95, "max_tokens": max_tokens}
        from triage.experiments.arms import explicit_arms

        kernels = [p.kernel for p in explicit_arms([{**a, "backend": "bench"} for a in ARMS], fallback=backend)]
        client.generate(messages=[{"role": "user", "content": "Hi"}], n=1, seed=0, sampling={**sampling, "max_tokens": 4},
                        kernel=None)  # warm-up

        def one(job):
            kernel, seed = job
            return client.generate(messages=messages, n=1, seed=seed, sampling=sampling, kernel=kernel)

        jobs = [(k, 1000 + i) for k in kernels for i in range(samples)]
        self._log(f"floor: {len(jobs)} requests at once …")
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            list(pool.map(one, jobs))
        floor = time.perf_counter() - t0
        naive = None
        if not options["skip_naive"]:
            self._log(f"naive loop: {len(jobs)} requests one after another …")
            t0 = time.perf_counter()
            for job in jobs:
                one(job)
            naive = time.perf_counter() - t0

        before = self._counters(client)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self._log("experiment through the worker …")
        with _worker(env):
            experiment = services.experiment_start(transcripts=[transcript.pk],
                                                   arms=[{**a, "backend": "bench"} for a in ARMS],
                                                   samples=samples, max_tokens=max_tokens, base_seed=1000, via="bench")
            total = samples * len(ARMS)
            deadline = time.monotonic() + options["timeout"]
            while Sample.objects.filter(arm__experiment=experiment).count() < total:
                experiment.refresh_from_db()
                if experiment.is_final or time.monotonic() > deadline:
                    raise CommandError(f"experiment {experiment.pk} ended {experiment.status} before its samples were "
                                       f"done: {experiment.error or 'timeout'}")
                time.sleep(0.2)
            after = self._counters(client)
            while not Experiment.objects.get(pk=experiment.pk).is_final and time.monotonic() < deadline:
                time.sleep(0.5)
        experiment.refresh_from_db()
        last = Sample.objects.filter(arm__experiment=experiment).aggregate(last=Max("created_at"))["last"]
        sampling_s = (last - experiment.started_at).total_seconds()
        total_s = (experiment.finished_at - experiment.started_at).total_seconds() if experiment.finished_at else None
        report = {
            "arms": [a["name"] for a in ARMS], "samples_per_arm": samples, "max_tokens": max_tokens,
            "requests": len(jobs),
            "experiment_s": round(sampling_s, 2),
            "experiment_with_analysis_s": round(total_s, 2) if total_s else None,
            "floor_all_at_once_s": round(floor, 2),
            "naive_one_by_one_s": round(naive, 2) if naive else None,
            "ratio_to_floor": round(sampling_s / floor, 3),
            "speedup_over_naive": round(naive / sampling_s, 2) if naive else None,
            "engine_prefills": (after.get("prefill_sequences", 0) - before.get("prefill_sequences", 0)),
            "engine_prefill_tokens": (after.get("prefill_tokens", 0) - before.get("prefill_tokens", 0)),
            "engine_shared_prefill_tokens": (after.get("shared_prefill_tokens", 0) - before.get("shared_prefill_tokens", 0)),
            "experiment_id": experiment.pk, "status": experiment.status, "verdict": experiment.verdict,
            "targets": {"ratio_to_floor_at_most": 1.25, "speedup_over_naive_at_least": 5.0},
        }
        client.close()
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        for key, value in report.items():
            self.stdout.write(f"{key:>32}: {value}")

    @staticmethod
    def _counters(client: BackendClient) -> dict:
        totals: dict[str, int] = {}
        for replica in client.health().get("replicas", []):
            for key in ("prefill_sequences", "prefill_tokens", "shared_prefill_tokens"):
                totals[key] = totals.get(key, 0) + int(replica.get(key) or 0)
        return totals
