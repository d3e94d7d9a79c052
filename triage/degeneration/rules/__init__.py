"""The rules of the verdict: one function per finding, in the order ``analyze()`` calls them.

Each rule reads what it needs from the shared ``Context`` (the text, its tokens, the thresholds,
what earlier rules measured), adds its metrics to ``c.mt`` and, when it fires, a ``Reason`` and a
``Highlight``.  Most loop findings set ``c.loop_fired``, and most loop rules after them then
stand down, so a loop is explained once, by the earliest rule that sees it.  Every threshold is a
field of ``Thresholds`` (``thresholds.py``); the measurements themselves are in the metric
modules (``tokens``, ``repetition``, ``lines``, ``markup``, ``turns``, ``counting``,
``near_verbatim``, ``nesting``).

The rules by family, one module each:

  context.py   ``Context`` and the measurements every rule may read
  repeats.py   repetition word for word: tail loop, fuzzy loop, line runs, repeat run, repeated
               block, character loop, stutter inside a word, symbol flood
  lists.py     lists and counters: counting loop, repeated items, list overrun, items in rotation
  near.py      repetition not word for word: near-verbatim loop, nesting, runaway repetition, runaway
  text.py      markup and turns, the model's logprobs, exemptions, the empty response
"""

from .context import Context, measure_markup, measure_tail_loop, measure_text
from .lists import check_counting_loop, check_item_rotation, check_list_overrun, check_repeated_items
from .near import check_near_verbatim, check_nesting, check_runaway, check_runaway_repetition
from .repeats import (check_char_loop, check_fuzzy_loop, check_identifier_stutter, check_line_runs, check_record_run,
                      check_repeat_run, check_symbol_flood, check_tail_loop)
from .text import (check_confabulated_turn, check_empty, check_leaked_end_marker, check_logprob_evidence,
                   check_markup_flood, check_unbalanced_fence, measure_model_tokens, record_exemptions)

__all__ = [
    "Context", "measure_text", "measure_tail_loop", "measure_markup",
    "check_tail_loop", "check_fuzzy_loop", "check_counting_loop", "check_repeated_items", "check_list_overrun",
    "check_item_rotation", "check_line_runs", "check_repeat_run", "check_record_run", "check_char_loop",
    "check_identifier_stutter", "check_symbol_flood", "check_near_verbatim", "check_nesting",
    "check_runaway_repetition", "check_runaway",
    "check_markup_flood", "check_unbalanced_fence", "check_confabulated_turn", "check_leaked_end_marker",
    "measure_model_tokens", "check_logprob_evidence", "record_exemptions", "check_empty",
]
