"""Markup: tag balance per element name, code fences (their balance and the spans of fenced
code), and a flood of symbols at the end of a text."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

TAG_RE = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:_-]*)(?:\s[^<>]*?)?(/?)>")
VOID_TAGS = frozenset("area base br col embed hr img input link meta param source track wbr "
                      "keygen command basefont frame isindex".split())
FENCE_RE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})", re.M)


def markup_balance(text: str) -> dict:
    """Per tag name, the surplus of closing over opening tags and vice versa (void and
    self-closing tags ignored), plus code-fence balance."""
    out: dict = {"tags": 0, "excess_close": {}, "excess_open": {}, "first_excess_close": None,
                 "code_fences": 0, "unbalanced_fence": False}
    if "<" in text:
        opens: Counter = Counter()
        closes: Counter = Counter()
        for (slash, name, selfclose), k in Counter(TAG_RE.findall(text)).items():  # C-level count
            name = name.lower()
            if selfclose or name in VOID_TAGS:
                continue
            if slash:
                closes[name] += k
            else:
                opens[name] += k
        out["tags"] = sum(opens.values()) + sum(closes.values())
        out["opens"] = dict(opens)
        out["closes"] = dict(closes)
        out["excess_close"] = {k: closes[k] - opens.get(k, 0) for k in closes if closes[k] > opens.get(k, 0)}
        out["excess_open"] = {k: opens[k] - closes.get(k, 0) for k in opens if opens[k] > closes.get(k, 0)}
    if "```" in text or "~~~" in text:
        fences = FENCE_RE.findall(text)
        # A fence closes only with the same character and at least the opener's length.
        open_fence = None
        count = 0
        for f in fences:
            count += 1
            if open_fence is None:
                open_fence = f
            elif f[0] == open_fence[0] and len(f) >= len(open_fence):
                open_fence = None
        out["code_fences"] = count
        out["unbalanced_fence"] = open_fence is not None
    return out


_FLOOD_GLUE = frozenset(" \t\r\n|*_-~.,:;\u200d\ufe0f\ufffd")
_SYMBOL_CATEGORIES = frozenset(("So", "Sk"))


def symbol_tail_run(text: str, max_chars: int = 4096) -> dict | None:
    """The stretch at the end of ``text`` made only of symbols (Unicode So / Sk: emoji, dingbats)
    and what glues them (spaces, ``|``, zero-width joiners, a cut character): {"start", "symbols",
    "kinds", "top", "top_count"}, or None when the text does not end in a symbol.  Scans at most
    the last ``max_chars`` characters (backwards, stops at the first other character)."""
    counts: dict[str, int] = {}
    i = len(text)
    stop = max(0, i - max_chars)
    while i > stop:
        c = text[i - 1]
        if c in _FLOOD_GLUE:
            i -= 1
            continue
        if c < "\u2000" or unicodedata.category(c) not in _SYMBOL_CATEGORIES:
            break
        counts[c] = counts.get(c, 0) + 1
        i -= 1
    if not counts:
        return None
    while i < len(text) and text[i] in _FLOOD_GLUE:
        i += 1
    top = max(counts, key=counts.get)
    return {"start": i, "symbols": sum(counts.values()), "kinds": len(counts), "top": top, "top_count": counts[top]}


# a stretch of the blocks ``_pictograph`` draws from, glued by spaces and separators: where a
# symbol run can be (the regex skips all other text, CJK included, at C speed)
_HIGH_RUN_RE = re.compile(r"[\u2600-\u27bf\U0001f300-\U0001faff]"
                          r"(?:[ \t\r\n|*_\-~.,:;\u200d\ufe0f\ufffd]*[\u2600-\u27bf\U0001f300-\U0001faff])*")


def _pictograph(c: str) -> bool:
    """An emoji-like symbol: a pictograph (U+1F300–1FAFF) or a misc symbol or dingbat (U+2600–27BF),
    category So / Sk; not the coloured squares and circles (U+1F7E0–1F7FF) or the stars (★ ☆
    ✩–✰) that share and rating lines are drawn with, nor box drawing and geometric shapes."""
    o = ord(c)
    if 0x1F300 <= o <= 0x1FAFF:
        ok = not 0x1F7E0 <= o <= 0x1F7FF
    elif 0x2600 <= o <= 0x27BF:
        ok = o not in (0x2605, 0x2606) and not 0x2729 <= o <= 0x2730
    else:
        return False
    return ok and unicodedata.category(c) in _SYMBOL_CATEGORIES


def symbol_run(text: str, min_symbols: int) -> dict | None:
    """The longest stretch anywhere made only of emoji-like symbols (``_pictograph``: not the
    box-drawing, block, geometric, coloured-square or star characters of a divider, a drawn board,
    a share grid or a rating) and what glues them, with ≥ ``min_symbols`` symbols: {"start", "end", "symbols",
    "kinds", "top", "top_count"}, or None.  A flood the model left (a hundred ``🌞`` and then more
    text).  Linear: one regex pass, then the characters of the long candidates."""
    best = None
    for m in _HIGH_RUN_RE.finditer(text):
        if m.end() - m.start() < min_symbols:
            continue
        counts: dict[str, int] = {}
        start = None
        for i in range(m.start(), m.end() + 1):
            c = text[i] if i < m.end() else "\x00"
            if c in _FLOOD_GLUE:
                continue
            if _pictograph(c):
                if start is None:
                    start, counts = i, {}
                counts[c] = counts.get(c, 0) + 1
                end = i + 1
                continue
            if start is not None and sum(counts.values()) >= min_symbols:
                n = sum(counts.values())
                if best is None or n > best["symbols"]:
                    top = max(counts, key=counts.get)
                    best = {"start": start, "end": end, "symbols": n, "kinds": len(counts), "top": top,
                            "top_count": counts[top]}
            start = None
    return best


def fence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of fenced code blocks (an unclosed one runs to the end)."""
    spans = []
    if "```" not in text and "~~~" not in text:  # (a fence holds one of them)
        return spans
    open_at = None
    open_fence = None
    for m in FENCE_RE.finditer(text):
        f = m.group(1)
        if open_fence is None:
            open_fence, open_at = f, m.start()
        elif f[0] == open_fence[0] and len(f) >= len(open_fence):
            spans.append((open_at, m.end()))
            open_fence = None
    if open_fence is not None:
        spans.append((open_at, len(text)))
    return spans



def closed_spans(text: str, spans):
    """The fenced code blocks that are closed: a fence left open to the end of a response is
    often the parity of its fences gone wrong (a block reopened by the fence that meant to close
    it), or a runaway; what follows it is not reliably code."""
    return [s for s in spans if s[1] < len(text)] if spans and spans[-1][1] >= len(text) else spans


def in_spans(pos: int, spans) -> bool:
    for a, b in spans:
        if a <= pos < b:
            return True
    return False


def in_inline_code(text: str, pos: int) -> bool:
    line_start = text.rfind("\n", 0, pos) + 1
    if text[line_start:pos].strip() in ("```", "~~~", "````"):
        return False  # (right after a code fence: a role glued to the fence, not inline code)
    return text.count("`", line_start, pos) % 2 == 1
