"""Rotary position embedding in the rotate-half form (Llama): the torch reference that the
model runs (inference/model.py) and that the native `rope_write` (kernels/cpu) matches bit for
bit, signed zeros included (kernels/tests/test_cpu_native.py)."""

from __future__ import annotations

import torch


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    # x: (T, H, D); cos/sin: (T, 1, D)
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin
