"""python manage.py bench_ingest --transcripts 5000 --batch 100 --clients 4 [--json]

Ingestion throughput and latency over real HTTP, metrics included: single posts of a
typical ~4 KB transcript, then batches. Without --url it starts the app under gunicorn
(triage.wsgi; uvicorn + triage.asgi when gunicorn is not installed; --workers processes) on a free port against the configured database
(DATABASE_URL; the targets are for PostgreSQL), with a throw-away API key and source that
it deletes afterwards (--keep keeps the rows).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from tqdm import tqdm

from triage.net import free_port

ROOT = Path(__file__).resolve().parents[3]
WORDS = ("the model cache kernel attention token decode prefill page budget sparse dense query key value "
         "router latency sample temperature batch layer head softmax score index select memory request "
         "response user system answer explain because however therefore results shows measured faster").split()


def typical_payload(index: int, rng: random.Random, *, run: str) -> dict:
    """A ~4 KB conversation: system + user turn, a varied ~3 KB answer; 3% loop."""
    def sentence() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))).capitalize() + "."

    answer = " ".join(sentence() for _ in range(32))
    finish = "stop"
    if index % 33 == 0:
        answer = answer[:600] + "</div>\n" * 350
        finish = "length"
    return {
        "request_id": f"{run}-{index:07d}",
        "model": "smollm2-135m-instruct",
        "created_at": "2025-01-31T12:00:00Z",
        "messages": [
            {"role": "system", "content": "You are a helpful assistant. " + sentence()},
            {"role": "user", "content": " ".join(sentence() for _ in range(5))},
        ],
        "response": {"content": answer, "finish_reason": finish},
        "sampling": {"temperature": 0.6, "top_p": 0.95, "top_k": 50, "min_p": 0.0, "max_tokens": 1024, "seed": index},
        "kernel": {"attention": "sparse", "sparse_budget": 512},
        "usage": {"prompt_tokens": 120, "completion_tokens": 700, "total_tokens": 820},
        "timings": {"ttft_ms": 41.0, "latency_ms": 2150.0},
        "route": {"prefill": f"prefill-{index % 4}", "decode": f"decode-{index % 8}"},
    }


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def process_tree_cpu_s(root_pid: int | None) -> float | None:
    """User+system CPU seconds of a process and its descendants (Linux /proc), so the
    report can show server CPU per transcript, which a busy shared machine distorts less
    than wall-clock throughput."""
    if root_pid is None or not os.path.isdir("/proc"):
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    parents, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / ticks
    tree, frontier = {root_pid}, [root_pid]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(cpu.get(pid, 0.0) for pid in tree)


class Command(BaseCommand):
    help = "Benchmark REST ingestion (single posts and batches) against a running server."

    def add_arguments(self, parser):
        parser.add_argument("--transcripts", type=int, default=5000, help="transcripts posted in batches")
        parser.add_argument("--batch", type=int, default=100)
        parser.add_argument("--clients", type=int, default=4, help="concurrent client threads")
        parser.add_argument("--singles", type=int, default=1000, help="single posts (latency phase)")
        parser.add_argument("--url", default="", help="server base URL; default: start uvicorn here")
        parser.add_argument("--key", default="", help="API key with the ingest scope (with --url)")
        parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="uvicorn worker processes")
        parser.add_argument("--server", choices=["gunicorn", "uvicorn"], default="",
                            help="WSGI gunicorn (default when installed) or ASGI uvicorn")
        parser.add_argument("--keep", action="store_true", help="keep the benchmark's transcripts")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **opts):
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request otherwise
        if opts["batch"] < 1 or opts["batch"] > settings.INGEST_MAX_BATCH:
            raise CommandError(f"--batch must be between 1 and INGEST_MAX_BATCH ({settings.INGEST_MAX_BATCH})")
        if opts["url"] and not opts["key"]:
            raise CommandError("--url needs --key (python manage.py create_api_key --name bench --scopes ingest)")
        run = f"bench-{int(time.time())}"
        server, key_obj = None, None
        if not opts["url"]:
            from django.db import OperationalError, connection

            try:
                connection.ensure_connection()
            except OperationalError as exc:
                raise CommandError(
                    f"cannot reach the database ({str(exc).strip().splitlines()[-1]}); create it and migrate "
                    "(e.g. createdb -h 127.0.0.1 -U postgres triage && DATABASE_URL=... python manage.py migrate), "
                    "or pass --url and --key of a running server"
                ) from None
        try:
            if opts["url"]:
                url, raw_key = opts["url"].rstrip("/"), opts["key"]
            else:
                from triage.services.keys import api_key_create

                key_obj, raw_key = api_key_create(name=run, scopes=["ingest"], source=run)
                opts["server"] = opts["server"] or ("gunicorn" if importlib.util.find_spec("gunicorn") else "uvicorn")
                url, server = self._start_server(opts["server"], opts["workers"])
            report = self._bench(url, raw_key, run, opts, server.pid if server else None)
        finally:
            if server is not None:
                server.terminate()
                try:
                    server.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    server.kill()
            if key_obj is not None and not opts["keep"]:
                from triage.models import Transcript

                Transcript.objects.filter(source=run).delete()
                key_obj.delete()
        report["server"] = opts["url"] or f"{opts['server']} --workers {opts['workers']} (started here)"
        report["database"] = connection.vendor
        if opts["json"]:
            self.stdout.write(json.dumps(report))
        else:
            self._table(report)

    def _start_server(self, kind: str, workers: int):
        port = free_port()
        env = {**os.environ, "DEBUG": "0", "SECRET_KEY": os.environ.get("SECRET_KEY") or "bench-" + "x" * 40,
               "ALLOWED_HOSTS": "127.0.0.1,localhost", "INGEST_RATE_LIMIT": "0", "LOG_LEVEL": "WARNING"}
        if kind == "gunicorn":  # WSGI: no async/sync hop per request
            command = [sys.executable, "-m", "gunicorn", "triage.wsgi:application", "--bind", f"127.0.0.1:{port}",
                       "--workers", str(workers), "--worker-class", "gthread", "--threads", "1",
                       "--log-level", "warning"]
        else:
            command = [sys.executable, "-m", "uvicorn", "triage.asgi:application", "--host", "127.0.0.1",
                       "--port", str(port), "--workers", str(workers), "--no-access-log", "--log-level", "warning"]
        server = subprocess.Popen(command, cwd=ROOT, env=env)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise CommandError(f"uvicorn exited with {server.returncode}; run it by hand to see why")
            try:
                if httpx.get(url + "/api/schema/", timeout=2).status_code in (200, 401, 403):
                    return url, server
            except httpx.TransportError:
                time.sleep(0.3)
        server.terminate()
        raise CommandError("the server did not answer within 60 s")

    def _run_clients(self, url, raw_key, bodies: list[tuple[bytes, int]], clients: int, label: str, quiet: bool):
        """POST every body from `clients` threads; returns (latencies_ms, wall_s, statuses)."""
        latencies, statuses, lock = [], {}, threading.Lock()
        queue = list(reversed(bodies))
        progress = tqdm(total=sum(n for _, n in bodies), desc=label, unit="transcript", disable=quiet, file=sys.stderr)
        headers = {"Authorization": f"Bearer {raw_key}", "Content-Type": "application/json"}

        def worker():
            with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
                while True:
                    with lock:
                        if not queue:
                            return
                        body, count = queue.pop()
                    started = time.perf_counter()
                    response = client.post("/api/v1/transcripts", content=body)
                    elapsed = (time.perf_counter() - started) * 1000
                    with lock:
                        latencies.append(elapsed)
                        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                        progress.update(count)

        threads = [threading.Thread(target=worker) for _ in range(clients)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
        progress.close()
        return latencies, wall, statuses

    def _bench(self, url, raw_key, run, opts, server_pid) -> dict:
        rng = random.Random(1234)
        quiet = opts["json"]
        single_payloads = [typical_payload(i, rng, run=run) for i in range(opts["singles"] + 20)]
        warmup, singles = single_payloads[:20], single_payloads[20:]
        batch_payloads = [typical_payload(10**6 + i, rng, run=run) for i in range(opts["transcripts"])]
        self._run_clients(url, raw_key, [(json.dumps(p).encode(), 1) for p in warmup], opts["clients"], "warm-up", True)

        single_bodies = [(json.dumps(p).encode(), 1) for p in singles]
        cpu0 = process_tree_cpu_s(server_pid)
        lat_s, wall_s, st_s = self._run_clients(url, raw_key, single_bodies, opts["clients"], "single posts", quiet)
        cpu1 = process_tree_cpu_s(server_pid)
        batches = [batch_payloads[i : i + opts["batch"]] for i in range(0, len(batch_payloads), opts["batch"])]
        batch_bodies = [(json.dumps({"transcripts": b}).encode(), len(b)) for b in batches]
        lat_b, wall_b, st_b = self._run_clients(url, raw_key, batch_bodies, opts["clients"], "batches", quiet)
        cpu2 = process_tree_cpu_s(server_pid)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None

        def summary(latencies, wall, statuses, bodies, cpu_s):
            count = sum(n for _, n in bodies)
            return {
                "server_cpu_ms_per_transcript": round(cpu_s * 1000 / count, 3) if cpu_s is not None and count else None,
                "requests": len(latencies), "transcripts": count,
                "transcripts_per_s": round(count / wall, 1) if wall else None,
                "requests_per_s": round(len(latencies) / wall, 1) if wall else None,
                "p50_ms": round(percentile(latencies, 50), 2), "p99_ms": round(percentile(latencies, 99), 2),
                "mean_ms": round(statistics.fmean(latencies), 2) if latencies else None,
                "mean_body_bytes": round(sum(len(b) for b, _ in bodies) / max(1, len(bodies))),
                "statuses": {str(k): v for k, v in sorted(statuses.items())},
            }

        return {
            "clients": opts["clients"], "batch_size": opts["batch"],
            "single": summary(lat_s, wall_s, st_s, single_bodies, None if cpu0 is None else cpu1 - cpu0),
            "batch": summary(lat_b, wall_b, st_b, batch_bodies, None if cpu0 is None else cpu2 - cpu1),
            "cpus": os.cpu_count(), "load_average_1m_after": round(load, 2) if load is not None else None,
            "targets": {"batch_transcripts_per_s": ">= 1000", "single_p99_ms": "< 50"},
        }

    def _table(self, report):
        self.stdout.write(f"server: {report['server']}   database: {report['database']}   clients: {report['clients']}")
        self.stdout.write(f"{'phase':<10}{'requests':>9}{'transcripts':>12}{'transcripts/s':>15}{'p50 ms':>9}"
                          f"{'p99 ms':>9}{'body B':>9}{'server CPU ms/transcript':>26}  statuses")
        for phase in ("single", "batch"):
            r = report[phase]
            name = phase if phase == "single" else f"batch×{report['batch_size']}"
            self.stdout.write(f"{name:<10}{r['requests']:>9}{r['transcripts']:>12}{r['transcripts_per_s']:>15}"
                              f"{r['p50_ms']:>9}{r['p99_ms']:>9}{r['mean_body_bytes']:>9}"
                              f"{str(r['server_cpu_ms_per_transcript']):>26}  {r['statuses']}")
        self.stdout.write(f"{report['cpus']} CPUs, 1-minute load average after the run: {report['load_average_1m_after']}")
        self.stdout.write("targets: ≥ 1000 transcripts/s in batches of 100; single-post p99 < 50 ms")
