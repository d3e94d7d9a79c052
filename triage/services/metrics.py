"""The degeneration verdict of a response, as the database stores it: what ingestion puts on a
Transcript and an experiment on each Sample. A thin, never-raising wrapper around
triage.degeneration.analyze (the rules themselves live in triage/degeneration/rules/)."""

from __future__ import annotations

import inspect
import json
import logging
from functools import lru_cache
from typing import Any

logger = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def _analyzer():
    """triage.degeneration.analyze and the keyword arguments it accepts (its optional
    inputs were still settling when ingestion was written; pass only what it takes)."""
    from triage.degeneration import analyze

    try:
        params = inspect.signature(analyze).parameters
    except (TypeError, ValueError):
        params = {}
    accepts_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return analyze, (lambda name: accepts_all or name in params)


def _token_logprobs(logprobs: Any) -> list[float] | None:
    entries = logprobs.get("content") if isinstance(logprobs, dict) else logprobs
    if not isinstance(entries, list) or not entries:
        return None
    return [entry.get("logprob") if isinstance(entry, dict) else entry for entry in entries]


def _plain(value: Any) -> Any:
    """JSON-safe copy of a verdict value (numpy scalars, dataclasses, tuples)."""
    return json.loads(json.dumps(value, default=lambda o: o.item() if hasattr(o, "item") else (
        o.to_dict() if hasattr(o, "to_dict") else str(o))))


def transcript_metrics(*, text: str, finish_reason: str = "", messages: list | None = None,
                       logprobs: Any = None, chat_template: str | None = None) -> dict[str, Any]:
    """Run the degeneration analysis; never raises (a transcript is stored even when its
    metrics fail: the failure is recorded in metrics["error"] and logged). ``chat_template``:
    the backend's template family, for the role names of invented turns whose markers the
    server stripped."""
    try:
        analyze, accepts = _analyzer()
        kwargs: dict[str, Any] = {}
        if accepts("finish_reason"):
            kwargs["finish_reason"] = finish_reason
        if accepts("messages") and messages is not None:
            kwargs["messages"] = messages
        if chat_template and accepts("chat_template"):
            kwargs["chat_template"] = chat_template
        token_logprobs = _token_logprobs(logprobs)
        if token_logprobs is not None:
            for name in ("logprobs", "token_logprobs"):
                if accepts(name):
                    kwargs[name] = token_logprobs
                    break
        result = analyze(text, **kwargs)
        as_dict = _plain(result.to_dict()) if hasattr(result, "to_dict") else {}
        reasons = _plain(list(getattr(result, "reasons", as_dict.get("reasons", [])) or []))
        # Transcript.metrics: the metric values, plus the spans to highlight and the
        # analysis version (degenerate/severity/reasons have their own columns).
        metrics = dict(as_dict.get("metrics") or {})
        for key in ("highlights", "version"):
            if key in as_dict:
                metrics[key] = as_dict[key]
        return {
            "degenerate": bool(result.degenerate), "severity": float(result.severity or 0.0),
            "reasons": reasons, "metrics": metrics,
        }
    except Exception as exc:  # noqa: BLE001 - ingestion must not lose the transcript
        logger.exception("degeneration metrics failed")
        return {"degenerate": False, "severity": 0.0, "reasons": [],
                "metrics": {"error": f"metrics failed: {exc.__class__.__name__}: {exc}"}}
