"""Load the demo transcripts (JSONL) through the same service the REST ingestion uses."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from triage.services import ingest

DEFAULT_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "demo_transcripts.jsonl"


class Command(BaseCommand):
    help = "Ingest demo transcripts from a JSONL file (idempotent: replays are duplicates)."

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", default=str(DEFAULT_FIXTURE))
        parser.add_argument("--source", default="demo")
        parser.add_argument("--batch", type=int, default=100)
        parser.add_argument("--spread-days", type=float, default=6.0,
                            help="spread the newly loaded transcripts' received time evenly over the last N days "
                                 "(the demo file's traffic has no times of its own), so the overview's rate over "
                                 "time has points to draw; 0 keeps them all at now")

    def handle(self, *args, path, source, batch, spread_days=6.0, **options):
        fixture = Path(path)
        if not fixture.exists():
            raise CommandError(f"{fixture} does not exist; generate it with 'python -m inference make-demo-data'")
        payloads, bad_lines = [], []
        for number, line in enumerate(fixture.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                payloads.append(json.loads(line))
            except json.JSONDecodeError as exc:
                bad_lines.append(f"line {number}: not JSON ({exc})")
        counts: dict[str, int] = {}
        created: list[int] = []
        problems = list(bad_lines)
        for start in tqdm(range(0, len(payloads), batch), desc="demo transcripts", unit="batch",
                          disable=options.get("verbosity", 1) < 1):
            for result in ingest.transcript_ingest_batch(source=source, payloads=payloads[start : start + batch]):
                counts[result.status] = counts.get(result.status, 0) + 1
                if result.status == "created":
                    created.append(result.id)
                if result.status in ("invalid", "conflict"):
                    problems.append(f"{result.request_id}: {result.status} {result.errors}")
        if spread_days > 0 and len(created) > 1:
            ingest.transcripts_spread_received(ids=created, days=spread_days)
        summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "nothing"
        self.stdout.write(f"Demo data from {fixture.name}: {summary}.")
        for problem in problems[:10]:
            self.stderr.write(problem)
