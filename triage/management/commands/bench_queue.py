"""python manage.py bench_queue [--n 100000] [--repeat 15] [--keep] [--json]

The triage queue (/transcripts/) at scale: bulk-creates N generated transcripts (varied
models, kernel profiles, temperatures, verdicts, severities, reasons, flags, received over
30 days, many sharing a received_at second) under the source `bench-queue` in the configured
database (DATABASE_URL; the 200 ms target is for PostgreSQL), then times the page
server-side through Django's test Client as a logged-in engineer — middleware, session,
queries and template included — for several filter/sort combinations, on the first page and
on a cursor page deep in the order. Prints median/p95 ms and queries per page. Deletes what
it created at the end (--keep keeps it; a later run deletes leftovers first).
"""

from __future__ import annotations

import json
import platform
import random
import statistics
import sys
import time
from datetime import timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.db.utils import OperationalError
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from tqdm import tqdm

from triage import selectors
from triage.models import Flag, KernelProfile, Transcript
from triage.roles import ENGINEERS, ensure_groups

SOURCE = "bench-queue"
USERNAME = "bench-queue-engineer"
PROFILES = {f"{SOURCE}-dense": {"attention": "dense"}, f"{SOURCE}-sparse": {"attention": "sparse"},
            f"{SOURCE}-fp8": {"kv_cache_dtype": "fp8_e4m3"}}
MODELS = ("smollm2-135m-instruct", "smollm2-360m-instruct", "llama-3.1-8b-instruct", "qwen2.5-7b-instruct")
TEMPERATURES = (0.0, 0.6, 0.6, 0.6, 0.7, 1.0)
REASONS = ("tail_loop", "repeat_run", "near_verbatim_loop", "counting_loop", "confabulated_turn", "nesting",
           "markup_flood", "runaway")
WORDS = ("the model cache kernel attention token decode prefill page budget sparse dense query key value router "
         "latency sample temperature batch layer head softmax score index select memory request response user "
         "system answer explain because however therefore results shows measured faster").split()
BATCH = 2000
DEEP_FRACTION = 0.6  # the deep page starts this far down the filter's order


