"""Precision / recall of the verdict on the labelled set, per class.

    python -m triage.degeneration.evaluate [--file testdata/labelled.jsonl] [--errors] [--margins] [--markdown]
    python -m triage.degeneration.evaluate --file triage/degeneration/testdata/independent.jsonl --errors
    python -m triage.degeneration.evaluate --heldout --split tune --errors   # tune here only
    python -m triage.degeneration.evaluate --heldout --split test --by shape  # report, never tune

``--errors`` lists every misclassified item with its reasons; ``--margins`` shows, for the
healthy items, the ones closest to being flagged (their severity and strongest metric).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .analyze import analyze

LABELLED = Path(__file__).resolve().parent / "testdata" / "labelled.jsonl"
# Two probe sets written by separate agents that never saw the detector (testdata/independent/):
# `--file` it to evaluate on them.
INDEPENDENT = Path(__file__).resolve().parent / "testdata" / "independent.jsonl"
# The held-out set (testdata/HELDOUT.md): split once by id into `tune` and `test`; thresholds are
# tuned on `tune` only and `test` is what the README reports.
HELDOUT = Path(__file__).resolve().parent / "testdata" / "heldout.jsonl"
CLASS_ORDER = ["model_greedy", "model_t0.6", "model_normal", "model_no_eos", "model_no_stop", "production_degenerate",
               "written_degenerate", "written_healthy",
               "human_prose", "repetitive_healthy", "repetitive_healthy_cut",
               "independent_degenerate", "independent_healthy"]


@dataclass
class Counts:
    n: int = 0
    pos: int = 0    # labelled degenerate
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    errors: list = field(default_factory=list)

    def add(self, label: bool, pred: bool, rec=None):
        self.n += 1
        self.pos += label
        if label and pred:
            self.tp += 1
        elif pred:
            self.fp += 1
            self.errors.append(("FP", rec))
        elif label:
            self.fn += 1
            self.errors.append(("FN", rec))
        else:
            self.tn += 1

    @property
    def precision(self):
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self):
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def accuracy(self):
        return (self.tp + self.tn) / self.n if self.n else None


def load(path=LABELLED) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def run(items, by: str = "class") -> tuple[dict, Counts, list]:
    per = defaultdict(Counts)
    total = Counts()
    rows = []
    for it in items:
        a = analyze(it["text"], finish_reason=it.get("finish_reason"), messages=it.get("messages"),
                    token_ids=it.get("token_ids"), token_logprobs=it.get("token_logprobs"))
        rec = (it, a)
        per[it.get(by) or "-"].add(it["label"], a.degenerate, rec)
        total.add(it["label"], a.degenerate, rec)
        rows.append(rec)
    return per, total, rows


def _f(x):
    return "—" if x is None else f"{x:.3f}"


def table(per: dict, total: Counts, markdown: bool = False, by: str = "class") -> str:
    head = [by, "items", "degenerate (label)", "flagged", "TP", "FP", "FN", "precision", "recall"]
    lines = []
    classes = [c for c in CLASS_ORDER if c in per] + sorted(
        (c for c in per if c not in CLASS_ORDER), key=lambda c: (per[c].pos == 0, c))
    body = []
    for c in classes + ["all"]:
        k = total if c == "all" else per[c]
        body.append([c, str(k.n), str(k.pos), str(k.tp + k.fp), str(k.tp), str(k.fp), str(k.fn),
                     _f(k.precision), _f(k.recall)])
    if markdown:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
        for r in body:
            lines.append("| " + " | ".join(r) + " |")
    else:
        w = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(head)]
        lines.append("  ".join(h.ljust(w[i]) for i, h in enumerate(head)))
        for r in body:
            lines.append("  ".join(v.ljust(w[i]) for i, v in enumerate(r)))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m triage.degeneration.evaluate", description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=None, help="a labelled JSONL (default: the labelled set)")
    ap.add_argument("--heldout", action="store_true", help="the held-out set (testdata/heldout.jsonl)")
    ap.add_argument("--split", choices=("tune", "test"), help="only this part of a split set")
    ap.add_argument("--by", default="class", choices=("class", "shape"), help="rows of the table")
    ap.add_argument("--errors", action="store_true", help="list misclassified items")
    ap.add_argument("--margins", action="store_true", help="healthy items closest to being flagged")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = ap.parse_args(argv)
    items = load(args.file or (HELDOUT if args.heldout else LABELLED))
    if args.split:
        items = [it for it in items if it.get("split") == args.split]
    per, total, rows = run(items, by=args.by)
    print(table(per, total, args.markdown, args.by))
    if args.errors:
        print()
        for kind, (it, a) in total.errors:
            print(f"{kind} {it['id']} ({it['class']}) severity {a.severity:.2f}: "
                  + ("; ".join(r.message for r in a.reasons) or "no findings")
                  + (f"  [note: {it['note']}]" if it.get("note") else ""))
    if args.margins:
        print("\nhealthy items with the highest severity:")
        healthy = sorted(((a.severity, it, a) for it, a in rows if not it["label"]), key=lambda t: -t[0])
        for sev, it, a in healthy[:15]:
            loop = a.metrics.get("tail_loop") or {}
            print(f"  {sev:.2f} {it['id']}: loop ×{loop.get('copies', 0)} {loop.get('covered_tokens', 0)} tok, "
                  f"line run {a.metrics['lines']['longest_run']}/{a.metrics['lines']['structural_run']}, "
                  f"rep4 {a.metrics['seq_rep_4']}, cr {a.metrics['compression_ratio']} — "
                  + ("; ".join(r.message[:90] for r in a.reasons) or "-"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
