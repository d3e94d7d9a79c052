"""Assemble ``heldout.jsonl``, the held-out set, from its two sources and split it once.

    .venv/bin/python triage/degeneration/testdata/build_heldout.py

* ``heldout_raw.jsonl``     real SmolLM2-135M-Instruct outputs of the bundled engine
                            (``generate_heldout.py``), labelled by reading in
                            ``heldout_labels.json`` under the rules of ``HELDOUT.md``.
* ``heldout_written.jsonl`` responses written by a separate agent that never saw the detector
                            (``heldout_written.py``), labelled by their author.

Classes (field ``class``): ``model_normal`` (stops at the end of turn), ``model_no_eos`` (the
end-of-turn token suppressed), ``model_no_stop`` (end of turn sampled but not stopping: the
model writes past its turn), ``written_degenerate``, ``written_healthy``.  Field ``shape``: the
labeller's shape of a degenerate item (``invented_turn_stripped``, ``counting_loop``,
``near_verbatim_loop``, ``recursive_nesting``, …) or of a healthy one.

The split (field ``split``) is fixed by a hash of the id, half ``tune`` and half ``test``:
thresholds may be tuned on ``tune`` only; ``test`` is reported, never tuned on.

``--set 2`` builds ``heldout2.jsonl``: the outputs of the second prompt set
(``generate_heldout.py --set 2``), all of it a test set for the second round of tuning, whose
tuning data was all of ``heldout.jsonl``.  ``--set 3`` builds ``heldout3.jsonl`` the same way: the
test set of round 3, which tuned on ``heldout.jsonl`` and ``heldout2.jsonl``; and so on to ``--set 11``
(round N measured on set N after tuning on the sets before it).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "heldout.jsonl"


def split_of(item_id: str) -> str:
    return "test" if hashlib.sha256(item_id.encode()).digest()[0] % 2 else "tune"


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", type=int, default=1, choices=tuple(range(1, 12)),
                    help="2 (3): heldout2.jsonl (heldout3.jsonl) from heldout2_raw.jsonl + heldout2_labels.json "
                         "(…3…), all of it `test`")
    args = ap.parse_args(argv)
    stem = "heldout" if args.set == 1 else f"heldout{args.set}"
    labels = json.loads((HERE / f"{stem}_labels.json").read_text(encoding="utf-8"))
    items = []
    missing = []
    with open(HERE / f"{stem}_raw.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            lab = labels.get(r["id"])
            if lab is None:
                missing.append(r["id"])
                continue
            iid = f"model/{r['id']}"
            items.append({
                "id": iid, "class": f"model_{r['mode']}", "shape": lab["shape"], "label": bool(lab["label"]),
                "split": split_of(iid) if args.set == 1 else "test",
                "source": (f"SmolLM2-135M-Instruct (bundled engine), T={r['temperature']:g}, mode {r['mode']}, "
                           f"decode {r['decode']}, seed {r['seed']}, max_tokens {r['max_tokens']} "
                           f"(generate_heldout.py)"),
                "text": r["text"], "finish_reason": r["finish_reason"],
                "messages": [{"role": "user", "content": r["prompt"]}],
                "token_ids": r["token_ids"], "token_logprobs": r["token_logprobs"], "note": lab.get("note", ""),
            })
    if missing:
        print(f"{len(missing)} raw outputs have no label: {missing[:5]}…", file=sys.stderr)
        return 1
    if args.set == 1:
        with open(HERE / "heldout_written.jsonl", encoding="utf-8") as f:
            for line in f:
                w = json.loads(line)
                w["split"] = split_of(w["id"])
                w.setdefault("source", "written by an agent that never saw the detector (heldout_written.py)")
                items.append(w)
    out = OUT if args.set == 1 else HERE / f"{stem}.jsonl"
    with open(out, "w", encoding="utf-8") as f:
        for it in items:
            f.write(json.dumps(it, ensure_ascii=False) + "\n")
    n_test = sum(it["split"] == "test" for it in items)
    print(f"{len(items)} items ({n_test} test, {len(items) - n_test} tune) -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