def _generate(rng: random.Random, index: int, *, now, profiles: list) -> Transcript:
    temperature = rng.choice(TEMPERATURES)
    degenerate = rng.random() < (0.45 if temperature == 0.0 else 0.12)
    reasons = []
    if degenerate:
        for code in rng.sample(REASONS, rng.randint(1, 3)):
            reasons.append({"code": code, "message": f"{code.replace('_', ' ')} (generated)", "severity": 0.5})
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 60)))
    response = words + (" </div>" * 60 if degenerate else "")
    # Whole seconds over 30 days: ~2.6 M values for N rows, so equal received_at occur (the
    # cursor's id tie-break is exercised at scale, not only in tests).
    received = now - timedelta(seconds=rng.randrange(30 * 86400))
    return Transcript(
        source=SOURCE, request_id=f"{SOURCE}-{index:07d}", content_hash=f"{index:064x}", received_at=received,
        model=rng.choice(MODELS), messages=[{"role": "user", "content": "Write a small HTML page."}],
        response=response, finish_reason="length" if degenerate and rng.random() < 0.5 else "stop",
        sampling={"temperature": temperature, "top_p": 0.95, "max_tokens": 1024}, temperature=temperature,
        kernel_profile=rng.choice(profiles), degenerate=degenerate,
        severity=round(rng.uniform(0.3, 1.0), 3) if degenerate else round(rng.uniform(0.0, 0.2), 3),
        reasons=reasons, flagged=rng.random() < (0.2 if degenerate else 0.01),
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


class Command(BaseCommand):
    help = "Benchmark the triage queue page over N generated transcripts (server time and queries per page)."

    def add_arguments(self, parser):
        parser.add_argument("--n", type=int, default=100_000, help="transcripts to generate (default 100,000)")
        parser.add_argument("--repeat", type=int, default=15, help="timed requests per scenario and page")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--keep", action="store_true", help="keep the generated rows (deleted by the next run)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **opts):
        if opts["n"] < 1 or opts["repeat"] < 1:
            raise CommandError("--n and --repeat must be at least 1")
        try:
            connection.ensure_connection()
        except OperationalError as exc:
            raise CommandError(f"cannot reach the database ({str(exc).strip().splitlines()[-1]}); create it and "
                               "migrate first (DATABASE_URL=... python manage.py migrate)") from None
        quiet = opts["json"]
        self._cleanup()  # leftovers of an interrupted or --keep run
        try:
            started = time.perf_counter()
            user = self._load(opts["n"], opts["seed"], quiet=quiet)
            load_s = time.perf_counter() - started
            results = self._measure(user, repeat=opts["repeat"], quiet=quiet)
        finally:
            if not opts["keep"]:
                self._cleanup()
        report = {
            "n": opts["n"], "database": connection.vendor, "debug": settings.DEBUG, "repeat": opts["repeat"],
            "load_s": round(load_s, 1), "cpu": _cpu_model(), "python": platform.python_version(),
            "scenarios": results,
        }
        if opts["json"]:
            self.stdout.write(json.dumps(report))
        else:
            self._table(report)

    # --- data ------------------------------------------------------------------------------

    def _load(self, n: int, seed: int, *, quiet: bool):
        ensure_groups()
        user, _ = get_user_model().objects.get_or_create(username=USERNAME)
        user.groups.add(Group.objects.get(name=ENGINEERS))
        profiles = [KernelProfile.objects.create(name=name, settings=kernel) for name, kernel in PROFILES.items()]
        profiles.append(None)  # some transcripts name no profile
        rng, now = random.Random(seed), timezone.now()
        statuses = Flag.Status.values
        with tqdm(total=n, desc="generating transcripts", unit="row", disable=quiet, file=sys.stderr) as bar:
            for start in range(0, n, BATCH):
                rows = [_generate(rng, i, now=now, profiles=profiles) for i in range(start, min(n, start + BATCH))]
                with transaction.atomic():
                    Transcript.objects.bulk_create(rows, batch_size=BATCH)
                    Flag.objects.bulk_create([
                        Flag(transcript=t, reason="repetition" if t.degenerate else "other", source=SOURCE,
                             status=rng.choice(statuses))
                        for t in rows if t.flagged
                    ])
                bar.update(len(rows))
        if connection.vendor == "postgresql":  # fresh statistics, as autovacuum would have soon
            with connection.cursor() as cursor:
                cursor.execute(f"ANALYZE {Transcript._meta.db_table}")
                cursor.execute(f"ANALYZE {Flag._meta.db_table}")
        return user

    def _cleanup(self) -> None:
        Flag.objects.filter(transcript__source=SOURCE).delete()
        with connection.cursor() as cursor:  # a plain DELETE: the ORM would load every row to cascade
            cursor.execute(f"DELETE FROM {Transcript._meta.db_table} WHERE source = %s", [SOURCE])
        KernelProfile.objects.filter(name__in=list(PROFILES)).delete()
        get_user_model().objects.filter(username=USERNAME).delete()

    # --- timing ----------------------------------------------------------------------------

    def _scenarios(self) -> list[tuple[str, dict]]:
        some_profile = next(iter(PROFILES))
        return [
            ("all, newest first", {}),
            ("degenerate", {"degenerate": "1"}),
            ("all, by severity", {"sort": "severity"}),
            ("degenerate, by severity", {"degenerate": "1", "sort": "severity"}),
            ("flagged, status new", {"flagged": "1", "flag_status": "new"}),
            ("model + profile + T 0.5–0.7", {"model": MODELS[0], "kernel_profile": some_profile,
                                             "temperature_min": "0.5", "temperature_max": "0.7"}),
            ("last 7d, reason tail_loop", {"range": "7d", "reason": "tail_loop"}),
            ("text search 'softmax'", {"q": "softmax"}),
            ("text search, no match", {"q": "zebra-unicorn"}),
        ]

    def _deep_cursor(self, params: dict) -> str | None:
        """The cursor of the row DEEP_FRACTION down this filter's order (what following 'older'
        that many pages would reach)."""
        from triage.views_queue import QueueFilterForm

        form = QueueFilterForm(params)
        assert form.is_valid(), form.errors
        sort = form.cleaned_data["sort"] or "time"
        field = selectors.QUEUE_SORTS[sort]
        qs = selectors.transcript_list(filters=form.filters()).order_by(f"-{field}", "-id")
        count = qs.count()
        if count < 2 * 50:
            return None
        row = qs.select_related(None).only("id", "received_at", "severity")[int(count * DEEP_FRACTION)]
        return selectors.queue_cursor(sort=sort, row=row)

    def _measure(self, user, *, repeat: int, quiet: bool) -> list[dict]:
        results = []
        with override_settings(ALLOWED_HOSTS=[*settings.ALLOWED_HOSTS, "testserver"]):
            client = Client()
            client.force_login(user)
            scenarios = self._scenarios()
            for name, params in tqdm(scenarios, desc="timing the queue", unit="scenario", disable=quiet, file=sys.stderr):
                pages = [("first page", params)]
                deep = self._deep_cursor(params)
                if deep:
                    pages.append((f"deep page ({DEEP_FRACTION:.0%} down)", {**params, "cursor": deep}))
                for page_name, query in pages:
                    url = "/transcripts/?" + urlencode(query)
                    for _ in range(2):  # warm-up: caches, plans
                        client.get(url)
                    connection.queries_log.clear()  # (a full log, 9,000 entries, would capture nothing)
                    with CaptureQueriesContext(connection) as captured:
                        response = client.get(url)
                    if response.status_code != 200:
                        raise CommandError(f"{url} answered {response.status_code}")
                    rows = response.content.count(b'class="row')
                    times = []
                    for _ in range(repeat):
                        t0 = time.perf_counter()
                        client.get(url)
                        times.append((time.perf_counter() - t0) * 1000)
                    results.append({
                        "scenario": name, "page": page_name, "query": urlencode(params), "rows": rows,
                        "median_ms": round(statistics.median(times), 1), "p95_ms": round(percentile(times, 95), 1),
                        "queries": len(captured.captured_queries),
                    })
        return results

    def _table(self, report: dict) -> None:
        self.stdout.write(f"{report['n']:,} transcripts on {report['database']} (DEBUG={report['debug']}, "
                          f"loaded in {report['load_s']} s) · {report['cpu']} · {report['repeat']} requests each")
        self.stdout.write(f"{'scenario':32} {'page':22} {'rows':>4} {'median ms':>10} {'p95 ms':>8} {'queries':>7}")
        for r in report["scenarios"]:
            self.stdout.write(f"{r['scenario']:32} {r['page']:22} {r['rows']:>4} {r['median_ms']:>10} "
                              f"{r['p95_ms']:>8} {r['queries']:>7}")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
