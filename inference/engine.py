"""The engine: a model loaded from a GGUF file, served by continuous batching over a paged KV
cache with per-sequence seeded sampling, and teacher-forced divergence between two kernel
settings.

`Engine` is the facade every caller uses (server, replicas, CLI, bench, demo data, tests). The
concepts live in their own modules (docs/architecture.md, "Layout"):

  * inference/requests.py: request and result types (`GenerationRequest`, `SamplingParams`,
    `TokenEvent`, `GenerationResult`, `EngineError`), re-exported here;
  * inference/scheduler.py: the page allocator, the sequences and the scheduling
    (admit / prefill / decode / preempt), which `Engine` inherits;
  * inference/divergence.py: teacher-forced divergence and prompt scoring.
"""

from __future__ import annotations

import os
import time
from typing import Any, Sequence

import torch

from inference import divergence as teacher_forcing
from inference.chat_template import ChatTemplate
from inference.config import ModelConfig
from inference.gguf_loader import load_gguf
from inference.model import Transformer, can_pack_linears, can_use_native, optimize_for_cpu, pack_linears
from inference.requests import (MAX_TOP_LOGPROBS, EngineError, GenerationRequest, GenerationResult, SamplingParams,
                                TokenEvent)
from inference.scheduler import BlockAllocator, Scheduler
from inference.tokenizer import Tokenizer
from kernels import cpu as kernels_cpu
from kernels.settings import KernelSettings

__all__ = ["DTYPES", "MAX_TOP_LOGPROBS", "BlockAllocator", "Engine", "EngineError", "GenerationRequest",
           "GenerationResult", "SamplingParams", "TokenEvent", "default_dtype"]

DTYPES = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp32": torch.float32, "float32": torch.float32}


def default_dtype(device: "str | torch.device" = "cpu") -> str:
    """bf16 where the CPU computes with bf16 weights at speed, else fp32: CPUs with native bf16
    dot products, and x86 CPUs with AVX2 + FMA or AVX-512 once kernels.cpu is built (its linear
    layer widens bf16 weights to float32 in registers: half the bytes of fp32 per decode step, and
    3x fp32's decode speed on a 2-core Zen 3). Without those, torch's bf16 matmuls are slower
    than fp32 ones, so fp32. On a GPU: bf16."""
    if torch.device(device).type != "cpu":
        return "bf16"
    if kernels_cpu.cpu_flags() & {"avx512_bf16", "amx_bf16"}:
        return "bf16"
    if kernels_cpu.simd_lanes() > 0:
        return "bf16"
    return "fp32"


