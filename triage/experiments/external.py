"""Teacher-forced scoring on external OpenAI-compatible servers (vLLM, SGLang, llama.cpp).

They have no `/v1/divergence`, but `/v1/completions` with `echo: true` and `logprobs: k`
returns, for every prompt token, its logprob and the top-k alternatives. Scoring the
ChatML-rendered conversation followed by a response gives, per response token:
- `rescore`: the logprob of each token of a sample as the server's prefill sees it, to
  set against the logprobs it reported while decoding (decode vs prefill);
- `topk_divergence`: an approximate KL between two servers' next-token distributions, from
  their top-k lists only (the tail mass is lumped into one "other" bucket, so the value is a
  lower bound of the true KL — the result says so).
Where a server does not support it (no echo logprobs, unknown chat template) the result is
`unavailable` with the reason, never a guess.
"""

from __future__ import annotations

import math
from typing import Any

from triage import stats
from triage.backends import BackendClient, BackendError

EXACT, TOPK, UNAVAILABLE = "exact", "topk", "unavailable"
TOP_K = 5


def render_chatml(messages: list[dict], *, default_system_prompt: str = "") -> str:
    """The conversation with the assistant's generation prompt, as ChatML (SmolLM2, Qwen); the
    template's default system prompt first when the conversation has none."""
    if default_system_prompt and (not messages or messages[0]["role"] != "system"):
        messages = [{"role": "system", "content": default_system_prompt}, *messages]
    parts = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
    return "".join(parts) + "<|im_start|>assistant\n"


def _render(backend, messages: list[dict]) -> str | None:
    if (backend.chat_template or "").lower() == "chatml":
        return render_chatml(messages, default_system_prompt=backend.default_system_prompt)
    return None


def _echo_scores(client: BackendClient, prompt: str, text: str, *, top_k: int) -> list[dict]:
    """[{token, logprob, top: {token: logprob}}] for the tokens of `text` after `prompt`.

    Servers disagree on text offsets (llama.cpp counts them without the special tokens it
    leaves out of `tokens`), so the response's tokens are found from the end instead: drop
    the generated token(s), then take tokens back until they cover the response's text."""
    data = client.completions({"prompt": prompt + text, "echo": True, "logprobs": top_k, "max_tokens": 1,
                               "temperature": 0.0})
    choice = (data.get("choices") or [{}])[0]
    lp = choice.get("logprobs") or {}
    tokens, logprobs = lp.get("tokens"), lp.get("token_logprobs")
    if not tokens or logprobs is None or len(tokens) != len(logprobs):
        raise BackendError(f"backend '{client.name}' returned no echo logprobs on /v1/completions "
                           f"(llama.cpp's server needs --logits_all true)")
    tops = lp.get("top_logprobs") or [None] * len(tokens)
    generated = int((data.get("usage") or {}).get("completion_tokens") or 0)
    end = len(tokens) - min(generated, 1)
    covered, start = 0, end
    while start > 0 and covered < len(text):
        start -= 1
        covered += len(tokens[start] or "")
    return [{"token": tokens[i], "logprob": logprobs[i], "top": dict(tops[i] or {})} for i in range(start, end)]


def _bundled_scores(client: BackendClient, messages: list[dict], text: str, kernel: dict, *, top_k: int) -> list[dict]:
    """The same shape from a bundled backend's /v1/divergence (the setting against itself)."""
    data = client.divergence({"messages": messages, "continuation": text, "reference": kernel, "candidate": kernel,
                              "top_k": top_k})
    return [{"token": p["token"], "logprob": p["reference_logprob"],
             "top": {t["token"]: t["logprob"] for t in p.get("reference_top") or []}} for p in data["positions"]]


def _scores(client: BackendClient, backend, messages: list[dict], text: str, kernel: dict, *, top_k: int) -> list[dict]:
    if client.bundled:
        return _bundled_scores(client, messages, text, kernel, top_k=top_k)
    prompt = _render(backend, messages)
    if prompt is None:
        raise BackendError(f"backend '{backend.name}' has no chat template set for raw-prompt scoring "
                           f"(Backend.chat_template)")
    return _echo_scores(client, prompt, text, top_k=top_k)


