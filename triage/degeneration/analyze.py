"""``analyze()``: all metrics of one response, and the verdict that explains itself.

The findings are the rules of ``rules/`` (one module per family), called here in order; what an analysis says
(``Reason``, ``Highlight``, ``Analysis``, ``VERSION``, the codes) is in ``findings.py``.
"""

from __future__ import annotations

from . import rules as R
from .findings import Analysis, Highlight, Reason
from .thresholds import DEFAULT, Thresholds
from .tokens import token_arrays


def analyze(text, *, finish_reason: str | None = None, messages=None, token_ids=None,
            token_logprobs=None, chat_template: str | None = None, thresholds: Thresholds = DEFAULT) -> Analysis:
    """Measure one response and judge whether it is degenerate.

    Parameters (all but ``text`` keyword-only):
      text            the response (str; bytes are decoded as UTF-8 with replacement).
      finish_reason   "stop" / "length" / None.  "length" (hit max_tokens) is a weak finding on
                      its own and strengthens a loop.
      messages        the conversation that led to the response, OpenAI style
                      ``[{"role": ..., "content": ...}]`` (content may be a list of text parts).
                      Used to tell an invented turn from a quoted one.
      token_ids       the model's token ids of the response, when known: n-gram metrics and the
                      tail loop are then also reported on model tokens (``metrics["model_tokens"]``)
                      and logprobs are mapped to the loop exactly.
      token_logprobs  logprob of each generated token (same order as token_ids).
      chat_template   the model's chat template family (``chatml``, ``llama3``, ``gemma``) or its
                      source, for the role names of bare role lines (default: user / assistant /
                      system, plus the roles of ``messages``).
      thresholds      a ``Thresholds`` (default ``thresholds.DEFAULT``).

    The verdict depends only on the text, finish_reason and messages (so a response gets the same
    verdict whether or not the caller had token ids), except that logprobs showing a
    self-reinforcing loop raise the severity of a loop finding.

    Raises TypeError only when ``text`` is neither str nor bytes.  Never quadratic: every metric
    is linear in the length (numpy sorts, n log n, for unique n-gram counts).
    """
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = bytes(text).decode("utf-8", "replace")
    if not isinstance(text, str):
        raise TypeError(f"text must be str or bytes, not {type(text).__name__}")
    if finish_reason is not None and not isinstance(finish_reason, str):
        finish_reason = str(finish_reason)

    c = R.Context(text=text, data=text.encode("utf-8", "surrogatepass"), toks=token_arrays(text), T=thresholds,
                  finish_reason=finish_reason, messages=messages, chat_template=chat_template,
                  token_ids=token_ids, token_logprobs=token_logprobs, runaway=finish_reason == "length")
    R.measure_text(c)
    R.measure_tail_loop(c)
    R.measure_markup(c)
    # loops, in this order: most stand down once an earlier one has fired (c.loop_fired)
    R.check_tail_loop(c)
    R.check_fuzzy_loop(c)
    R.check_counting_loop(c)
    R.check_repeated_items(c)
    R.check_list_overrun(c)
    R.check_item_rotation(c)
    R.check_line_runs(c)
    R.check_repeat_run(c)
    R.check_record_run(c)
    R.check_char_loop(c)
    R.check_identifier_stutter(c)
    R.check_symbol_flood(c)
    R.check_near_verbatim(c)
    R.check_nesting(c)
    R.check_runaway_repetition(c)
    R.check_runaway(c)
    # markup and turns
    R.check_markup_flood(c)
    R.check_unbalanced_fence(c)
    R.check_confabulated_turn(c)
    R.check_leaked_end_marker(c)
    # model tokens and logprobs: metrics, and the evidence that a loop reinforces itself
    R.measure_model_tokens(c)
    R.check_logprob_evidence(c)
    R.record_exemptions(c)
    R.check_empty(c)
    return _verdict(c.reasons, c.mt, c.highlights, thresholds)


def _verdict(reasons: list[Reason], mt: dict, highlights: list[Highlight], T: Thresholds) -> Analysis:
    """The response's severity, the noisy-OR of its findings' (1 − Π(1 − sᵢ)); degenerate from
    ``T.degenerate_at``; the reasons strongest first."""
    sev = 1.0
    for r in reasons:
        sev *= 1.0 - max(0.0, min(1.0, r.severity))
    severity = 1.0 - sev
    reasons.sort(key=lambda r: -r.severity)
    return Analysis(degenerate=severity >= T.degenerate_at, severity=severity, reasons=reasons,
                    metrics=mt, highlights=highlights)
