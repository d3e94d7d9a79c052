"""Lossless storage of transcript content that PostgreSQL cannot hold as is.

PostgreSQL `text` and `jsonb` reject U+0000, yet a router may legitimately forward a
response containing NUL bytes, and the product promises to store content byte-exact.
Such a transcript is stored with every string (object keys included) escaped with this
codec and `Transcript.content_encoding = NUL_ESCAPED`; everything else is stored as sent.

Escape character E = U+2400 (SYMBOL FOR NULL, "␀", so an escaped NUL still reads as one):
    E    -> E E
    NUL  -> E 0
Every E in the escaped text is followed by E or "0", so decoding is unambiguous.
"""

from __future__ import annotations

import re
from typing import Any

NUL_ESCAPED = "nul-escaped-v1"
_E = "\u2400"
_ESCAPED = re.compile("\u2400(.)", re.DOTALL)


def escape_str(text: str) -> str:
    if "\x00" not in text and _E not in text:
        return text
    return text.replace(_E, _E + _E).replace("\x00", _E + "0")


def unescape_str(text: str) -> str:
    if _E not in text:
        return text
    return _ESCAPED.sub(lambda m: _E if m.group(1) == _E else "\x00", text)


def _walk(value: Any, fn) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        return [_walk(item, fn) for item in value]
    if isinstance(value, dict):
        return {fn(k): _walk(v, fn) for k, v in value.items()}
    return value


def escape(value: Any) -> Any:
    """Escape every string in a JSON value (keys included)."""
    return _walk(value, escape_str)


def unescape(value: Any) -> Any:
    return _walk(value, unescape_str)


def decode(value: Any, encoding: str) -> Any:
    """The value as the router sent it, given the row's content_encoding."""
    return unescape(value) if encoding == NUL_ESCAPED else value
