"""Degeneration metrics for LLM responses: pure Python + numpy, no Django.

    from triage.degeneration import analyze
    a = analyze(text, finish_reason="length", messages=[...])
    a.degenerate, a.severity, a.reasons, a.metrics, a.highlights, a.to_dict()

See README.md in this folder for the metric definitions, thresholds and measured accuracy.
"""

from .analyze import analyze
from .findings import REASON_CODES, VERSION, Analysis, Highlight, Reason
from .thresholds import DEFAULT as DEFAULT_THRESHOLDS, Thresholds
from .tokens import tokenize

__all__ = ["analyze", "Analysis", "Reason", "Highlight", "Thresholds", "DEFAULT_THRESHOLDS",
           "tokenize", "VERSION", "REASON_CODES"]
