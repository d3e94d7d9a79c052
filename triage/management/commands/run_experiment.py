"""`python manage.py run_experiment --transcript ID [--transcript ID ...] [--arms JSON]
[--samples N] [--max-tokens M] [--ablate] [--wait] [--json]`

Starts an experiment (the same service as POST /api/v1/experiments). The worker does the
work; --wait shows a progress bar per arm (samples done / total) and then prints the result;
--inline runs it in this process instead (no worker needed). --json prints the API's JSON.
"""

from __future__ import annotations

import json
import sys
import time

from django.core.management.base import BaseCommand, CommandError

from triage.experiments import selectors, services
from triage.experiments.arms import ExperimentInputError
from triage.models import Experiment


def _parse_json(option: str, text: str | None):
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(f"{option} is not valid JSON ({exc.msg} at char {exc.pos}); e.g. "
                           "--arms '[{\"profile\": \"stock\"}, {\"profile\": \"sparse\", \"kernel\": {\"sparse_budget\": 64}}]'")


class Command(BaseCommand):
    help = "Regenerate transcripts under several kernel settings at the production temperature and diagnose them."

    def add_arguments(self, parser):
        parser.add_argument("--transcript", type=int, action="append", dest="transcripts", metavar="ID",
                            help="transcript id (repeat for a suite)")
        parser.add_argument("--selection", help='a queue selection as JSON, e.g. \'{"flagged": true, "last_hours": 24}\'')
        parser.add_argument("--arms", help="arms as JSON (default: stock, the served profile, greedy control if T=0)")
        parser.add_argument("--samples", type=int, default=None, help="samples per arm and case (default 16)")
        parser.add_argument("--max-tokens", type=int, default=None)
        parser.add_argument("--base-seed", type=int, default=None)
        parser.add_argument("--ablate", action="store_true", help="one arm per kernel component that differs from stock")
        parser.add_argument("--allow-greedy-only", action="store_true")
        parser.add_argument("--name", default="")
        parser.add_argument("--wait", action="store_true", help="wait for the worker, with progress bars")
        parser.add_argument("--inline", action="store_true", help="run it in this process (no worker needed)")
        parser.add_argument("--timeout", type=float, default=3600, help="seconds --wait waits (default 3600)")
        parser.add_argument("--json", action="store_true", help="print the API's JSON")

    def handle(self, *args, **options):
        selection = _parse_json("--selection", options["selection"])
        if selection is not None:
            from triage.api_experiments import SelectionInput

            checked = SelectionInput(data=selection)
            if not checked.is_valid():
                raise CommandError(f"--selection: {checked.errors}")
            selection = checked.validated_data
        try:
            experiment = services.experiment_start(
                transcripts=options["transcripts"], selection=selection, arms=_parse_json("--arms", options["arms"]),
                samples=options["samples"], max_tokens=options["max_tokens"], ablate=options["ablate"],
                allow_greedy_only=options["allow_greedy_only"], base_seed=options["base_seed"], name=options["name"],
                via="command", dispatch=not options["inline"])
        except ExperimentInputError as exc:
            raise CommandError("; ".join(f"{k}: {v}" for k, v in exc.errors.items())) from None
        if not options["json"]:
            self.stderr.write(f"experiment {experiment.pk} started: {experiment.name}")
        if options["inline"]:
            experiment = self._inline(experiment, quiet=options["json"])
        elif options["wait"]:
            experiment = self._wait(experiment, options["timeout"], quiet=options["json"])
        detail = selectors.experiment_detail(experiment=experiment, positions=False)
        if options["json"]:
            self.stdout.write(json.dumps(detail, default=str, indent=2))
        else:
            self.stdout.write(_table(detail))

    def _bars(self, experiment, quiet: bool):
        from tqdm import tqdm

        detail = selectors.experiment_detail(experiment=experiment, positions=False)
        if quiet:
            return detail, {}
        bars = {a["id"]: tqdm(total=a["progress"]["total"], desc=a["name"][:28].ljust(28), unit="sample",
                              file=sys.stderr, position=i, leave=True) for i, a in enumerate(detail["arms"])}
        return detail, bars

    @staticmethod
    def _update(bars, detail) -> None:
        for arm in detail["arms"]:
            bar = bars.get(arm["id"])
            if bar is not None:
                bar.n = arm["progress"]["done"]
                bar.refresh()

    def _inline(self, experiment, *, quiet: bool):
        detail, bars = self._bars(experiment, quiet)

        def on_chunk(_chunk):
            self._update(bars, selectors.experiment_detail(experiment=experiment, positions=False))

        experiment = services.experiment_run_inline(experiment=experiment, on_chunk=on_chunk)
        for bar in bars.values():
            bar.close()
        return experiment

    def _wait(self, experiment, timeout: float, *, quiet: bool):
        detail, bars = self._bars(experiment, quiet)
        deadline = time.monotonic() + timeout
        try:
            while True:
                experiment.refresh_from_db()
                detail = selectors.experiment_detail(experiment=experiment, positions=False)
                self._update(bars, detail)
                if experiment.status in Experiment.FINAL:
                    return experiment
                if time.monotonic() > deadline:
                    raise CommandError(f"experiment {experiment.pk} is still {experiment.status} after {timeout:.0f}s; "
                                       "is a worker running? (make run starts one)")
                time.sleep(1.0)
        finally:
            for bar in bars.values():
                bar.close()


def _pct(x) -> str:
    return "  n/a" if x is None else f"{100 * x:4.0f}%"


def _table(detail: dict) -> str:
    lines = [f"experiment {detail['id']} — {detail['status']}"
             + (f" — verdict: {detail['verdict']}" if detail.get("verdict") else "")]
    kl = {d["arm_id"]: d["summary"].get("mean") for d in detail["divergence"] if d["kind"] == "kernel"}
    tests = {t["arm_id"]: t for t in detail["tests"]}
    lines.append(f"{'arm':<30} {'T':>4} {'done':>9} {'degenerate (95% CI)':>22} {'p vs stock':>11} {'mean KL':>9}")
    for arm in detail["arms"]:
        rate = (arm["stats"] or {}).get("rate") or {}
        ci = f"{_pct(rate.get('rate'))} ({_pct(rate.get('ci_low')).strip()}–{_pct(rate.get('ci_high')).strip()})"
        p = (tests.get(arm["id"]) or {}).get("mcnemar", {}).get("p_value")
        mean_kl = kl.get(arm["id"])
        lines.append(f"{arm['name'][:30]:<30} {arm['sampling'].get('temperature', 0):>4g} "
                     f"{arm['progress']['done']:>4}/{arm['progress']['total']:<4} {ci:>22} "
                     f"{'' if p is None else f'{p:.3g}':>11} {'' if mean_kl is None else f'{mean_kl:.3g}':>9}"
                     + (f"  error: {arm['error']}" if arm.get("error") else ""))
    diagnosis = detail.get("diagnosis") or {}
    if diagnosis:
        lines.append("")
        lines.append(diagnosis.get("summary", ""))
        lines.extend(f"  - {e}" for e in diagnosis.get("evidence", []))
    if detail.get("error"):
        lines.append(f"error: {detail['error']}")
    return "\n".join(lines) + "\n"
