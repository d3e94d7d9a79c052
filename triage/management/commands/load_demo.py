"""Load the demo transcripts (JSONL) through the same service the REST ingestion uses."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from triage import services

DEFAULT_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "demo_transcripts.jsonl"


class Command(BaseCommand):
    help = "Ingest demo transcripts from a JSONL file (idempotent: replays are duplicates)."

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", default=str(DEFAULT_FIXTURE))
        parser.add_argument("--source", default="demo")
        parser.add_argument("--batch", type=int, default=100)

    def handle(self, *args, path, source, batch, **options):
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
        problems = list(bad_lines)
        for start in tqdm(range(0, len(payloads), batch), desc="demo transcripts", unit="batch",
                          disable=options.get("verbosity", 1) < 1):
            for result in services.transcript_ingest_batch(source=source, payloads=payloads[start : start + batch]):
                counts[result.status] = counts.get(result.status, 0) + 1
                if result.status in ("invalid", "conflict"):
                    problems.append(f"{result.request_id}: {result.status} {result.errors}")
        summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "nothing"
        self.stdout.write(f"Demo data from {fixture.name}: {summary}.")
        for problem in problems[:10]:
            self.stderr.write(problem)