class Engine(Scheduler):
    def __init__(self, model_path: str | os.PathLike | None = None, *, device: str = "cpu", dtype: str | None = None,
                 max_cache_tokens: int = 32768, max_batch_size: int = 64, max_prefill_tokens: int = 4096,
                 num_threads: int | None = None, share_prefill: bool = True):
        if num_threads:
            torch.set_num_threads(num_threads)
        dtype = dtype or default_dtype(device)
        if dtype not in DTYPES:
            raise EngineError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        torch_device, torch_dtype = torch.device(device), DTYPES[dtype]
        self.dtype_name = "bf16" if torch_dtype == torch.bfloat16 else "fp32"
        loaded = load_gguf(model_path)
        self.model_path = loaded.path
        vocab = loaded.state_dict["tok_embeddings.weight"].shape[0]
        config = ModelConfig.from_gguf(loaded.metadata, vocab_size=vocab,
                                       tie_embeddings="output.weight" not in loaded.state_dict)
        self.model_name = self.model_path.stem
        tokenizer = Tokenizer.from_gguf_metadata(loaded.metadata)
        special = {i: tokenizer.token_str(i) for i in (config.bos_token_id, *config.eos_token_ids) if i is not None}
        self.chat_template = ChatTemplate(
            loaded.metadata.get("tokenizer.chat_template"),
            bos_token=special.get(config.bos_token_id, ""),
            eos_token=special.get(config.eos_token_ids[0], "") if config.eos_token_ids else "",
        )
        model = Transformer(config)
        model.load_gguf_state(loaded.state_dict)
        del loaded
        model = model.to_dtype(torch_dtype).to(torch_device).eval()
        if can_use_native(torch_device, torch_dtype):
            optimize_for_cpu(model)
        elif can_pack_linears(torch_device, torch_dtype):
            pack_linears(model)
        super().__init__(model, tokenizer, config, device=torch_device, dtype=torch_dtype,
                         max_cache_tokens=max_cache_tokens, max_batch_size=max_batch_size,
                         max_prefill_tokens=max_prefill_tokens, share_prefill=share_prefill)

    def fork(self, **overrides: Any) -> "Engine":
        """A new engine sharing this one's loaded weights and tokenizer, with fresh caches and
        queues (e.g. another max_cache_tokens). Overrides: max_cache_tokens, max_batch_size,
        max_prefill_tokens, share_prefill."""
        allowed = {"max_cache_tokens", "max_batch_size", "max_prefill_tokens", "share_prefill"}
        if set(overrides) - allowed:
            raise TypeError(f"fork() accepts only {sorted(allowed)}")
        other = object.__new__(Engine)
        other.__dict__.update(self.__dict__)
        other.__dict__.update(overrides)
        other._reset()
        return other

    # ------------------------------------------------------------------ public API
    def apply_chat_template(self, messages: Sequence[dict[str, Any]], *, add_generation_prompt: bool = True) -> list[int]:
        return self.tokenizer.encode(self.chat_template.render(messages, add_generation_prompt=add_generation_prompt))

    def generate(self, requests: Sequence[GenerationRequest], *, progress: bool = False) -> list[GenerationResult]:
        """Run `requests` to completion (continuous batching) and return results in order.
        Drives `step()` itself: meant for exclusive use (CLI, bench, tests, demo data); a server
        should call add_request/step instead."""
        start = time.perf_counter()
        state = {r.request_id: {"ids": [], "text": [], "lp": [], "top": [], "ttft": None, "done": None}
                 for r in requests}
        for r in requests:
            self.add_request(r)
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=sum(r.sampling.max_tokens for r in requests), unit="tok", desc="generate", mininterval=2)
        try:
            while any(s["done"] is None for s in state.values()):
                events = self.step()
                now = time.perf_counter() - start
                for ev in events:
                    s = state.get(ev.request_id)
                    if s is None:
                        continue
                    s["ttft"] = now if s["ttft"] is None else s["ttft"]
                    s["ids"].append(ev.token_id)
                    s["text"].append(ev.text)
                    s["lp"].append(ev.logprob)
                    s["top"].append(ev.top_logprobs)
                    if ev.finished:
                        s["done"] = (ev.finish_reason, now)
                if bar is not None:
                    bar.update(len(events))
                if not events and not self.has_work():
                    break
        finally:
            if bar is not None:
                bar.close()
        results = []
        for r in requests:
            s = state[r.request_id]
            reason, latency = s["done"]
            want_lp = r.sampling.logprobs or r.sampling.top_logprobs > 0
            results.append(GenerationResult(
                request_id=r.request_id, prompt_ids=list(r.prompt_ids), token_ids=s["ids"], text="".join(s["text"]),
                finish_reason=reason, logprobs=s["lp"] if want_lp else None,
                top_logprobs=s["top"] if r.sampling.top_logprobs > 0 else None,
                prompt_tokens=len(r.prompt_ids), completion_tokens=len(s["ids"]),
                ttft_s=s["ttft"], latency_s=latency, kernel=KernelSettings.from_dict(r.kernel)))
        return results

    # ------------------------------------------------------------------ teacher forcing
    def divergence(self, prompt_ids: Sequence[int], continuation_ids: Sequence[int], reference: KernelSettings | dict,
                   candidate: KernelSettings | dict, *, kl_threshold: float = 0.1, top_k: int = 5,
                   return_distributions: bool = False) -> dict[str, Any]:
        """Teacher-forced comparison of two kernel settings on the same tokens (see
        `inference.divergence.divergence`)."""
        return teacher_forcing.divergence(self, prompt_ids, continuation_ids, reference, candidate,
                                          kl_threshold=kl_threshold, top_k=top_k,
                                          return_distributions=return_distributions)

    def prompt_logits(self, prompt_ids: Sequence[int], kernel: KernelSettings | dict | None = None) -> torch.Tensor:
        """(T, vocab) float32 logits at every prompt position, from one prefill through the
        paged cache (for scoring and tests)."""
        return teacher_forcing.prompt_logits(self, prompt_ids, kernel)
