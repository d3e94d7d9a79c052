"""python manage.py reanalyze [--source S] [--all] [--batch 500] [--dry-run] [--json]

Re-analyse the stored transcripts whose verdict came from an older version of the degeneration
detector (``metrics.version``), or every transcript with ``--all``: new metrics, verdict, severity
and reasons, and the automatic flags moved accordingly (see ``triage.services.reanalyze``).
``--dry-run`` writes nothing and says what would change. Prints a summary (``--json``: one JSON
object) with how many verdicts flipped each way and the first few that did.
"""

from __future__ import annotations

import json
import sys
import time

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from triage.degeneration import VERSION
from triage.services.reanalyze import ReanalysisSummary, transcripts_reanalyze, transcripts_to_reanalyze


class Command(BaseCommand):
    help = "Re-analyse transcripts analysed by an older detector version (or all of them)."

    def add_arguments(self, parser):
        parser.add_argument("--source", default=None, help="only the transcripts of this source")
        parser.add_argument("--all", action="store_true", dest="everything",
                            help=f"every transcript, also those already at version {VERSION}")
        parser.add_argument("--batch", type=int, default=500, help="transcripts per transaction (default 500)")
        parser.add_argument("--dry-run", action="store_true", help="write nothing; say what would change")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print the summary as one JSON object")

    def handle(self, *args, source, everything, batch, dry_run, as_json: bool, **options):
        if batch < 1:
            raise CommandError(f"--batch must be at least 1 (got {batch})")
        total = transcripts_to_reanalyze(source=source, everything=everything).count()
        if total == 0:
            what = f" of source {source!r}" if source else ""
            msg = (f"nothing to re-analyse: no transcripts{what}" if everything
                   else f"nothing to re-analyse: every transcript{what} is already at version {VERSION} "
                        f"(--all re-analyses them anyway)")
            if as_json:
                self.stdout.write(_dumps({**ReanalysisSummary(version=VERSION, dry_run=dry_run).to_dict(),
                                          "seconds": 0.0, "per_second": None, "message": msg}))
            else:
                self.stdout.write(msg)
            return
        t0 = time.perf_counter()
        with tqdm(total=total, unit="transcript", desc="re-analysing", file=sys.stderr,
                  disable=not sys.stderr.isatty()) as bar:
            summary = transcripts_reanalyze(source=source, everything=everything, batch=batch, dry_run=dry_run,
                                            progress=bar.update)
        seconds = time.perf_counter() - t0
        out = {**summary.to_dict(), "seconds": round(seconds, 2),
               "per_second": round(summary.examined / seconds, 1) if seconds else None}
        if as_json:
            self.stdout.write(_dumps(out))
            return
        verb = "would change" if dry_run else "changed"
        self.stdout.write(
            f"{summary.examined} transcripts re-analysed under version {VERSION} in {seconds:.1f} s "
            f"({out['per_second']}/s): {summary.changed} verdicts {verb} "
            f"({summary.now_degenerate} now degenerate, {summary.no_longer_degenerate} no longer)"
            + (f"; {summary.flags_created} automatic flags {'to create' if dry_run else 'created'}, "
               f"{summary.flags_resolved} {'to resolve' if dry_run else 'resolved'}")
            + (f"; {summary.failed} analyses failed (old verdicts kept, the error in each transcript's warnings)"
               if summary.failed else "")
            + (f"; {summary.skipped_newer} judged by a newer version left alone" if summary.skipped_newer else ""))
        for ex in summary.examples:
            self.stdout.write(f"  #{ex['id']} {ex['request_id']}: {'degenerate' if ex['was'] else 'healthy'} "
                              f"(version {ex['version_was']}) -> {'degenerate' if ex['now'] else 'healthy'}"
                              + (f" [{', '.join(ex['reasons'])}]" if ex["reasons"] and ex["now"] else ""))
        if dry_run:
            self.stdout.write("dry run: nothing was written")


def _dumps(obj) -> str:
    return json.dumps(obj, ensure_ascii=False)
