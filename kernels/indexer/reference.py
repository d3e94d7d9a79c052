"""Page indexer in torch: Quest-bound page scores and top-k page selection.

For a query q and a page with elementwise key bounds kmin <= k <= kmax, the largest possible
q.k over the page's keys is bounded by (Quest, Tang et al. 2024)

    bound = sum_d max(q_d * kmin_d, q_d * kmax_d).

Query heads sharing a KV head share one selection, so their bounds are summed. Because
kmin <= kmax, max(q_d kmin_d, q_d kmax_d) = relu(q_d) kmax_d + min(q_d, 0) kmin_d exactly (one
of the two terms is an exact zero), and the sum over the G grouped heads is linear in the
bounds:

    score = sum_g bound_g = (sum_g relu(q_g)) . kmax + (sum_g min(q_g, 0)) . kmin

i.e. one dot product of length 2*D per (query, KV head, page), against the contiguous
[kmin | kmax] row the cache keeps. Only the summation order differs from the literal formula.

Selection (per query and KV head), returned with a static shape (N, Hkv, K),
K = min(budget // page_size, P), ascending logical page indices (positions in the block
table row), padded with -1:
  * valid pages: p < ceil(seq_len / page_size);
  * always: the first `sink_pages` and the last `local_pages` valid pages;
  * then the highest-scoring remaining pages until K pages are chosen, ties to the lower index.
With budget >= context every valid page is selected, so sparse attention equals dense.
"""

from __future__ import annotations

import torch

from kernels.kv_cache import PagedKVCache


def num_selected_pages(budget: int, page_size: int, max_pages: int) -> int:
    """Static size of the selection's last dimension."""
    return max(1, min(budget // page_size, max_pages))


def grouped_query_bounds(q: torch.Tensor, n_kv_heads: int) -> torch.Tensor:
    """q (N, H, D) -> (N, Hkv, 2, D) float32: [sum_g min(q_g, 0) | sum_g relu(q_g)], the vector
    that dotted with a page's [kmin | kmax] row gives the summed Quest bound."""
    N, H, D = q.shape
    qg = q.float().view(N, n_kv_heads, H // n_kv_heads, D)
    return torch.stack((qg.clamp_max(0).sum(2), qg.clamp_min(0).sum(2)), dim=2)


def page_scores(
    q: torch.Tensor, kbounds: torch.Tensor, block_table: torch.Tensor, max_pages: int | None = None
) -> torch.Tensor:
    """Summed Quest bound of every block-table page.

    q: (N, H, D); kbounds: (Hkv, num_pages, 2, D) ([kmin | kmax] of one layer, in the cache's
    bounds_dtype, widened to float32 here);
    block_table: (N, P) -> (N, Hkv, P') float32 with P' = max_pages or P. Entries for pages
    past a sequence's end are meaningless (possibly NaN); select_from_scores masks them.
    """
    N, H, D = q.shape
    Hkv, num_pages = kbounds.shape[0], kbounds.shape[1]
    P = block_table.shape[1] if max_pages is None else max_pages
    qb = grouped_query_bounds(q, Hkv).transpose(0, 1).reshape(Hkv, N, 2 * D, 1)
    pages = block_table[:, :P].to(device=q.device, dtype=torch.long).clamp(0, num_pages - 1)
    rows = kbounds.view(Hkv, num_pages, 2 * D).index_select(1, pages.reshape(-1)).float()  # (Hkv, N*P, 2D)
    scores = torch.matmul(rows.view(Hkv, N, P, 2 * D), qb)  # (Hkv, N, P, 1)
    return scores.view(Hkv, N, P).transpose(0, 1)


def select_from_scores(
    scores: torch.Tensor, seq_lens: torch.Tensor, *, page_size: int, budget: int, sink_pages: int,
    local_pages: int, num_pages_out: int | None = None,
) -> torch.Tensor:
    """Top pages from scores (N, Hkv, P) -> (N, Hkv, K) int32 (see module docstring)."""
    N, Hkv, P = scores.shape
    K = num_selected_pages(budget, page_size, P) if num_pages_out is None else num_pages_out
    n_pages = (seq_lens.to(device=scores.device, dtype=torch.long) + page_size - 1) // page_size
    p = torch.arange(P, device=scores.device)
    invalid = p[None, :] >= n_pages[:, None]  # (N, P) past the sequence end
    forced = (p[None, :] < sink_pages) | (p[None, :] >= n_pages[:, None] - local_pages)
    keyed = scores.float().masked_fill(forced[:, None], float("inf"))  # (the caller's scores stay as they are)
    keyed.masked_fill_(invalid[:, None], float("-inf"))  # also hides NaN from empty pages
    # Top K of (score, then lower index): the float's bits made monotone as an int32 in the high
    # half of an int64, P - 1 - index in the low half. Exactly a stable descending sort's first K
    # (NaN, positive once canonicalized, ranks above +inf as in torch.sort; -0.0 counts as 0.0),
    # at the cost of a top-k instead of a full sort.
    bits = torch.where(torch.isnan(keyed), float("nan"), keyed + 0.0).view(torch.int32)
    monotone = torch.where(bits >= 0, bits, bits ^ 0x7FFFFFFF).to(torch.int64)
    key = (monotone << 32) | (P - 1 - p)
    top = key.topk(min(K, P), dim=-1, sorted=False).indices
    top_scores = keyed.gather(-1, top)
    top = torch.where(top_scores > float("-inf"), top, P).sort(dim=-1).values  # ascending, invalid last
    return torch.where(top == P, -1, top).to(torch.int32)


def select_pages(
    q: torch.Tensor,
    cache: PagedKVCache,
    layer: int,
    block_table: torch.Tensor,
    seq_lens: torch.Tensor,
    *,
    budget: int,
    sink_pages: int,
    local_pages: int,
    scorer=page_scores,
    chooser=select_from_scores,
) -> torch.Tensor:
    """(N, H, D) decode queries -> (N, Hkv, K) int32 selected logical pages, K =
    min(budget // page_size, P). Static shape, no host synchronisation. `scorer` computes the
    page scores and `chooser` picks the pages (the functions here; on the CPU the selector passes
    kernels.cpu.page_scores and kernels.cpu.select_from_scores: the same scores without the
    gather, the same selection in one native pass)."""
    P = block_table.shape[1]
    scores = scorer(q, cache.kbounds[layer], block_table)
    return chooser(
        scores, seq_lens, page_size=cache.page_size, budget=budget, sink_pages=sink_pages,
        local_pages=local_pages, num_pages_out=num_selected_pages(budget, cache.page_size, P),
    )
