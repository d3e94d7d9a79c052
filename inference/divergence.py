"""Teacher-forced divergence: two kernel settings scored on the same tokens.

`divergence()` runs a prompt and a given continuation through the model under a reference and
a candidate kernel setting and compares, position by position, the distributions each predicts
for the next continuation token (KL, top-1 agreement, logprobs). `prompt_logits()` scores a
prompt under one setting. Both borrow scratch pages from the scheduler's caches and hold its
lock, so they may run between a server's generation steps (docs/architecture.md, "Layout").
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from inference.model import AttentionBatch
from inference.requests import MAX_TOP_LOGPROBS, EngineError
from inference.scheduler import Scheduler
from kernels.selector import select_attention
from kernels.settings import KernelSettings

_LOGITS_CHUNK = 512  # (512, vocab) logits at a time bounds memory


@torch.inference_mode()
def divergence(scheduler: Scheduler, prompt_ids: Sequence[int], continuation_ids: Sequence[int],
               reference: KernelSettings | dict, candidate: KernelSettings | dict, *, kl_threshold: float = 0.1,
               top_k: int = 5, return_distributions: bool = False) -> dict[str, Any]:
    """Teacher-forced comparison of two kernel settings on the same tokens.

    Position i scores continuation token i given prompt + continuation[:i]. Returns
    per-position logprobs of the continuation tokens, top-k (token, id, logprob) and argmax
    under each setting, KL(reference || candidate), top-1 agreement, the first position
    whose KL exceeds `kl_threshold`, and the full distributions (probabilities) when asked.
    """
    reference, candidate = scheduler.check_kernel(reference), scheduler.check_kernel(candidate)
    prompt_ids, cont = list(prompt_ids), list(continuation_ids)
    if not prompt_ids or not cont:
        raise EngineError("divergence needs a non-empty prompt and continuation")
    if not 0 <= top_k <= MAX_TOP_LOGPROBS:
        raise EngineError(f"top_k must be in [0, {MAX_TOP_LOGPROBS}]")
    scheduler.check_tokens(prompt_ids + cont)
    total = len(prompt_ids) + len(cont)
    max_seq_len = scheduler.config.max_seq_len
    if total > max_seq_len:
        raise EngineError(f"prompt + continuation is {total} tokens, over the context of {max_seq_len}")
    with scheduler.lock:
        if reference == candidate:  # one setting against itself (a re-score): one pass
            (h_ref,) = teacher_forced_hidden(scheduler, prompt_ids, cont, reference)
            h_cand = h_ref
        elif reference.cache_key == candidate.cache_key:  # one cache layout: one prefill for both
            h_ref, h_cand = teacher_forced_hidden(scheduler, prompt_ids, cont, reference, candidate)
        else:
            (h_ref,) = teacher_forced_hidden(scheduler, prompt_ids, cont, reference)
            (h_cand,) = teacher_forced_hidden(scheduler, prompt_ids, cont, candidate)
    model, token_str = scheduler.model, scheduler.tokenizer.token_str
    targets = torch.tensor(cont, device=scheduler.device)
    out: dict[str, list] = {k: [] for k in ("ref_lp", "cand_lp", "kl", "ref_top1", "cand_top1",
                                            "ref_top", "cand_top", "ref_dist", "cand_dist")}
    for c0 in range(0, len(cont), _LOGITS_CHUNK):
        c1 = c0 + _LOGITS_CHUNK
        lr = torch.log_softmax(model.logits(h_ref[c0:c1]), -1)
        lc = torch.log_softmax(model.logits(h_cand[c0:c1]), -1)
        t = targets[c0:c1, None]
        out["ref_lp"] += lr.gather(1, t).squeeze(1).tolist()
        out["cand_lp"] += lc.gather(1, t).squeeze(1).tolist()
        out["kl"] += (lr.exp() * (lr - lc)).sum(-1).clamp_min(0).tolist()
        out["ref_top1"] += lr.argmax(-1).tolist()
        out["cand_top1"] += lc.argmax(-1).tolist()
        if top_k:
            for key, lp in (("ref_top", lr), ("cand_top", lc)):
                vals, ids = lp.topk(top_k, -1)
                out[key] += [[(token_str(i), i, v) for i, v in zip(row_i, row_v)]
                             for row_i, row_v in zip(ids.tolist(), vals.tolist())]
        if return_distributions:
            out["ref_dist"] += lr.exp().tolist()
            out["cand_dist"] += lc.exp().tolist()
    kl = out["kl"]
    agree = [a == b for a, b in zip(out["ref_top1"], out["cand_top1"])]
    first = next((i for i, v in enumerate(kl) if v > kl_threshold), None)
    result: dict[str, Any] = {
        "num_tokens": len(cont),
        "tokens": [token_str(i) for i in cont],
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
def prompt_logits(scheduler: Scheduler, prompt_ids: Sequence[int],
                  kernel: KernelSettings | dict | None = None) -> torch.Tensor:
    """(T, vocab) float32 logits at every prompt position, from one prefill through the
    paged cache (for scoring and tests)."""
    settings = scheduler.check_kernel(kernel)
    ids = list(prompt_ids)
    scheduler.check_prompt(ids, settings)
    model, dev = scheduler.model, scheduler.device
    with scheduler.lock:
        group = scheduler.cache_group(settings)
        ps = settings.page_size
        with scheduler.scratch_pages(group, len(ids), ps, purpose="scoring") as page_t:
            pos = torch.arange(len(ids), device=dev)
            batch = AttentionBatch("prefill", select_attention(settings, dev), group.cache,
                                   slots=page_t[pos // ps] * ps + pos % ps,
                                   cu_seqlens=torch.tensor([0, len(ids)], dtype=torch.int32, device=dev))
            return model.logits(model(torch.tensor(ids, device=dev), pos, batch))


def teacher_forced_hidden(scheduler: Scheduler, prompt: list[int], cont: list[int],
                          *settings: KernelSettings) -> list[torch.Tensor]:
    """Per setting, (len(cont), dim) final hidden states predicting each continuation token:
    the last prompt position from a dense prefill, then ONE decode pass with continuation[:-1]
    as queries (docs/contracts.md), each seeing the cache up to itself.

    Settings of one cache layout (`cache_key`) share the prefill: every setting prefills
    densely, so the prompt's keys and values are the same bits. Before each setting's decode
    pass, the bounds (and sketches) of the pages the continuation writes are put back as the
    prefill left them (bounds only grow as keys are written; `PagedKVCache.snapshot_bounds`),
    and the pass writes every continuation slot in each layer before that layer reads it: each
    setting sees exactly the cache it would have had alone.

    Call under `torch.inference_mode()` and the scheduler's lock (`divergence` does)."""
    first = settings[0]
    if any(s.cache_key != first.cache_key for s in settings):
        raise ValueError("settings sharing a teacher-forced prefill must share the cache layout")
    model, dev = scheduler.model, scheduler.device
    group = scheduler.cache_group(first)
    ps = first.page_size
    total = len(prompt) + len(cont) - 1
    with scheduler.scratch_pages(group, total, ps, purpose="divergence") as page_t:
        P = len(prompt)
        pos = torch.arange(P, device=dev)
        batch = AttentionBatch("prefill", select_attention(first, dev), group.cache,
                               slots=page_t[pos // ps] * ps + pos % ps,
                               cu_seqlens=torch.tensor([0, P], dtype=torch.int32, device=dev))
        last = model(torch.tensor(prompt, device=dev), pos, batch, output_indices=torch.tensor([P - 1], device=dev))
        if len(cont) == 1:
            return [last for _ in settings]
        cache = group.cache
        # The pages the continuation writes (the first may hold prompt tokens), as the prefill left them.
        prefilled = cache.snapshot_bounds(page_t[P // ps:])
        q_tokens = torch.tensor(cont[:-1], device=dev)
        qpos = torch.arange(P, total, device=dev)
        n = len(cont) - 1
        out = []
        for i, s in enumerate(settings):
            if i:
                cache.restore_bounds(prefilled)
            batch = AttentionBatch(
                "decode", select_attention(s, dev), cache, slots=page_t[qpos // ps] * ps + qpos % ps,
                block_table=page_t.to(torch.int32)[None, :].expand(n, -1),
                seq_lens=(qpos + 1).to(torch.int32))
            out.append(torch.cat([last, model(q_tokens, qpos, batch)]))
        return out
