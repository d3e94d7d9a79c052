"""Model hyperparameters: a dataclass read from GGUF metadata (`ModelConfig.from_gguf`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ModelConfig:
    vocab_size: int = 49152
    dim: int = 576
    n_layers: int = 30
    n_heads: int = 9
    n_kv_heads: int = 3
    intermediate_size: int = 1536
    rope_base: float = 100000.0
    norm_eps: float = 1e-5
    max_seq_len: int = 8192
    bos_token_id: int | None = 1
    eos_token_ids: tuple[int, ...] = (2,)
    tie_embeddings: bool = True
    name: str = "SmolLM2-135M-Instruct"
    # Derived in __post_init__.
    head_dim: int = field(init=False)
    qkv_dim: int = field(init=False)

    def __post_init__(self) -> None:
        if self.dim % self.n_heads:
            raise ValueError(f"dim {self.dim} is not divisible by n_heads {self.n_heads}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads {self.n_heads} is not a multiple of n_kv_heads {self.n_kv_heads}")
        self.head_dim = self.dim // self.n_heads
        self.qkv_dim = (self.n_heads + 2 * self.n_kv_heads) * self.head_dim

    @classmethod
    def from_gguf(cls, metadata: dict[str, Any], *, vocab_size: int | None = None,
                  tie_embeddings: bool = True) -> "ModelConfig":
        """Read a llama-architecture config from GGUF metadata (keys as llama.cpp writes them)."""
        arch = metadata.get("general.architecture")
        if arch != "llama":
            raise ValueError(f"unsupported GGUF architecture {arch!r}: only 'llama' is implemented")

        def get(key: str, default: Any = None) -> Any:
            value = metadata.get(f"llama.{key}", default)
            if value is None:
                raise ValueError(f"GGUF metadata lacks llama.{key}")
            return value

        n_heads = int(get("attention.head_count"))
        eos = [metadata.get("tokenizer.ggml.eos_token_id"), metadata.get("tokenizer.ggml.eot_token_id")]
        dim = int(get("embedding_length"))
        rope_dims = metadata.get("llama.rope.dimension_count")
        if rope_dims is not None and int(rope_dims) != dim // n_heads:
            raise ValueError(f"partial rotary embeddings ({rope_dims} of {dim // n_heads} dims) are not supported")
        scaling = metadata.get("llama.rope.scaling.type")
        if scaling not in (None, "none"):
            raise ValueError(f"rope scaling {scaling!r} is not supported")
        tokens = metadata.get("tokenizer.ggml.tokens")
        return cls(
            vocab_size=int(vocab_size or metadata.get("llama.vocab_size") or len(tokens)),
            dim=dim,
            n_layers=int(get("block_count")),
            n_heads=n_heads,
            n_kv_heads=int(get("attention.head_count_kv", n_heads)),
            intermediate_size=int(get("feed_forward_length")),
            rope_base=float(get("rope.freq_base", 10000.0)),
            norm_eps=float(get("attention.layer_norm_rms_epsilon", 1e-5)),
            max_seq_len=int(get("context_length", 2048)),
            bos_token_id=metadata.get("tokenizer.ggml.bos_token_id"),
            eos_token_ids=tuple(dict.fromkeys(int(e) for e in eos if e is not None)),
            tie_embeddings=tie_embeddings,
            name=str(metadata.get("general.name") or "llama"),
        )
