"""Transcript text as blocks for the pages: Markdown code fences become code blocks, the rest stays
plain text, and the verdict's highlights (loops, invented turns) are cut to fit the blocks.

Pure functions, no HTML: the templates escape every piece (Django's autoescape), so transcripts
that contain HTML and JavaScript on purpose stay inert text.

Why not a Markdown library: only fences are rendered, the highlights need each piece's character
offsets in the original text, and the text must be shown exactly as the model produced it. So the
fence lines themselves stay visible (muted) inside their block — an unbalanced fence is one of the
detector's reasons, and an invented turn may be glued to one (`` ```user ``). One linear pass over
the lines.

Fences follow CommonMark, with one leniency: a fence may be indented by any amount of spaces or
tabs (LLM answers put fences inside list items), where CommonMark allows three outside a list. A
fence that is never closed (common in runaway answers) runs to the end of the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_OPEN = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})(?P<info>[^\r\n]*)")
_LANGUAGE_CHARS = re.compile(r"[^A-Za-z0-9_+#.-]")
LANGUAGE_MAX = 30


@dataclass(frozen=True)
class Block:
    """A run of the text: `code` (from its opening fence line to the end of its closing one) or
    `text`. Offsets index the original text; for code, [body_start, body_end) is the code
    between the fence lines."""

    kind: str  # "text" | "code"
    start: int
    end: int
    language: str = ""
    closed: bool = True
    body_start: int = 0
    body_end: int = 0


def _lines(text: str):
    """(start, end, line without its line ending) for each line; `end` includes the ending."""
    start = 0
    while start < len(text):
        newline = text.find("\n", start)
        end = len(text) if newline < 0 else newline + 1
        yield start, end, text[start:end].rstrip("\r\n")
        start = end


def _language(info: str) -> str:
    word = info.strip().split(maxsplit=1)[0] if info.strip() else ""
    return _LANGUAGE_CHARS.sub("", word.strip("{}."))[:LANGUAGE_MAX].lower()


def split_fences(text: str) -> list[Block]:
    """The text as alternating text and code blocks covering it exactly, in order."""
    blocks: list[Block] = []
    text_start = 0
    fence = None  # (char, length, block start, body start, language) of the open fence
    for start, end, line in _lines(text):
        if fence is None:
            opening = _OPEN.fullmatch(line)
            if opening is None:
                continue
            marker, info = opening["fence"], opening["info"]
            if marker[0] == "`" and "`" in info:  # (CommonMark: `` ```a`b `` is inline code, not a fence)
                continue
            if start > text_start:
                blocks.append(Block("text", text_start, start))
            fence = (marker[0], len(marker), start, end, _language(info))
            continue
        char, length, block_start, body_start, language = fence
        stripped = line.strip(" \t")
        if len(stripped) >= length and stripped == char * len(stripped):
            blocks.append(Block("code", block_start, end, language, True, body_start, start))
            fence, text_start = None, end
    if fence is not None:
        char, length, block_start, body_start, language = fence
        blocks.append(Block("code", block_start, len(text), language, False, body_start, len(text)))
    elif text_start < len(text) or not blocks:
        blocks.append(Block("text", text_start, len(text)))
    return blocks


def _cut(segments: list[dict], start: int, end: int, offsets: list[int], **extra) -> list[dict]:
    """The parts of the segments that fall in [start, end), each with `extra` added."""
    pieces = []
    for segment, at in zip(segments, offsets):
        lo, hi = max(start, at), min(end, at + len(segment["text"]))
        if lo < hi:
            pieces.append({**segment, "text": segment["text"][lo - at:hi - at], **extra})
    return pieces


def blocks_with_highlights(text: str, segments: list[dict] | None = None) -> list[dict]:
    """The text as blocks for a template, each with its pieces: {"kind": "text" | "code",
    "language", "closed", "pieces": [{"text", "kind" (highlight kind, "" for plain), "label",
    "fence" (a fence line)}]}.

    `segments` are consecutive pieces that cover `text` exactly (triage.views.highlight_segments:
    plain and highlighted), possibly with characters replaced one for one (NUL drawn as ␀); a
    highlight that crosses a fence is cut there and shows on both sides."""
    if segments is None:
        segments = [{"text": text, "kind": ""}]
    offsets, at = [], 0
    for segment in segments:
        offsets.append(at)
        at += len(segment["text"])
    if at != len(text):
        raise ValueError(f"segments cover {at} characters, the text has {len(text)}")
    out = []
    for block in split_fences(text):
        if block.kind == "text":
            out.append({"kind": "text", "pieces": _cut(segments, block.start, block.end, offsets, fence=False)})
            continue
        pieces = (_cut(segments, block.start, block.body_start, offsets, fence=True)
                  + _cut(segments, block.body_start, block.body_end, offsets, fence=False)
                  + _cut(segments, block.body_end, block.end, offsets, fence=True))
        out.append({"kind": "code", "language": block.language, "closed": block.closed, "pieces": pieces})
    if not out[0]["pieces"]:  # the empty text: one empty text block, so the page shows an empty box
        out[0]["pieces"] = [{"text": "", "kind": "", "fence": False}]
    return out