def rescore(client: BackendClient, backend, messages: list[dict], text: str, decoded: list[dict]):
    """(method, note, tokens, rescored logprobs, decode logprobs) aligned on the tokens both
    sides agree on (the re-tokenized text can split differently from what was decoded)."""
    prompt = _render(backend, messages)
    if prompt is None:
        return UNAVAILABLE, f"backend '{backend.name}' has no chat template set for raw-prompt re-scoring", [], [], []
    if not text:
        return UNAVAILABLE, "the sample is empty", [], [], []
    try:
        scores = _echo_scores(client, prompt, text, top_k=0)
    except BackendError as exc:
        return UNAVAILABLE, str(exc), [], [], []
    tokens, rescored, decode = [], [], []
    for entry, dec in zip(scores, decoded):
        if entry["token"] != dec.get("token") or entry["logprob"] is None or dec.get("logprob") is None:
            break  # tokenizations part: compare only the common prefix
        tokens.append(entry["token"])
        rescored.append(float(entry["logprob"]))
        decode.append(float(dec["logprob"]))
    if not tokens:
        return UNAVAILABLE, "the re-scored tokens do not match the decoded ones from the first token", [], [], []
    note = f"decode logprobs vs /v1/completions echo re-score, {len(tokens)} of {len(decoded)} tokens aligned"
    return EXACT, note, tokens, rescored, decode


def _topk_kl(reference: dict[str, float], candidate: dict[str, float]) -> float:
    """KL(reference ‖ candidate) over the union of both top-k lists plus an `other` bucket;
    a token missing from one side gets that side's leftover mass spread over its missing ones."""
    keys = set(reference) | set(candidate)

    def distribution(top: dict[str, float]) -> dict[str, float]:
        probs = {k: math.exp(v) for k, v in top.items() if v is not None}
        rest = max(1e-12, 1.0 - sum(probs.values()))
        missing = [k for k in keys if k not in probs]
        share = rest / (len(missing) + 1)
        full = {**probs, **{k: share for k in missing}}
        full["<other>"] = share
        total = sum(full.values())
        return {k: v / total for k, v in full.items()}

    p, q = distribution(reference), distribution(candidate)
    return max(0.0, sum(pv * math.log(pv / max(q[k], 1e-12)) for k, pv in p.items() if pv > 0))


def topk_divergence(stock_client: BackendClient, arm_client: BackendClient, stock_backend, arm_backend,
                    messages: list[dict], response: str, threshold: float, *, stock_kernel: dict | None = None,
                    arm_kernel: dict | None = None) -> tuple[str, str, list, dict]:
    """(method, note, positions, summary) of the approximate KL between two servers' top-k
    next-token distributions on the same response (tokens aligned while both split it alike)."""
    try:
        ref = _scores(stock_client, stock_backend, messages, response, stock_kernel or {}, top_k=TOP_K)
        cand = _scores(arm_client, arm_backend, messages, response, arm_kernel or {}, top_k=TOP_K)
    except BackendError as exc:
        return UNAVAILABLE, f"top-k divergence unavailable: {exc}", [], {}
    positions: list[dict[str, Any]] = []
    for i, (a, b) in enumerate(zip(ref, cand)):
        if a["token"] != b["token"]:
            break
        if not a["top"] or not b["top"]:
            return UNAVAILABLE, "the servers returned no top-k logprobs", [], {}
        kl = _topk_kl(a["top"], b["top"])
        agree = max(a["top"], key=a["top"].get) == max(b["top"], key=b["top"].get)
        positions.append({"position": i, "token": a["token"], "kl": kl, "top1_agree": agree})
    if not positions:
        return UNAVAILABLE, "the two servers tokenized the response differently from the first token", [], {}
    summary = stats.kl_summary([p["kl"] for p in positions], threshold=threshold)
    summary["top1_agreement"] = sum(p["top1_agree"] for p in positions) / len(positions)
    note = (f"top-{TOP_K} approximation (tail mass lumped together: a lower bound of the true KL), "
            f"{len(positions)} of {min(len(ref), len(cand))} positions aligned")
    return TOPK, note, positions, summary
