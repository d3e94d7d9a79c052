"""Kernel settings: the one schema shared by the engine, the server and the triage app.

Pure Python (no torch import) so the Django app can validate a KernelProfile without
loading the inference stack. Schema and rules: docs/architecture.md, "Kernel settings".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

ATTENTION_CHOICES = ("dense", "sparse")
IMPLEMENTATION_CHOICES = ("torch", "triton")
KV_CACHE_DTYPE_CHOICES = ("auto", "fp8_e4m3")

# Bounds keep a request from asking for an absurd cache layout; page sizes are powers of
# two because the Triton kernels tile pages with tl.arange.
PAGE_SIZES = (8, 16, 32, 64, 128)
MAX_SPARSE_BUDGET = 1 << 20


class KernelSettingsError(ValueError):
    """Invalid kernel settings. `errors` maps a field path to what was wrong."""

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{path}: {message}" for path, message in errors.items()))


@dataclass(frozen=True)
class KernelSettings:
    attention: str = "dense"
    decode_kernel: str = "torch"
    indexer: str = "torch"
    kv_cache_dtype: str = "auto"
    page_size: int = 16
    sparse_budget: int = 512
    sink_pages: int = 1
    local_pages: int = 2

    def __post_init__(self) -> None:
        errors = _validate(self)
        if errors:
            raise KernelSettingsError(errors)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, *, path: str = "kernel") -> "KernelSettings":
        """Build from a JSON object; missing keys take defaults, unknown keys are rejected."""
        if data is None:
            return cls()
        if isinstance(data, KernelSettings):
            return data
        if not isinstance(data, dict):
            raise KernelSettingsError({path: f"must be an object, got {type(data).__name__}"})
        known = {f.name for f in fields(cls)}
        errors = {
            f"{path}.{key}": f"unknown setting; allowed: {', '.join(sorted(known))}"
            for key in data
            if key not in known
        }
        if errors:
            raise KernelSettingsError(errors)
        try:
            return cls(**data)
        except KernelSettingsError as exc:
            raise KernelSettingsError({f"{path}.{k}": v for k, v in exc.errors.items()}) from None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def replace(self, **changes: Any) -> "KernelSettings":
        return KernelSettings(**{**self.to_dict(), **changes})

    @property
    def cache_key(self) -> tuple[int, str]:
        """Settings that change the KV cache layout; requests differing only in the
        attention algorithm can share one cache."""
        return (self.page_size, self.kv_cache_dtype)

    @property
    def label(self) -> str:
        parts = [self.attention]
        if self.attention == "sparse":
            parts.append(f"budget={self.sparse_budget}")
            parts.append(f"decode={self.decode_kernel}")
            parts.append(f"indexer={self.indexer}")
        if self.kv_cache_dtype != "auto":
            parts.append(f"kv={self.kv_cache_dtype}")
        return " ".join(parts)


def _validate(s: KernelSettings) -> dict[str, str]:
    errors: dict[str, str] = {}

    def choice(name: str, allowed: tuple[str, ...]) -> None:
        value = getattr(s, name)
        if value not in allowed:
            errors[name] = f"{value!r} is not one of {', '.join(allowed)}"

    def integer(name: str, lo: int, hi: int) -> int | None:
        value = getattr(s, name)
        if isinstance(value, bool) or not isinstance(value, int):
            errors[name] = f"must be an integer, got {type(value).__name__}"
            return None
        if not lo <= value <= hi:
            errors[name] = f"must be between {lo} and {hi}, got {value}"
            return None
        return value

    choice("attention", ATTENTION_CHOICES)
    choice("decode_kernel", IMPLEMENTATION_CHOICES)
    choice("indexer", IMPLEMENTATION_CHOICES)
    choice("kv_cache_dtype", KV_CACHE_DTYPE_CHOICES)
    page_size = integer("page_size", 1, max(PAGE_SIZES))
    if page_size is not None and page_size not in PAGE_SIZES:
        errors["page_size"] = f"must be one of {', '.join(map(str, PAGE_SIZES))}, got {page_size}"
    budget = integer("sparse_budget", 1, MAX_SPARSE_BUDGET)
    sink = integer("sink_pages", 0, 1024)
    local = integer("local_pages", 0, 1024)
    if s.attention == "sparse" and None not in (budget, page_size, sink, local):
        if local < 1:
            errors["local_pages"] = "sparse attention needs at least 1 local page (the page being written)"
        elif (sink + local) * page_size > budget:
            errors["sparse_budget"] = (
                f"budget {budget} tokens cannot hold sink_pages + local_pages = {sink + local} "
                f"pages of {page_size} tokens; raise sparse_budget or lower the page counts"
            )
    return errors


# Named profiles (docs/architecture.md): what a deployment binds to backend endpoints.
PROFILES: dict[str, KernelSettings] = {
    "stock": KernelSettings(),
    "sparse": KernelSettings(attention="sparse"),
    "sparse-triton": KernelSettings(attention="sparse", decode_kernel="triton", indexer="triton"),
    "fp8-kv": KernelSettings(kv_cache_dtype="fp8_e4m3"),
    "sparse-triton+fp8": KernelSettings(
        attention="sparse", decode_kernel="triton", indexer="triton", kv_cache_dtype="fp8_e4m3"
    ),
}
