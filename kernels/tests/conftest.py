"""Kernel tests run the Triton kernels for real on a GPU, and in the Triton interpreter on the
CPU. TRITON_INTERPRET must be set before any Triton kernel module is imported (triton.jit
reads it at decoration time), so it is set here, at collection, before the test modules load."""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.fixture
def device() -> torch.device:
    return DEVICE
