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


@pytest.fixture(scope="session")
def native_kernels(skip_or_fail):
    """kernels.cpu built and loaded. A real dependency like the services of the root conftest.py:
    a test that needs it skips without it (no C compiler, a failed build, TRIAGE_NATIVE_KERNELS=0),
    or fails under REQUIRE_SERVICES=1."""
    from kernels import cpu

    if not cpu.available():
        skip_or_fail(f"needs the native CPU kernels (a C compiler: apt-get install gcc), unavailable here: "
                     f"{cpu.unavailable_reason()}")
    return cpu
