"""``python -m triage.degeneration FILE.jsonl [--json] [--bench]``

Each input line is a JSON object ``{"text": ..., "finish_reason": ..., "messages": [...],
"token_ids": [...], "token_logprobs": [...]}`` (only ``text`` is required; ``id`` is echoed).
``-`` reads standard input.

Output, one line per input line:
  default   ``line 3 [id]: DEGENERATE 0.97 — tail loop: period 4 tokens ×300, …`` or ``ok 0.00``
  --json    a JSON object: {"line", "id", "degenerate", "severity", "reasons", "metrics",
            "highlights"}; a line that cannot be analysed gives {"line", "error"} instead.
  --bench   no per-line output: throughput over the file (MB/s of text, single core), latency
            percentiles, the slowest item, plus the fixed probes of the issue (a 100 KB response,
            a 1 MB ``</div>`` flood).  Without FILE the labelled set is the corpus.

Exit status: 0 when every line was analysed, 1 when some line had an error (each reported on
its own line, the others still analysed), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .analyze import analyze

LABELLED = Path(__file__).resolve().parent / "testdata" / "labelled.jsonl"
MAX_LINE_BYTES = 64 * 1024 * 1024


class LineError(ValueError):
    pass


def parse_line(raw: bytes) -> dict:
    """One input line → keyword arguments for analyze() (raises LineError with a clear message)."""
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LineError(f"not valid UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})") from None
    s = s.strip()
    if not s:
        raise LineError("empty line")
    try:
        obj = json.loads(s)
    except json.JSONDecodeError as e:
        raise LineError(f"not valid JSON: {e.msg} at column {e.colno}") from None
    except RecursionError:
        raise LineError("not valid JSON: nested too deeply") from None
    if not isinstance(obj, dict):
        raise LineError(f"expected a JSON object, got {type(obj).__name__}")
    if "text" not in obj:
        raise LineError('missing "text"')
    text = obj["text"]
    if not isinstance(text, str):
        raise LineError(f'"text" must be a string, got {type(text).__name__}')
    fr = obj.get("finish_reason")
    if fr is not None and not isinstance(fr, str):
        raise LineError(f'"finish_reason" must be a string or null, got {type(fr).__name__}')
    msgs = obj.get("messages")
    if msgs is not None and not isinstance(msgs, list):
        raise LineError(f'"messages" must be a list, got {type(msgs).__name__}')
    tids = obj.get("token_ids")
    if tids is not None and (not isinstance(tids, list)
                             or not all(isinstance(t, int) and not isinstance(t, bool) for t in tids)):
        raise LineError('"token_ids" must be a list of integers')
    if tids is not None and any(t < -(2**63) or t >= 2**63 for t in tids):
        raise LineError('"token_ids" out of the 64-bit range')
    lps = obj.get("token_logprobs")
    if lps is not None and not isinstance(lps, list):
        raise LineError('"token_logprobs" must be a list of numbers')
    return {"id": obj.get("id"), "text": text, "finish_reason": fr, "messages": msgs,
            "token_ids": tids, "token_logprobs": lps}


def iter_lines(path: str):
    f = sys.stdin.buffer if path == "-" else open(path, "rb")
    try:
        n = 0
        while True:
            raw = f.readline(MAX_LINE_BYTES + 1)
            if not raw:
                break
            n += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                # skip the rest of an oversized line
                while raw and not raw.endswith(b"\n"):
                    raw = f.readline(MAX_LINE_BYTES)
                yield n, None, LineError(f"line longer than {MAX_LINE_BYTES // 2**20} MiB")
                continue
            if not raw.strip():
                continue
            yield n, raw, None
    finally:
        if f is not sys.stdin.buffer:
            f.close()


def _run(kw: dict):
    return analyze(kw["text"], finish_reason=kw["finish_reason"], messages=kw["messages"],
                   token_ids=kw["token_ids"], token_logprobs=kw["token_logprobs"])


def cmd_analyze(path: str, as_json: bool, out=sys.stdout) -> int:
    errors = 0
    for n, raw, err in iter_lines(path):
        ident = None
        try:
            if err:
                raise err
            kw = parse_line(raw)
            ident = kw["id"]
            res = _run(kw)
        except LineError as e:
            errors += 1
            _emit_error(out, n, str(e), as_json)
            continue
        except Exception as e:  # noqa: BLE001 - a bug must not stop the other lines
            errors += 1
            _emit_error(out, n, f"internal error: {type(e).__name__}: {e}", as_json)
            continue
        if as_json:
            d = res.to_dict()
            d = {"line": n, "id": ident, **d}
            out.write(json.dumps(d, ensure_ascii=False) + "\n")
        else:
            tag = f"line {n}" + (f" [{ident}]" if ident is not None else "")
            verdict = "DEGENERATE" if res.degenerate else "ok"
            why = "; ".join(r.message for r in res.reasons) or "no findings"
            out.write(f"{tag}: {verdict} {res.severity:.2f} — {why}\n")
    return 1 if errors else 0


def _emit_error(out, n, msg, as_json):
    if as_json:
        out.write(json.dumps({"line": n, "error": msg}) + "\n")
    else:
        out.write(f"line {n}: error: {msg}\n")


def cmd_bench(path: str | None, repeat: int, out=sys.stdout) -> int:
    path = path or str(LABELLED)
    items = []
    for n, raw, err in iter_lines(path):
        if err:
            continue
        try:
            items.append(parse_line(raw))
        except LineError:
            continue
    if not items:
        out.write("no usable lines\n")
        return 1
    total_bytes = sum(len(k["text"].encode("utf-8", "surrogatepass")) for k in items)
    for k in items[:20]:  # warm up caches / numpy
        _run(k)
    # CPU time of this process: "per core" throughput, not disturbed by other load on the machine
    lat = []
    slowest = (0.0, None)
    t0 = time.perf_counter()
    c0 = time.process_time()
    for _ in range(repeat):
        for k in items:
            a = time.process_time()
            _run(k)
            dt = time.process_time() - a
            lat.append(dt)
            if dt > slowest[0]:
                slowest = (dt, k.get("id"))
    cpu = time.process_time() - c0
    wall = time.perf_counter() - t0
    lat.sort()
    pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3  # noqa: E731
    mbs = total_bytes * repeat / cpu / 1e6
    out.write(f"corpus: {path}\n")
    out.write(f"  {len(items)} responses, {total_bytes / 1e6:.2f} MB of text, ×{repeat}\n")
    out.write(f"  throughput: {mbs:.1f} MB/s per core, CPU time ({len(items) * repeat / cpu:.0f} responses/s; "
              f"wall {total_bytes * repeat / wall / 1e6:.1f} MB/s)\n")
    out.write(f"  latency ms (CPU): p50 {pct(0.5):.2f}  p90 {pct(0.9):.2f}  p99 {pct(0.99):.2f}  "
              f"max {lat[-1] * 1e3:.2f} ({slowest[1]})\n")
    for name, text, fr in probes():
        best = min(_time(text, fr) for _ in range(3))
        out.write(f"  {name}: {best * 1e3:.1f} ms (CPU, best of 3)\n")
    return 0


def probes():
    """The issue's fixed probes: a 100 KB mixed response and a 1 MB `</div>` flood."""
    para = ("The quick brown fox jumps over the lazy dog while the engineer reads the transcript "
            "and wonders whether the kernel or the sampler is to blame for the loop. ")
    words = para.split()
    import random
    rng = random.Random(0)
    parts, size = [], 0
    while size < 100_000:
        s = " ".join(rng.choice(words) for _ in range(rng.randint(8, 30))) + ".\n"
        if rng.random() < 0.1:
            s = f"<div class=\"row-{rng.randint(0, 99)}\"><span>{s}</span></div>\n"
        parts.append(s)
        size += len(s)
    text_100k = "".join(parts)[:100_000]
    flood = ("</div>" * (1_000_000 // 6 + 1))[:1_000_000]
    return [("100 KB response, all metrics", text_100k, "stop"),
            ("1 MB of '</div>' repeated", flood, "length")]


def _time(text, fr):
    a = time.process_time()
    analyze(text, finish_reason=fr)
    return time.process_time() - a


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m triage.degeneration",
                                 description="Degeneration metrics and verdict for each response of a JSONL file.")
    ap.add_argument("file", nargs="?", help="JSONL file, one response per line ('-' = stdin)")
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--bench", action="store_true", help="print throughput instead of results")
    ap.add_argument("--repeat", type=int, default=3, help="passes over the corpus for --bench (default 3)")
    args = ap.parse_args(argv)
    if args.bench:
        return cmd_bench(args.file, max(1, args.repeat))
    if not args.file:
        ap.error("FILE is required (or --bench)")
    try:
        return cmd_analyze(args.file, args.json)
    except OSError as e:
        print(f"error: cannot read {args.file}: {e.strerror or e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
