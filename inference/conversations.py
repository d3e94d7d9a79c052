"""A fixed long conversation for measurements that must score the same tokens: the end-to-end
KL tests of the kernel settings (inference/tests/test_end_to_end.py) and the KV-format study
(studies/kv_formats.py), so that the numbers each prints can be set side by side.

It is a chat about two standard-library modules' sources (`textwrap`, `inspect`): real text and
code, the same on every machine running this Python version, and no data file to ship.
"""

from __future__ import annotations

import inspect
import textwrap


def source_conversation(engine, tokens: int, scored: int) -> tuple[list[int], list[int]]:
    """The chat's token ids cut to `tokens`, split into a prompt and the last `scored` tokens
    (the continuation a teacher-forced divergence scores). `engine` gives the chat template."""
    source = inspect.getsource(textwrap) + inspect.getsource(inspect)
    messages = [
        {"role": "user", "content": "Explain what this Python module does, section by section:\n" + source[:9000]},
        {"role": "assistant", "content": source[9000:30000]},
    ]
    ids = engine.apply_chat_template(messages, add_generation_prompt=False)
    if len(ids) < tokens:
        raise ValueError(f"the conversation has {len(ids)} tokens")
    ids = ids[:tokens]
    return ids[:tokens - scored], ids[tokens - scored:]
