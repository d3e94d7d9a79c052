"""Assertions shared by the stats tests."""

from __future__ import annotations

import json
import math
from typing import Any


def assert_plain_json(value: Any) -> None:
    """``value`` is built from plain Python types only and serialises without NaN/inf."""

    def walk(v: Any, path: str) -> None:
        if v is None or type(v) in (bool, int, str):
            return
        if type(v) is float:
            assert math.isfinite(v), f"{path}: non-finite float {v!r}"
            return
        if type(v) in (list, tuple):
            for i, item in enumerate(v):
                walk(item, f"{path}[{i}]")
            return
        if type(v) is dict:
            for k, item in v.items():
                assert type(k) is str, f"{path}: non-string key {k!r}"
                walk(item, f"{path}.{k}")
            return
        raise AssertionError(f"{path}: {type(v).__module__}.{type(v).__name__} is not plain JSON")

    walk(value, "result")
    json.dumps(value, allow_nan=False)
