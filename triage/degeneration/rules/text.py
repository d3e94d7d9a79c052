"""The rules for markup and turns (a flood of closing tags, an unclosed fence, an invented turn, a
leaked end marker), the model's tokens and logprobs (the evidence that a loop reinforces
itself), the exemptions a request granted, and the empty response."""

from __future__ import annotations

import math

import numpy as np

from ..findings import LOOP_CODES, Highlight, Reason, pct, r4, short
from ..repetition import ngram_stats, tail_loop_tolerant
from ..tokens import clean_logprobs, ids_array
from ..turns import confabulated_turns
from .context import Context


def check_markup_flood(c: Context) -> None:
    """Far more closing tags of one name than opening ones (``</div>`` ×300)."""
    markup, T = c.markup, c.T
    opens = markup.get("opens", {})
    for name, excess in sorted(markup["excess_close"].items(), key=lambda kv: -kv[1]):
        if excess >= T.markup_excess_close_min and markup["closes"][name] >= 2 * opens.get(name, 0):
            c.fire("markup_flood",
                   f"markup: {excess} more </{name}> than <{name}> "
                   f"({markup['closes'][name]} closing, {opens.get(name, 0)} opening)",
                   T.sev_markup_flood, None)
            break


def check_unbalanced_fence(c: Context) -> None:
    """A code fence never closed (weak; halved at max_tokens)."""
    if c.markup["unbalanced_fence"]:
        c.fire("unbalanced_fence",
               f"unbalanced code fence ({c.markup['code_fences']} fence lines): a code block "
               f"is never closed", c.T.sev_unbalanced_fence * (0.5 if c.runaway else 1.0), None)


def check_confabulated_turn(c: Context) -> None:
    """A turn the conversation does not have: a chat-template marker, a bare role line (markers
    stripped) or an invented role line (``turns.confabulated_turns``)."""
    text, T = c.text, c.T
    cf = c.confab = confabulated_turns(text, c.messages, T.confab_min_words, c.chat_template, cut=c.runaway)
    c.mt["confabulation"] = {"turn_markers": len(cf["markers"]), "end_markers": len(cf["end_markers"]),
                             "role_lines": len(cf["role_lines"]), "bare_role_lines": len(cf["bare_roles"])}
    if cf["markers"]:
        pos, marker, role = cf["markers"][0]
        after = text[pos + len(marker):pos + len(marker) + 200]
        nxt = [p for p, *_ in cf["markers"][1:] + [(e[0],) for e in cf["end_markers"]] if p > pos]
        end = min(nxt) if nxt else len(text)
        who = f"a new {role} turn" if role else "a new turn"
        c.fire("confabulated_turn",
               f"confabulated turn: chat-template marker {marker.strip()!r} at char {pos} opens "
               f"{who} the conversation does not have: “{short(after, 60)}”"
               + (f" ({len(cf['markers'])} turn markers in all)" if len(cf["markers"]) > 1 else ""),
               T.sev_confab_marker, (pos, end), (pos, end, "confabulated_turn", f"invented {role or 'turn'}"))
    elif cf["bare_roles"]:
        pos, role, rest, how = cf["bare_roles"][0]
        what = {"request": "a user turn with a request", "dialogue": "a user turn answered by an invented "
                "assistant turn", "answer": f"a second {role} turn", "system": "a system turn",
                "empty": "empty turns (role headers one after the other to the end)",
                "headers": "turn headers one after the other, then a turn",
                "cut": "a turn header that max_tokens cut"}.get(how, f"a {role} turn")
        c.fire("confabulated_turn",
               f"confabulated turn: the line {role!r} at char {pos} is a chat-template role whose "
               f"markers were stripped, opening {what} the conversation does not have: "
               f"“{short(rest, 60)}”"
               + (f" ({len(cf['bare_roles'])} role lines in all)" if len(cf["bare_roles"]) > 1 else ""),
               T.sev_confab_bare, (pos, len(text)), (pos, len(text), "confabulated_turn", f"invented {role} turn"))
    elif cf["role_lines"]:
        pos, line, rest = cf["role_lines"][0]
        c.fire("confabulated_turn",
               f"confabulated turn: line {line!r} at char {pos} starts a user turn whose text is "
               f"not in the conversation: “{short(rest, 60)}”",
               T.sev_confab_role, (pos, len(text)), (pos, len(text), "confabulated_turn", "invented user turn"))


