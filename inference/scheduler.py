"""The scheduler: continuous batching over paged KV caches, per-sequence seeded sampling.

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

The scheduler runs a model it is given; `inference.engine.Engine` loads one from a GGUF file
and adds generation to completion and the teacher-forced divergence (`inference.divergence`)
on top (docs/architecture.md, "Layout").

Thread safety: every public method takes one lock (`lock`), so a server thread may call
`add_request` and `abort` while another runs `step()`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from collections import deque
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

import torch

from inference.config import ModelConfig
from inference.model import AttentionBatch, Transformer
from inference.requests import EngineError, GenerationRequest, TokenEvent
from inference.sampling import draw_uniforms, logprobs_of, sample
from inference.tokenizer import IncrementalDetokenizer, Tokenizer
from kernels.kv_cache import PagedKVCache
from kernels.selector import select_attention
from kernels.settings import KernelSettings

# Fixed text run through a fresh fp8 cache so that its per-layer scales never depend on which
# request happened to arrive first (kernels/kv_cache.py: "calibrate once at start-up").
_FP8_CALIBRATION_TEXT = (
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWrite a short HTML page "
    "with a table of the planets, then explain in two paragraphs why the sky is blue. Include the numbers "
    "1, 2, 3.14159 and 2024.<|im_end|>\n<|im_start|>assistant\n<!DOCTYPE html>\n<html><body><table>"
)


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
class CacheGroup:
    """One cache layout's KV cache and the allocator of its pages."""

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




class Scheduler:
    """Requests in, token events out: admits, prefills, decodes and preempts sequences over one
    paged KV cache per cache layout, sampling each sequence from its own seeded generator."""

    def __init__(self, model: Transformer, tokenizer: Tokenizer, config: ModelConfig, *,
                 device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32,
                 max_cache_tokens: int = 32768, max_batch_size: int = 64, max_prefill_tokens: int = 4096,
                 share_prefill: bool = True):
        self.model = model
        self.tokenizer = tokenizer
        self.config = config
        self.device = torch.device(device)
        self.dtype = dtype
        self.eos_ids = frozenset(config.eos_token_ids)
        self.max_cache_tokens = max_cache_tokens
        self.max_batch_size = max_batch_size
        self.max_prefill_tokens = max_prefill_tokens
        self.share_prefill = share_prefill  # samples of one prompt prefill it once (_admit)
        self._reset()

    def _reset(self) -> None:
        """Empty caches and queues, counters at zero (a new scheduler, or a fork of an engine)."""
        self._groups: dict[tuple, CacheGroup] = {}
        self._waiting: deque[_Sequence] = deque()
        self._running: list[_Sequence] = []
        self._ids: set[str] = set()
        self._arrivals = itertools.count()
        self._rr = 0
        # Held by every public method; a caller running its own passes over the caches
        # (inference.divergence) holds it too.
        self.lock = threading.RLock()
        self.prefill_tokens = 0          # tokens run through prefill
        self.prefill_sequences = 0       # prompts run through prefill (identical prompts admitted together: one)
        self.shared_prefill_tokens = 0   # prompt tokens not run again: taken from an identical prompt's prefill

    # ------------------------------------------------------------------ public API
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
        self.check_prompt(req.prompt_ids, kernel)
        with self.lock:
            if req.request_id in self._ids:
                raise EngineError(f"request_id {req.request_id!r} is already in the engine")
            self._ids.add(req.request_id)
            self._waiting.append(_Sequence(req, self.tokenizer, next(self._arrivals)))

    def abort(self, request_id: str) -> bool:
        """Drop a request (waiting or running); frees its pages. True if it was there."""
        with self.lock:
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
        with self.lock:
            return bool(self._waiting or self._running)

    def num_requests(self) -> int:
        with self.lock:
            return len(self._waiting) + len(self._running)

    @torch.inference_mode()
    def step(self) -> list[TokenEvent]:
        """One forward pass: a prefill of admitted requests, or a decode step. Returns the new
        token of every sequence that took part."""
        with self.lock:
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

    # ------------------------------------------------------------------ caches
    def cache_group(self, settings: KernelSettings) -> CacheGroup:
        """The cache (and page allocator) of `settings`' cache layout, created on first use; an
        fp8 cache is calibrated on a fixed prompt as it is created."""
        key = settings.cache_key
        group = self._groups.get(key)
        if group is None:
            cfg = self.config
            cache = PagedKVCache(num_layers=cfg.n_layers, num_pages=self._num_pages(settings.page_size),
                                 page_size=settings.page_size, n_kv_heads=cfg.n_kv_heads, head_dim=cfg.head_dim,
                                 dtype=self.dtype, kv_cache_dtype=settings.kv_cache_dtype, device=self.device)
            group = CacheGroup(cache, BlockAllocator(cache.num_pages))
            if cache.is_fp8:  # (kept only once calibrated: a later request must not set the scales)
                self._calibrate(group, settings)
            self._groups[key] = group
        return group

    @contextlib.contextmanager
    def scratch_pages(self, group: CacheGroup, tokens: int, page_size: int, *, purpose: str) -> Iterator[torch.Tensor]:
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

    def check_tokens(self, ids: Sequence[int]) -> None:
        bad = [i for i in ids if not (isinstance(i, int) and 0 <= i < self.config.vocab_size)]
        if bad:
            raise EngineError(f"token ids out of range [0, {self.config.vocab_size}): {bad[:5]}")

    def check_prompt(self, prompt_ids: Sequence[int], settings: KernelSettings) -> None:
        if not prompt_ids:
            raise EngineError("the prompt is empty")
        self.check_tokens(prompt_ids)
        if len(prompt_ids) >= self.config.max_seq_len:
            raise EngineError(f"the prompt is {len(prompt_ids)} tokens, and the model's context is "
                              f"{self.config.max_seq_len}: shorten it to leave room for at least one new token")
        if len(prompt_ids) + 1 > self._num_pages(settings.page_size) * settings.page_size:
            raise EngineError(f"the prompt is {len(prompt_ids)} tokens, more than the engine's KV cache "
                              f"({self.max_cache_tokens} tokens); start the engine with a larger max_cache_tokens")

    # ------------------------------------------------------------------ internals
    def _num_pages(self, page_size: int) -> int:
        return max(1, self.max_cache_tokens // page_size)

    def _calibrate(self, group: CacheGroup, settings: KernelSettings) -> None:
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
        group = self.cache_group(head.settings)
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
        group = self.cache_group(settings)
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
        group = self.cache_group(settings)
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
