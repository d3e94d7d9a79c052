"""The engine: continuous batching over a paged KV cache, per-sequence seeded sampling,
teacher-forced divergence between two kernel settings.

Scheduling (one `step()` = one forward pass):
  * waiting requests are admitted FIFO while pages are free; a step prefills a batch of them
    (packed, up to `max_prefill_tokens`) and samples each one's first token;
  * otherwise one decode step runs for the running sequences of one kernel setting (round
    robin between settings), so each decode batch uses exactly one attention backend;
  * sequences whose settings share a cache layout (`KernelSettings.cache_key`) share one
    `PagedKVCache` and its page allocator;
  * when a decode step needs a page and none is free, the youngest running sequence is
    preempted: its pages are freed and it is re-queued to be recomputed (its generator keeps
    its state, so its samples do not change).

Thread safety: every public method takes one lock, so a server thread may call `add_request`
and `abort` while another runs `step()`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import torch

from inference.chat_template import ChatTemplate
from inference.config import ModelConfig
from inference.gguf_loader import load_gguf
from inference.model import (AttentionBatch, Transformer, can_pack_linears, can_use_native, optimize_for_cpu,
                             pack_linears)
from inference.sampling import draw_uniforms, logprobs_of, sample
from inference.tokenizer import IncrementalDetokenizer, Tokenizer
from kernels import cpu as kernels_cpu
from kernels.kv_cache import PagedKVCache
from kernels.selector import select_attention
from kernels.settings import KernelSettings

DTYPES = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp32": torch.float32, "float32": torch.float32}
MAX_TOP_LOGPROBS = 20
# Fixed text run through a fresh fp8 cache so that its per-layer scales never depend on which
# request happened to arrive first (kernels/kv_cache.py: "calibrate once at start-up").
_FP8_CALIBRATION_TEXT = (
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWrite a short HTML page "
    "with a table of the planets, then explain in two paragraphs why the sky is blue. Include the numbers "
    "1, 2, 3.14159 and 2024.<|im_end|>\n<|im_start|>assistant\n<!DOCTYPE html>\n<html><body><table>"
)


class EngineError(ValueError):
    """A request the engine cannot serve (the message says what was wrong)."""


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


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    seed: int | None = None
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0
    ignore_eos: bool = False          # benchmarks: always generate max_tokens

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        else:
            object.__setattr__(self, "stop", tuple(self.stop or ()))
        errors = []
        if not (isinstance(self.temperature, (int, float)) and 0 <= self.temperature <= 100):
            errors.append(f"temperature must be in [0, 100], got {self.temperature!r}")
        if not (isinstance(self.top_p, (int, float)) and 0 < self.top_p <= 1):
            errors.append(f"top_p must be in (0, 1], got {self.top_p!r}")
        if not (isinstance(self.top_k, int) and self.top_k >= 0):
            errors.append(f"top_k must be an integer >= 0 (0 = off), got {self.top_k!r}")
        if not (isinstance(self.min_p, (int, float)) and 0 <= self.min_p <= 1):
            errors.append(f"min_p must be in [0, 1], got {self.min_p!r}")
        if self.seed is not None and not (isinstance(self.seed, int) and 0 <= self.seed < 2**63):
            errors.append(f"seed must be a non-negative integer, got {self.seed!r}")
        if not (isinstance(self.max_tokens, int) and self.max_tokens >= 1):
            errors.append(f"max_tokens must be an integer >= 1, got {self.max_tokens!r}")
        if not all(isinstance(s, str) and s for s in self.stop):
            errors.append("stop must be non-empty strings")
        if not (isinstance(self.top_logprobs, int) and 0 <= self.top_logprobs <= MAX_TOP_LOGPROBS):
            errors.append(f"top_logprobs must be an integer in [0, {MAX_TOP_LOGPROBS}], got {self.top_logprobs!r}")
        if errors:
            raise EngineError("; ".join(errors))


@dataclass
class GenerationRequest:
    request_id: str
    prompt_ids: list[int]
    sampling: SamplingParams = field(default_factory=SamplingParams)
    kernel: KernelSettings = field(default_factory=KernelSettings)


@dataclass
class TokenEvent:
    request_id: str
    token_id: int
    text: str                                   # new text (held back while it may start a stop string)
    logprob: float | None                       # when sampling.logprobs (or top_logprobs) asked
    top_logprobs: list[tuple[str, int, float]] | None
    finished: bool
    finish_reason: str | None                   # "stop" | "length" | None


@dataclass
class GenerationResult:
    request_id: str
    prompt_ids: list[int]
    token_ids: list[int]                        # generated ids, the final EOS included when it ended so
    text: str                                   # EOS and stop string excluded
    finish_reason: str
    logprobs: list[float] | None
    top_logprobs: list[list[tuple[str, int, float]]] | None
    prompt_tokens: int
    completion_tokens: int
    ttft_s: float
    latency_s: float
    kernel: KernelSettings


class BlockAllocator:
    """Free list of page ids of one cache, with a reference count per page: samples of one prompt
    share its full pages (`share`), and a page returns to the free list when its last holder
    frees it."""

    def __init__(self, num_pages: int):
        self.num_pages = num_pages
        self._free = deque(range(num_pages))
        self._refs = [0] * num_pages

    @property
    def num_free(self) -> int:
        return len(self._free)

    def allocate(self, n: int) -> list[int]:
        if n > len(self._free):
            raise MemoryError(f"{n} pages asked, {len(self._free)} free")
        pages = [self._free.popleft() for _ in range(n)]
        for p in pages:
            self._refs[p] = 1
        return pages

    def share(self, pages: Iterable[int]) -> list[int]:
        """Another holder for pages already allocated; returns them. (All or nothing.)"""
        pages = list(pages)
        bad = [p for p in pages if self._refs[p] <= 0]
        if bad:
            raise ValueError(f"pages {bad[:10]} are not allocated: they cannot be shared")
        for p in pages:
            self._refs[p] += 1
        return pages

    def free(self, pages: Iterable[int]) -> None:
        """Drop one reference to each page (a page listed twice, twice). (All or nothing.)"""
        pages = list(pages)
        drops: dict[int, int] = {}
        for p in pages:
            drops[p] = drops.get(p, 0) + 1
        bad = [p for p, d in drops.items() if self._refs[p] < d]
        if bad:
            raise ValueError(f"pages {bad[:10]} freed more often than they were allocated")
        for p in pages:
            self._refs[p] -= 1
            if self._refs[p] == 0:
                self._free.append(p)


@dataclass
class _CacheGroup:
    cache: PagedKVCache
    allocator: BlockAllocator


class _Sequence:
    """Engine-side state of one request."""

    def __init__(self, req: GenerationRequest, tokenizer: Tokenizer, arrival: int):
        self.req = req
        self.id = req.request_id
        self.sampling = req.sampling
        self.settings = req.kernel
        self.tokens: list[int] = list(req.prompt_ids)   # prompt + generated
        self.num_prompt = len(req.prompt_ids)
        self.num_cached = 0                              # tokens whose K/V are in the cache
        self.pages: list[int] = []
        self.prefill_leader: _Sequence | None = None    # admitted with the same tokens: shares its prefill
        self.arrival = arrival
        seed = req.sampling.seed if req.sampling.seed is not None else int.from_bytes(os.urandom(8), "little") >> 1
        self.generator = None
        if req.sampling.temperature > 0:
            self.generator = torch.Generator(device="cpu")
            self.generator.manual_seed(seed)
        self.detok = IncrementalDetokenizer(tokenizer)
        self.text = ""
        self.emitted = 0
        self.stop_max = max((len(s) for s in req.sampling.stop), default=0)

    @property
    def num_generated(self) -> int:
        return len(self.tokens) - self.num_prompt


class Engine:
    def __init__(self, model_path: str | os.PathLike | None = None, *, device: str = "cpu", dtype: str | None = None,
                 max_cache_tokens: int = 32768, max_batch_size: int = 64, max_prefill_tokens: int = 4096,
                 num_threads: int | None = None, share_prefill: bool = True):
        if num_threads:
            torch.set_num_threads(num_threads)
        dtype = dtype or default_dtype(device)
        if dtype not in DTYPES:
            raise EngineError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        self.device = torch.device(device)
        self.dtype = DTYPES[dtype]
        self.dtype_name = "bf16" if self.dtype == torch.bfloat16 else "fp32"
        loaded = load_gguf(model_path)
        self.model_path = loaded.path
        vocab = loaded.state_dict["tok_embeddings.weight"].shape[0]
        self.config = ModelConfig.from_gguf(loaded.metadata, vocab_size=vocab,
                                            tie_embeddings="output.weight" not in loaded.state_dict)
        self.model_name = self.model_path.stem
        self.tokenizer = Tokenizer.from_gguf_metadata(loaded.metadata)
        special = {i: self.tokenizer.token_str(i) for i in (self.config.bos_token_id, *self.config.eos_token_ids)
                   if i is not None}
        self.chat_template = ChatTemplate(
            loaded.metadata.get("tokenizer.chat_template"),
            bos_token=special.get(self.config.bos_token_id, ""),
            eos_token=special.get(self.config.eos_token_ids[0], "") if self.config.eos_token_ids else "",
        )
        model = Transformer(self.config)
        model.load_gguf_state(loaded.state_dict)
        del loaded
        self.model = model.to_dtype(self.dtype).to(self.device).eval()
        if can_use_native(self.device, self.dtype):
            optimize_for_cpu(self.model)
        elif can_pack_linears(self.device, self.dtype):
            pack_linears(self.model)
        self.eos_ids = frozenset(self.config.eos_token_ids)
        self.max_cache_tokens = max_cache_tokens
        self.max_batch_size = max_batch_size
        self.max_prefill_tokens = max_prefill_tokens
        self.share_prefill = share_prefill  # samples of one prompt prefill it once (_admit)
        self._groups: dict[tuple, _CacheGroup] = {}
        self._waiting: deque[_Sequence] = deque()
        self._running: list[_Sequence] = []
        self._ids: set[str] = set()
        self._arrivals = itertools.count()
        self._rr = 0
        self._lock = threading.RLock()
        self.prefill_tokens = 0          # tokens run through prefill
        self.prefill_sequences = 0       # prompts run through prefill (identical prompts admitted together: one)
        self.shared_prefill_tokens = 0   # prompt tokens not run again: taken from an identical prompt's prefill

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
        other._groups, other._waiting, other._running, other._ids = {}, deque(), [], set()
        other._arrivals, other._rr, other._lock = itertools.count(), 0, threading.RLock()
        other.prefill_tokens = other.shared_prefill_tokens = 0
        return other

    # ------------------------------------------------------------------ public API
    def apply_chat_template(self, messages: Sequence[dict[str, Any]], *, add_generation_prompt: bool = True) -> list[int]:
        return self.tokenizer.encode(self.chat_template.render(messages, add_generation_prompt=add_generation_prompt))

    def check_kernel(self, kernel: KernelSettings | dict | None) -> KernelSettings:
        """Validate settings and that their backend can run here (raises KernelSettingsError /
        KernelUnavailableError with the remedy)."""
        settings = KernelSettings.from_dict(kernel) if not isinstance(kernel, KernelSettings) else kernel
        select_attention(settings, self.device)
        return settings

    def add_request(self, req: GenerationRequest) -> None:
        kernel = self.check_kernel(req.kernel)
        if kernel is not req.kernel:
            req = GenerationRequest(req.request_id, req.prompt_ids, req.sampling, kernel)
        self._check_prompt(req.prompt_ids, kernel)
        with self._lock:
            if req.request_id in self._ids:
                raise EngineError(f"request_id {req.request_id!r} is already in the engine")
            self._ids.add(req.request_id)
            self._waiting.append(_Sequence(req, self.tokenizer, next(self._arrivals)))

    def abort(self, request_id: str) -> bool:
        """Drop a request (waiting or running); frees its pages. True if it was there."""
        with self._lock:
            for seq in list(self._waiting):
                if seq.id == request_id:
                    self._waiting.remove(seq)
                    self._ids.discard(request_id)
                    return True
            for seq in self._running:
                if seq.id == request_id:
                    self._finish(seq)
                    return True
            return False

    def has_work(self) -> bool:
        with self._lock:
            return bool(self._waiting or self._running)

    def num_requests(self) -> int:
        with self._lock:
            return len(self._waiting) + len(self._running)

    @torch.inference_mode()
    def step(self) -> list[TokenEvent]:
        """One forward pass: a prefill of admitted requests, or a decode step. Returns the new
        token of every sequence that took part."""
        with self._lock:
            admitted = self._admit()
            if admitted:
                try:
                    return self._prefill(admitted)
                except BaseException:  # (a failing forward pass or sampler, or Ctrl-C: these requests
                    for seq in admitted:  # are dropped, their pages free again, the engine consistent)
                        seq.prefill_leader = None
                        self._finish(seq)
                    raise
            if self._running:
                return self._decode()
            if self._waiting:  # nothing running and the head still does not fit: cannot ever
                seq = self._waiting.popleft()
                self._ids.discard(seq.id)
                err = EngineError(f"request {seq.id!r} needs more KV cache than the engine has "
                                  f"({self.max_cache_tokens} tokens)")
                err.request_id = seq.id  # the failure is this request's alone (replicas fail just it)
                raise err
            return []

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
    @torch.inference_mode()
    def divergence(self, prompt_ids: Sequence[int], continuation_ids: Sequence[int], reference: KernelSettings | dict,
                   candidate: KernelSettings | dict, *, kl_threshold: float = 0.1, top_k: int = 5,
                   return_distributions: bool = False) -> dict[str, Any]:
        """Teacher-forced comparison of two kernel settings on the same tokens.

        Position i scores continuation token i given prompt + continuation[:i]. Returns
        per-position logprobs of the continuation tokens, top-k (token, id, logprob) and argmax
        under each setting, KL(reference || candidate), top-1 agreement, the first position
        whose KL exceeds `kl_threshold`, and the full distributions (probabilities) when asked.
        """
        reference, candidate = self.check_kernel(reference), self.check_kernel(candidate)
        prompt_ids, cont = list(prompt_ids), list(continuation_ids)
        if not prompt_ids or not cont:
            raise EngineError("divergence needs a non-empty prompt and continuation")
        if not 0 <= top_k <= MAX_TOP_LOGPROBS:
            raise EngineError(f"top_k must be in [0, {MAX_TOP_LOGPROBS}]")
        self._check_tokens(prompt_ids + cont)
        total = len(prompt_ids) + len(cont)
        if total > self.config.max_seq_len:
            raise EngineError(f"prompt + continuation is {total} tokens, over the context of {self.config.max_seq_len}")
        with self._lock:
            if reference == candidate:  # one setting against itself (a re-score): one pass
                (h_ref,) = self._teacher_forced_hidden(prompt_ids, cont, reference)
                h_cand = h_ref
            elif reference.cache_key == candidate.cache_key:  # one cache layout: one prefill for both
                h_ref, h_cand = self._teacher_forced_hidden(prompt_ids, cont, reference, candidate)
            else:
                (h_ref,) = self._teacher_forced_hidden(prompt_ids, cont, reference)
                (h_cand,) = self._teacher_forced_hidden(prompt_ids, cont, candidate)
        targets = torch.tensor(cont, device=self.device)
        out: dict[str, list] = {k: [] for k in ("ref_lp", "cand_lp", "kl", "ref_top1", "cand_top1",
                                                "ref_top", "cand_top", "ref_dist", "cand_dist")}
        for c0 in range(0, len(cont), 512):  # (512, vocab) logits at a time bounds memory
            lr = torch.log_softmax(self.model.logits(h_ref[c0:c0 + 512]), -1)
            lc = torch.log_softmax(self.model.logits(h_cand[c0:c0 + 512]), -1)
            t = targets[c0:c0 + 512, None]
            out["ref_lp"] += lr.gather(1, t).squeeze(1).tolist()
            out["cand_lp"] += lc.gather(1, t).squeeze(1).tolist()
            out["kl"] += (lr.exp() * (lr - lc)).sum(-1).clamp_min(0).tolist()
            out["ref_top1"] += lr.argmax(-1).tolist()
            out["cand_top1"] += lc.argmax(-1).tolist()
            if top_k:
                for key, lp in (("ref_top", lr), ("cand_top", lc)):
                    vals, ids = lp.topk(top_k, -1)
                    out[key] += [[(self.tokenizer.token_str(i), i, v) for i, v in zip(row_i, row_v)]
                                 for row_i, row_v in zip(ids.tolist(), vals.tolist())]
            if return_distributions:
                out["ref_dist"] += lr.exp().tolist()
                out["cand_dist"] += lc.exp().tolist()
        kl = out["kl"]
        agree = [a == b for a, b in zip(out["ref_top1"], out["cand_top1"])]
        first = next((i for i, v in enumerate(kl) if v > kl_threshold), None)
        result: dict[str, Any] = {
            "num_tokens": len(cont),
            "tokens": [self.tokenizer.token_str(i) for i in cont],
            "token_ids": cont,
            "kl_threshold": kl_threshold,
            "kl": kl,
            "top1_agree": agree,
            "top1_agreement": sum(agree) / len(agree),
            "first_over_threshold": first,
            "mean_kl": sum(kl) / len(kl),
            "max_kl": max(kl),
            "reference": {"kernel": reference.to_dict(), "logprobs": out["ref_lp"], "top1": out["ref_top1"],
                          "top_logprobs": out["ref_top"] if top_k else None},
            "candidate": {"kernel": candidate.to_dict(), "logprobs": out["cand_lp"], "top1": out["cand_top1"],
                          "top_logprobs": out["cand_top"] if top_k else None},
        }
        if return_distributions:
            result["reference"]["distributions"] = out["ref_dist"]
            result["candidate"]["distributions"] = out["cand_dist"]
        return result

    @torch.inference_mode()
    def prompt_logits(self, prompt_ids: Sequence[int], kernel: KernelSettings | dict | None = None) -> torch.Tensor:
        """(T, vocab) float32 logits at every prompt position, from one prefill through the
        paged cache (for scoring and tests)."""
        settings = self.check_kernel(kernel)
        ids = list(prompt_ids)
        self._check_prompt(ids, settings)
        with self._lock:
            group = self._group(settings)
            ps = settings.page_size
            with self._scratch_pages(group, len(ids), ps, purpose="scoring") as page_t:
                pos = torch.arange(len(ids), device=self.device)
                batch = AttentionBatch("prefill", select_attention(settings, self.device), group.cache,
                                       slots=page_t[pos // ps] * ps + pos % ps,
                                       cu_seqlens=torch.tensor([0, len(ids)], dtype=torch.int32, device=self.device))
                return self.model.logits(self.model(torch.tensor(ids, device=self.device), pos, batch))

    @contextlib.contextmanager
    def _scratch_pages(self, group, tokens: int, page_size: int, *, purpose: str):
        """Cache pages for a one-off pass (scoring, teacher forcing), freed afterwards.
        Yields their ids as a long tensor on the engine's device."""
        n_pages = -(-tokens // page_size)
        if n_pages > group.allocator.num_free:
            raise EngineError(f"{purpose} needs {n_pages * page_size} cache tokens; only "
                              f"{group.allocator.num_free * page_size} are free right now")
        pages = group.allocator.allocate(n_pages)
        try:
            page_t = torch.tensor(pages, dtype=torch.long, device=self.device)
            group.cache.reset_pages(page_t)
            yield page_t
        finally:
            group.allocator.free(pages)

    def _teacher_forced_hidden(self, prompt: list[int], cont: list[int], *settings: KernelSettings) -> list[torch.Tensor]:
        """Per setting, (len(cont), dim) final hidden states predicting each continuation token:
        the last prompt position from a dense prefill, then ONE decode pass with continuation[:-1]
        as queries (contracts.md), each seeing the cache up to itself.

        Settings of one cache layout (`cache_key`) share the prefill: every setting prefills
        densely, so the prompt's keys and values are the same bits. Before each setting's decode
        pass, the bounds (and sketches) of the pages the continuation writes are put back as the
        prefill left them (bounds only grow as keys are written), and the pass writes every
        continuation slot in each layer before that layer reads it: each setting sees exactly
        the cache it would have had alone."""
        first = settings[0]
        if any(s.cache_key != first.cache_key for s in settings):
            raise ValueError("settings sharing a teacher-forced prefill must share the cache layout")
        group = self._group(first)
        ps = first.page_size
        total = len(prompt) + len(cont) - 1
        with self._scratch_pages(group, total, ps, purpose="divergence") as page_t:
            P = len(prompt)
            pos = torch.arange(P, device=self.device)
            batch = AttentionBatch("prefill", select_attention(first, self.device), group.cache,
                                   slots=page_t[pos // ps] * ps + pos % ps,
                                   cu_seqlens=torch.tensor([0, P], dtype=torch.int32, device=self.device))
            last = self.model(torch.tensor(prompt, device=self.device), pos, batch,
                              output_indices=torch.tensor([P - 1], device=self.device))
            if len(cont) == 1:
                return [last for _ in settings]
            cache = group.cache
            tail = page_t[P // ps:]  # the pages the continuation writes (the first may hold prompt tokens)
            saved = (cache.kbounds[:, :, tail].clone(), None if cache.ksketch is None else cache.ksketch[:, :, tail].clone())
            q_tokens = torch.tensor(cont[:-1], device=self.device)
            qpos = torch.arange(P, total, device=self.device)
            n = len(cont) - 1
            out = []
            for i, s in enumerate(settings):
                if i:
                    cache.kbounds[:, :, tail] = saved[0]
                    if saved[1] is not None:
                        cache.ksketch[:, :, tail] = saved[1]
                batch = AttentionBatch(
                    "decode", select_attention(s, self.device), cache, slots=page_t[qpos // ps] * ps + qpos % ps,
                    block_table=page_t.to(torch.int32)[None, :].expand(n, -1),
                    seq_lens=(qpos + 1).to(torch.int32))
                out.append(torch.cat([last, self.model(q_tokens, qpos, batch)]))
            return out

    # ------------------------------------------------------------------ internals
    def _check_tokens(self, ids: Sequence[int]) -> None:
        bad = [i for i in ids if not (isinstance(i, int) and 0 <= i < self.config.vocab_size)]
        if bad:
            raise EngineError(f"token ids out of range [0, {self.config.vocab_size}): {bad[:5]}")

    def _check_prompt(self, prompt_ids: Sequence[int], settings: KernelSettings) -> None:
        if not prompt_ids:
            raise EngineError("the prompt is empty")
        self._check_tokens(prompt_ids)
        if len(prompt_ids) >= self.config.max_seq_len:
            raise EngineError(f"the prompt is {len(prompt_ids)} tokens, and the model's context is "
                              f"{self.config.max_seq_len}: shorten it to leave room for at least one new token")
        if len(prompt_ids) + 1 > self._num_pages(settings.page_size) * settings.page_size:
            raise EngineError(f"the prompt is {len(prompt_ids)} tokens, more than the engine's KV cache "
                              f"({self.max_cache_tokens} tokens); start the engine with a larger max_cache_tokens")

    def _num_pages(self, page_size: int) -> int:
        return max(1, self.max_cache_tokens // page_size)

    def _group(self, settings: KernelSettings) -> _CacheGroup:
        key = settings.cache_key
        group = self._groups.get(key)
        if group is None:
            cfg = self.config
            cache = PagedKVCache(num_layers=cfg.n_layers, num_pages=self._num_pages(settings.page_size),
                                 page_size=settings.page_size, n_kv_heads=cfg.n_kv_heads, head_dim=cfg.head_dim,
                                 dtype=self.dtype, kv_cache_dtype=settings.kv_cache_dtype, device=self.device)
            group = _CacheGroup(cache, BlockAllocator(cache.num_pages))
            if cache.is_fp8:  # (kept only once calibrated: a later request must not set the scales)
                self._calibrate(group, settings)
            self._groups[key] = group
        return group

    def _calibrate(self, group: _CacheGroup, settings: KernelSettings) -> None:
        """Fix fp8 scales from a fixed prompt: the first write to each layer calibrates it."""
        ids = self.tokenizer.encode(_FP8_CALIBRATION_TEXT)
        ps = settings.page_size
        pages = group.allocator.allocate(-(-len(ids) // ps))
        try:
            page_t = torch.tensor(pages, device=self.device)
            pos = torch.arange(len(ids), device=self.device)
            batch = AttentionBatch("prefill", select_attention(settings.replace(attention="dense"), self.device),
                                   group.cache, slots=page_t[pos // ps] * ps + pos % ps,
                                   cu_seqlens=torch.tensor([0, len(ids)], dtype=torch.int32, device=self.device))
            self.model(torch.tensor(ids, device=self.device), pos, batch, output_indices=pos[-1:])
        finally:
            group.allocator.free(pages)

    def _admit(self) -> list[_Sequence]:
        """Move waiting sequences that fit (same cache layout as the head of the queue) to running.

        Sequences with the same tokens as one admitted before them in this step (the n samples
        of one request, paired-seed requests of one conversation, under any settings of this cache
        layout: every setting prefills densely) are prefilled once: they share the leader's full
        pages and get their own copy of its last, partly filled page (`_prefill`), so a prompt
        costs one prefill and its pages once, however many samples."""
        if not self._waiting:
            return []
        head = self._waiting[0]
        group = self._group(head.settings)
        ps = head.settings.page_size
        admitted, tokens, leaders = [], 0, {}
        for seq in list(self._waiting):
            if seq.settings.cache_key != head.settings.cache_key:  # (prefill is dense under every setting)
                continue
            need = len(seq.tokens)
            leader = leaders.get(tuple(seq.tokens)) if self.share_prefill else None
            if leader is None and admitted and tokens + need > self.max_prefill_tokens:
                break
            if len(self._running) + len(admitted) >= self.max_batch_size:
                break
            n_pages = -(-(need + 1) // ps)
            shared = need // ps if leader is not None else 0  # (full pages: decode never writes them)
            if n_pages - shared > group.allocator.num_free:
                break
            own = group.allocator.allocate(n_pages - shared)
            group.cache.reset_pages(torch.tensor(own, device=self.device))
            seq.pages = group.allocator.share(leader.pages[:shared]) + own if leader is not None else own
            seq.prefill_leader = leader
            if leader is None:
                leaders[tuple(seq.tokens)] = seq
                tokens += need
            self._waiting.remove(seq)
            admitted.append(seq)
        return admitted

    def _prefill(self, seqs: list[_Sequence]) -> list[TokenEvent]:
        settings = seqs[0].settings
        group = self._group(settings)
        ps = settings.page_size
        tokens, positions, slots, cu, last = [], [], [], [0], []
        row = {}  # leader -> its row of the logits
        for seq in seqs:
            n = len(seq.tokens)
            seq.num_cached = n
            if seq.prefill_leader is not None:
                continue
            row[seq] = len(last)
            tokens += seq.tokens
            positions += range(n)
            slots += [seq.pages[p // ps] * ps + p % ps for p in range(n)]
            cu.append(cu[-1] + n)
            last.append(cu[-1] - 1)
        dev = self.device
        batch = AttentionBatch("prefill", select_attention(settings, dev), group.cache,
                               slots=torch.tensor(slots, device=dev),
                               cu_seqlens=torch.tensor(cu, dtype=torch.int32, device=dev))
        hidden = self.model(torch.tensor(tokens, device=dev), torch.tensor(positions, device=dev), batch,
                            output_indices=torch.tensor(last, device=dev))
        followers = [s for s in seqs if s.prefill_leader is not None]
        partial = [s for s in followers if len(s.tokens) % ps]
        if partial:  # the leader's last page holds prompt tokens and has room: each sample its own copy
            group.cache.copy_pages(torch.tensor([s.prefill_leader.pages[len(s.tokens) // ps] for s in partial]),
                                   torch.tensor([s.pages[len(s.tokens) // ps] for s in partial]))
        self.prefill_tokens += len(tokens)
        self.prefill_sequences += len(row)
        self.shared_prefill_tokens += sum(len(s.tokens) for s in followers)
        logits = self.model.logits(hidden)
        if followers:
            logits = logits[torch.tensor([row[s.prefill_leader or s] for s in seqs], device=logits.device)]
        for s in followers:
            s.prefill_leader = None
        self._running.extend(seqs)
        return self._sample_and_emit(seqs, logits)

    def _decode(self) -> list[TokenEvent]:
        settings_order = list(dict.fromkeys(s.settings for s in self._running))
        settings = settings_order[self._rr % len(settings_order)]
        self._rr += 1
        group = self._group(settings)
        ps = settings.page_size
        seqs = [s for s in self._running if s.settings == settings][: self.max_batch_size]
        # Every sequence needs a slot for the token it feeds; preempt the youngest when out of pages.
        ready = []
        for seq in sorted(seqs, key=lambda s: s.arrival):
            if seq not in self._running:
                continue  # preempted below to make room for an older one
            pos = len(seq.tokens) - 1
            while pos // ps >= len(seq.pages):
                if group.allocator.num_free:
                    page = group.allocator.allocate(1)
                    group.cache.reset_pages(torch.tensor(page, device=self.device))
                    seq.pages += page
                    continue
                victim = max((s for s in self._running if s.settings.cache_key == settings.cache_key),
                             key=lambda s: s.arrival)
                self._preempt(victim)
                if victim is seq:
                    break
            if seq in self._running:
                ready.append(seq)
        seqs = ready
        if not seqs:
            return []
        dev = self.device
        n_pages = max(len(s.pages) for s in seqs)
        table = torch.zeros(len(seqs), n_pages, dtype=torch.int32)
        for i, s in enumerate(seqs):
            table[i, : len(s.pages)] = torch.tensor(s.pages, dtype=torch.int32)
        pos = [len(s.tokens) - 1 for s in seqs]
        slots = [s.pages[p // ps] * ps + p % ps for s, p in zip(seqs, pos)]
        batch = AttentionBatch("decode", select_attention(settings, dev), group.cache,
                               slots=torch.tensor(slots, device=dev), block_table=table.to(dev),
                               seq_lens=torch.tensor([p + 1 for p in pos], dtype=torch.int32, device=dev))
        hidden = self.model(torch.tensor([s.tokens[-1] for s in seqs], device=dev), torch.tensor(pos, device=dev),
                            batch)
        for s in seqs:
            s.num_cached = len(s.tokens)
        return self._sample_and_emit(seqs, self.model.logits(hidden))

    def _preempt(self, seq: _Sequence) -> None:
        """Free a running sequence's pages and re-queue it (front) for recomputation."""
        self._running.remove(seq)
        self._groups[seq.settings.cache_key].allocator.free(seq.pages)
        seq.pages, seq.num_cached = [], 0
        self._waiting.appendleft(seq)

    def _finish(self, seq: _Sequence) -> None:
        if seq in self._running:
            self._running.remove(seq)
        self._groups[seq.settings.cache_key].allocator.free(seq.pages)
        seq.pages = []
        self._ids.discard(seq.id)

    def _sample_and_emit(self, seqs: list[_Sequence], logits: torch.Tensor) -> list[TokenEvent]:
        # logits: (B, V) float32
        assert logits.shape[0] == len(seqs)
        sp = [s.sampling for s in seqs]
        dev = logits.device
        token_ids = sample(
            logits,
            temperature=torch.tensor([p.temperature for p in sp], dtype=torch.float32, device=dev),
            top_p=torch.tensor([p.top_p for p in sp], dtype=torch.float32, device=dev),
            top_k=torch.tensor([p.top_k for p in sp], dtype=torch.long, device=dev),
            min_p=torch.tensor([p.min_p for p in sp], dtype=torch.float32, device=dev),
            uniforms=draw_uniforms([s.generator for s in seqs], device=dev),
        ).tolist()
        want = [p.logprobs or p.top_logprobs > 0 for p in sp]
        chosen = top_vals = top_ids = None
        if any(want):
            k = max(p.top_logprobs for p in sp)
            chosen, top_vals, top_ids = logprobs_of(logits, torch.tensor(token_ids, device=dev), top_k=k)
            chosen = chosen.tolist()
            top_vals = top_vals.tolist() if top_vals is not None else None
            top_ids = top_ids.tolist() if top_ids is not None else None
        events = []
        for i, (seq, tok) in enumerate(zip(seqs, token_ids)):
            lp = chosen[i] if want[i] else None
            top = None
            if seq.sampling.top_logprobs > 0 and top_ids is not None:
                k = seq.sampling.top_logprobs
                top = [(self.tokenizer.token_str(t), t, v) for t, v in zip(top_ids[i][:k], top_vals[i][:k])]
            events.append(self._append_token(seq, tok, lp, top))
        return events

    def _append_token(self, seq: _Sequence, tok: int, lp: float | None, top) -> TokenEvent:
        seq.tokens.append(tok)
        reason = None
        if tok in self.eos_ids and not seq.sampling.ignore_eos:
            reason = "stop"
            seq.text += seq.detok.flush()
        else:
            before = len(seq.text)
            seq.text += seq.detok.add(tok)
            if seq.sampling.stop and len(seq.text) > before:
                # Search only where a stop string can newly end.
                start = max(0, before - seq.stop_max + 1)
                hits = [(seq.text.find(s, start), s) for s in seq.sampling.stop]
                hits = [(i, s) for i, s in hits if i >= 0]
                if hits:
                    seq.text = seq.text[: min(hits)[0]]
                    reason = "stop"
            if reason is None and (seq.num_generated >= seq.sampling.max_tokens
                                   or len(seq.tokens) >= self.config.max_seq_len):
                reason = "length"
                seq.text += seq.detok.flush()
        if reason is None:
            end = len(seq.text) - _held_back(seq.text, seq.sampling.stop, seq.stop_max)
        else:
            end = len(seq.text)
            self._finish(seq)
        delta = seq.text[seq.emitted:end]
        seq.emitted = max(seq.emitted, end)
        return TokenEvent(seq.id, tok, delta, lp, top, reason is not None, reason)


def _held_back(text: str, stops: tuple[str, ...], longest: int) -> int:
    """Length of the longest tail of `text` that could be the start of a stop string."""
    for n in range(min(longest - 1, len(text)), 0, -1):
        tail = text[-n:]
        if any(s.startswith(tail) for s in stops):
            return n
    return 0