def check_leaked_end_marker(c: Context) -> None:
    """An end-of-turn marker inside the response (weak; highlighted even when a turn marker is the
    finding)."""
    cf = c.confab
    if not cf["end_markers"]:
        return
    pos, marker = cf["end_markers"][0]
    if not cf["markers"]:
        c.reasons.append(Reason("leaked_end_marker",
                                f"end-of-turn marker {marker!r} inside the response at char {pos} "
                                f"(the stop condition did not fire)", c.T.sev_leaked_end_marker,
                                (pos, pos + len(marker))))
    c.highlights.append(Highlight(pos, pos + len(marker), "end_marker", marker))


def measure_model_tokens(c: Context) -> None:
    """n-gram metrics and the tail loop on the model's token ids, when the caller has them."""
    if c.token_ids is None:
        return
    try:
        mids = ids_array(list(c.token_ids))
    except (TypeError, ValueError, OverflowError):
        c.mt["model_tokens"] = {"error": "token_ids must be a sequence of integers"}
        return
    c.model_ids = mids
    mm = {"tokens": int(mids.size)}
    mm.update({k: r4(v) for k, v in ngram_stats(mids).items()})
    model_loop = c.model_loop = tail_loop_tolerant(mids)
    mm["tail_loop"] = None if model_loop is None else {
        "period": model_loop.period, "copies": r4(model_loop.copies),
        "covered_tokens": model_loop.covered, "coverage": r4(model_loop.coverage),
        "start_token": model_loop.start}
    c.mt["model_tokens"] = mm


def check_logprob_evidence(c: Context) -> None:
    """Whether the first loop finding reinforces itself (its tokens near-certain): raises its
    severity or says it does not; without logprobs, says that they are absent."""
    text, T, model_loop, mids = c.text, c.T, c.model_loop, c.model_ids
    loops = [r for r in c.reasons if r.code in LOOP_CODES and r.span is not None]
    lp = None
    if c.token_logprobs is not None:
        lp = (clean_logprobs(c.token_logprobs) if isinstance(c.token_logprobs, (list, tuple, np.ndarray))
              else np.zeros(0))
    if lp is None or not lp.size:
        c.mt["logprobs"] = {"n": 0, "absent": True}
        if loops:
            loops[0].message += ("; no token logprobs with the response, so whether the loop reinforces itself "
                                 "(near-certain tokens) is not known")
        return
    certain = lp >= T.near_zero_logprob
    info: dict = {"n": int(lp.size), "mean": r4(lp.mean()), "certain_share": r4(certain.mean())}
    # the loop's tokens: exact for the tail loop with model token ids, else the share of the
    # logprobs that the loop's characters are of the text (proportional)
    in_loop = None
    if (model_loop is not None and mids is not None and mids.size == lp.size and loops
            and loops[0].code == "tail_loop"):
        in_loop = certain[model_loop.start:model_loop.total - model_loop.trimmed]
        info["loop_mapping"] = "model_tokens"
    elif loops and len(text):
        a, b = loops[0].span
        ka = int(math.floor(lp.size * a / len(text)))
        kb = max(ka + 1, int(math.ceil(lp.size * b / len(text))))
        in_loop = certain[ka:kb]
        info["loop_mapping"] = "proportional"
    elif c.loop_char is not None and len(text):
        in_loop = certain[int(math.floor(lp.size * c.loop_char / len(text))):]
        info["loop_mapping"] = "proportional"
    if in_loop is not None and in_loop.size:
        share = np.count_nonzero(in_loop) / in_loop.size
        info["loop_certain_share"] = r4(share)
        info["loop_tokens"] = int(in_loop.size)
        if loops:
            r = loops[0]
            if share >= T.self_reinforcing_share:
                r.severity = 1 - (1 - r.severity) * (1 - T.sev_self_reinforcing_bonus)
                r.message += (f"; self-reinforcing: {pct(share)} of the loop's tokens were sampled with "
                              f"p ≥ 0.9 (logprob ≥ {T.near_zero_logprob:.2f})")
            else:
                r.message += (f"; not self-reinforcing: {pct(share)} of the loop's tokens were sampled "
                              f"with p ≥ 0.9")
    c.mt["logprobs"] = info


def record_exemptions(c: Context) -> None:
    """The repetition the request asked for, and the loop findings it excused."""
    if c.request is not None:
        c.mt["requested_repetition"] = {"count": c.request[0], "exempted": c.exempted}


def check_empty(c: Context) -> None:
    if not c.text.strip():
        c.fire("empty", "empty response" if not c.text else "response is only whitespace", 0.1, None)
