"""Attention kernel variants for the bundled engine. Importing this package loads no torch;
import the submodules (kernels.attention, kernels.kv_cache, ...) for the implementations."""

from kernels.settings import PROFILES, KernelSettings, KernelSettingsError

__all__ = ["KernelSettings", "KernelSettingsError", "PROFILES"]
