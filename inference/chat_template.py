"""Render the chat template stored in GGUF metadata (`tokenizer.chat_template`) with jinja2,
in the sandboxed environment Hugging Face `apply_chat_template` uses."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Sequence

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

CHATML_FALLBACK = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
ROLES = ("system", "user", "assistant", "tool")


class ChatTemplateError(ValueError):
    """Malformed messages, or the template itself refused them."""


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None, separators=None, sort_keys: bool = False):
    # Jinja's own tojson HTML-escapes; templates expect plain JSON, as Hugging Face renders it.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


class ChatTemplate:
    def __init__(self, source: str | None, *, bos_token: str = "", eos_token: str = ""):
        self.source = source or CHATML_FALLBACK
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise_exception
        env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        self._template = env.from_string(self.source)
        self.bos_token = bos_token
        self.eos_token = eos_token

    def render(self, messages: Sequence[dict[str, Any]], *, add_generation_prompt: bool = True, **extra: Any) -> str:
        validate_messages(messages)
        try:
            return self._template.render(
                messages=list(messages), add_generation_prompt=add_generation_prompt,
                bos_token=self.bos_token, eos_token=self.eos_token, **extra,
            )
        except jinja2.exceptions.TemplateError as exc:
            raise ChatTemplateError(f"chat template rejected the messages: {exc}") from exc


def validate_messages(messages: Sequence[dict[str, Any]]) -> None:
    if not isinstance(messages, (list, tuple)) or not messages:
        raise ChatTemplateError("messages must be a non-empty list")
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise ChatTemplateError(f"messages[{i}] must be an object with 'role' and 'content'")
        if m.get("role") not in ROLES:
            raise ChatTemplateError(f"messages[{i}].role must be one of {', '.join(ROLES)}, got {m.get('role')!r}")
        if not isinstance(m.get("content"), str):
            raise ChatTemplateError(f"messages[{i}].content must be a string")
