"""Decode-step attention benchmark: dense vs sparse (Quest page top-k) on a synthetic paged KV
cache with the SmolLM2 head layout (9 query heads, 3 KV heads, head dim 64).

    python -m kernels.bench --contexts 2048,8192,32768 --budget 512 --batch 8 [--json]

Times one decode step of attention alone (one query per sequence, one layer): `dense` reads
every cached position; `sparse` runs the indexer (page scores + top-k) and attends to the
selected pages; `indexer` is the indexer alone, i.e. its share of the sparse step. The torch
implementations are timed everywhere; the Triton ones too on a GPU, where --cuda-graphs
captures each Triton step in a CUDA graph first
(the indexer and decode kernel have static shapes and never sync with the host). On the CPU,
`indexer_exact_ms` times the same selection without the cache's page-bound sketches (every
page scored from its bounds row; kernels/cpu/indexer.c, "page-bound sketches"). Median wall time
over --repeats runs after warm-up.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Callable

import torch

from kernels import cpu as kernels_cpu
from kernels.kv_cache import PagedKVCache
from kernels.selector import select_attention
from kernels.settings import KernelSettings

N_HEADS, N_KV_HEADS, HEAD_DIM = 9, 3, 64
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def build_cache(*, context: int, batch: int, page_size: int, dtype: torch.dtype, kv_cache_dtype: str,
                device: torch.device, seed: int = 0):
    """A one-layer cache holding `batch` sequences of `context` tokens on shuffled pages."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    pages_per_seq = -(-context // page_size)
    num_pages = batch * pages_per_seq
    cache = PagedKVCache(num_layers=1, num_pages=num_pages, page_size=page_size, n_kv_heads=N_KV_HEADS,
                         head_dim=HEAD_DIM, dtype=dtype, kv_cache_dtype=kv_cache_dtype, device=device)
    table = torch.randperm(num_pages, generator=g).view(batch, pages_per_seq)
    cache.reset_pages(torch.arange(num_pages, device=device))
    slots_per_seq = (table[:, :, None] * page_size + torch.arange(page_size)).view(batch, -1)[:, :context]
    for b in range(batch):  # one sequence at a time bounds the temporary memory
        k = torch.randn(context, N_KV_HEADS, HEAD_DIM, generator=g)
        v = torch.randn(context, N_KV_HEADS, HEAD_DIM, generator=g)
        cache.write(0, slots_per_seq[b].to(device), k.to(device), v.to(device))
    block_table = table.to(device=device, dtype=torch.int32)
    seq_lens = torch.full((batch,), context, dtype=torch.int32, device=device)
    q = torch.randn(batch, N_HEADS, HEAD_DIM, generator=g).to(device=device, dtype=dtype)
    return cache, block_table, seq_lens, q


def time_ms(fn: Callable[[], object], *, device: torch.device, repeats: int, warmup: int,
            cuda_graph: bool = False) -> float:
    if cuda_graph and device.type == "cuda":
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(max(warmup, 2)):
                fn()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        fn = graph.replay
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def run(args: argparse.Namespace) -> list[dict]:
    device = torch.device(args.device)
    dtype = DTYPES[args.dtype or ("bf16" if device.type == "cuda" else "fp32")]
    impls = ["torch"] + (["triton"] if device.type == "cuda" else [])
    contexts = args.contexts
    results = []
    progress = None
    if not args.json:
        from tqdm import tqdm

        exact = device.type == "cpu" and kernels_cpu.available()  # (a sketched cache: also time it without)
        progress = tqdm(total=len(contexts) * (1 + 2 * len(impls) + exact), desc="bench", unit="timing", file=sys.stderr)
    warm_up(args, contexts=contexts, impls=impls, dtype=dtype, device=device)
    for context in contexts:
        cache, block_table, seq_lens, q = build_cache(
            context=context, batch=args.batch, page_size=args.page_size, dtype=dtype,
            kv_cache_dtype=args.kv_cache_dtype, device=device,
        )
        step_args = (q, cache, 0, block_table, seq_lens)
        timing = dict(device=device, repeats=args.repeats, warmup=args.warmup)
        dense = select_attention(KernelSettings(kv_cache_dtype=args.kv_cache_dtype, page_size=args.page_size), device)
        row = {"context": context, "batch": args.batch}
        row["dense_ms"] = time_ms(lambda: dense.decode(*step_args), **timing)
        if progress:
            progress.update()
        for impl in impls:
            sparse = select_attention(KernelSettings(
                attention="sparse", indexer=impl, decode_kernel=impl, sparse_budget=args.budget,
                page_size=args.page_size, kv_cache_dtype=args.kv_cache_dtype), device)
            suffix = "" if impl == "torch" else f"_{impl}"
            # Only the Triton path is capture-safe (the torch dense path syncs on seq_lens).
            graph = args.cuda_graphs and impl == "triton"
            row[f"sparse_ms{suffix}"] = time_ms(lambda: sparse.decode(*step_args), **timing, cuda_graph=graph)
            if progress:
                progress.update()
            row[f"indexer_ms{suffix}"] = time_ms(lambda: sparse.select(*step_args), **timing, cuda_graph=graph)
            if progress:
                progress.update()
            row[f"ratio_dense_over_sparse{suffix}"] = row["dense_ms"] / row[f"sparse_ms{suffix}"]
            row[f"indexer_share{suffix}"] = row[f"indexer_ms{suffix}"] / row[f"sparse_ms{suffix}"]
            if impl == "torch" and cache.ksketch is not None:
                # The same selection without the page-bound sketches: every page scored exactly.
                sketches, cache.ksketch = cache.ksketch, None
                row["indexer_exact_ms"] = time_ms(lambda: sparse.select(*step_args), **timing)
                cache.ksketch = sketches
                if progress:
                    progress.update()
        results.append(row)
        del cache, step_args
    if progress:
        progress.close()
    return results


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_ints(text: str) -> list[int]:
    return [_positive_int(part) for part in text.split(",") if part.strip()] or _positive_int("")


def warm_up(args: argparse.Namespace, *, contexts: list[int], impls: list[str], dtype, device) -> None:
    """Run every path a few times on the smallest context before timing anything: otherwise the
    first timed configuration pays one-time costs (allocator growth, first touch of scratch
    buffers, lazy imports) and looks several times slower than it is."""
    cache, block_table, seq_lens, q = build_cache(
        context=min(contexts), batch=args.batch, page_size=args.page_size, dtype=dtype,
        kv_cache_dtype=args.kv_cache_dtype, device=device,
    )
    step_args = (q, cache, 0, block_table, seq_lens)
    backends = [select_attention(KernelSettings(kv_cache_dtype=args.kv_cache_dtype, page_size=args.page_size), device)]
    backends += [
        select_attention(KernelSettings(
            attention="sparse", indexer=impl, decode_kernel=impl, sparse_budget=args.budget,
            page_size=args.page_size, kv_cache_dtype=args.kv_cache_dtype), device)
        for impl in impls
    ]
    for _ in range(3):
        for backend in backends:
            backend.decode(*step_args)
            if hasattr(backend, "select"):
                backend.select(*step_args)


def print_table(results: list[dict], args: argparse.Namespace) -> None:
    impls = ["torch"] + (["triton"] if any("sparse_ms_triton" in r for r in results) else [])
    print(f"decode step, one layer: batch {args.batch}, {N_HEADS} q heads / {N_KV_HEADS} kv heads, head dim "
          f"{HEAD_DIM}, page {args.page_size}, budget {args.budget}, kv {args.kv_cache_dtype}, device {args.device}")
    header = f"{'context':>8} {'dense ms':>9}"
    for impl in impls:
        header += f" | {impl + ' sparse ms':>16} {'indexer ms':>10} {'idx share':>9} {'dense/sparse':>12}"
        if impl == "torch" and any("indexer_exact_ms" in r for r in results):
            header += f" {'exact idx ms':>12}"
    print(header)
    for r in results:
        line = f"{r['context']:>8} {r['dense_ms']:>9.2f}"
        for impl in impls:
            s = "" if impl == "torch" else f"_{impl}"
            line += (f" | {r['sparse_ms' + s]:>16.2f} {r['indexer_ms' + s]:>10.2f} "
                     f"{r['indexer_share' + s]:>8.0%} {r['ratio_dense_over_sparse' + s]:>11.2f}x")
            if impl == "torch" and "indexer_exact_ms" in r:
                line += f" {r['indexer_exact_ms']:>12.2f}"
        print(line)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m kernels.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--contexts", type=_positive_ints, default="2048,8192,32768", help="comma-separated context lengths")
    parser.add_argument("--budget", type=_positive_int, default=512, help="sparse budget in tokens")
    parser.add_argument("--batch", type=_positive_int, default=8, help="sequences decoded per step")
    parser.add_argument("--page-size", type=int, default=16)
    parser.add_argument("--kv-cache-dtype", default="auto", choices=["auto", "fp8_e4m3"])
    parser.add_argument("--dtype", choices=list(DTYPES), default=None, help="default: fp32 on CPU, bf16 on GPU")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--cuda-graphs", action="store_true", help="capture each timed step in a CUDA graph (GPU)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    results = run(args)
    if args.json:
        print(json.dumps({"results": results}, indent=2))
    else:
        print_table(results, args)


if __name__ == "__main__":
    main()
