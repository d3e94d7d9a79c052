"""Llama decoder for the engine: packed (ragged) batches, paged KV cache, pluggable attention.

The model never names an attention kernel: the engine hands it an `AttentionBatch` holding the
backend chosen by `kernels.selector.select_attention` from the request's kernel settings, the
`PagedKVCache` the keys and values are written to, and the layout of the batch. Checkpoint
quirks (GGUF names, Q/K permutation, fused projections, tied head) were settled at load time
(`inference.gguf_loader`), so `forward` is plain math.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from inference.config import ModelConfig
from kernels import cpu as kernels_cpu
from kernels.rope import apply_rope


@dataclass
class AttentionBatch:
    """How the T packed tokens of one forward pass relate to sequences and the cache.

    prefill: T fresh tokens of B whole prompts, `cu_seqlens` (B+1,) int32 delimits them.
    decode:  T query tokens, each with its own `block_table` row (T, P) int32 and `seq_lens` (T,)
             int32 = cache positions it sees, its own included (written before attention).
    """

    mode: str                              # "prefill" | "decode"
    backend: Any                           # kernels attention backend (.prefill / .decode)
    cache: Any                             # kernels.kv_cache.PagedKVCache
    slots: torch.Tensor                    # (T,) int64 cache slot of each token
    cu_seqlens: torch.Tensor | None = None
    block_table: torch.Tensor | None = None
    seq_lens: torch.Tensor | None = None
    plan: Any = None                       # backend's per-step decode plan, built once, shared by all layers


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Fused kernel; statistics in fp32 whatever the compute dtype.
        return F.rms_norm(x, self.weight.shape, self.weight, self.eps)


def rope_tables(config: ModelConfig, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin: (max_seq_len, head_dim), halves repeated for rotate-half rope."""
    d = config.head_dim
    inv_freq = 1.0 / (config.rope_base ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    t = torch.arange(config.max_seq_len, dtype=torch.float32)
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


class Attention(nn.Module):
    def __init__(self, config: ModelConfig, layer_id: int):
        super().__init__()
        self.layer_id = layer_id
        self.n_heads, self.n_kv_heads, self.head_dim = config.n_heads, config.n_kv_heads, config.head_dim
        self.wqkv = nn.Linear(config.dim, config.qkv_dim, bias=False)
        self.wo = nn.Linear(config.n_heads * config.head_dim, config.dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, batch: AttentionBatch) -> torch.Tensor:
        T = x.shape[0]
        H, Hkv, D = self.n_heads, self.n_kv_heads, self.head_dim
        qkv = self.wqkv(x).view(T, H + 2 * Hkv, D)
        qk = apply_rope(qkv[:, : H + Hkv], cos, sin)           # (T, H + Hkv, D)
        q, k = qk[:, :H], qk[:, H:]
        v = qkv[:, H + Hkv:]
        batch.cache.write(self.layer_id, batch.slots, k, v)
        if batch.mode == "prefill":
            out = batch.backend.prefill(q, k, v, batch.cu_seqlens)
        else:
            extra = {} if batch.plan is None else {"plan": batch.plan}
            out = batch.backend.decode(q, batch.cache, self.layer_id, batch.block_table, batch.seq_lens, **extra)
        assert out.shape == (T, H, D), f"attention backend returned {tuple(out.shape)}, expected {(T, H, D)}"
        return self.wo(out.reshape(T, H * D))


class FeedForward(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.hidden = config.intermediate_size
        self.w13 = nn.Linear(config.dim, 2 * config.intermediate_size, bias=False)  # gate, up fused
        self.w2 = nn.Linear(config.intermediate_size, config.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.w13(x).split(self.hidden, dim=-1)
        return self.w2(F.silu(gate) * up)


class TransformerBlock(nn.Module):
    def __init__(self, config: ModelConfig, layer_id: int):
        super().__init__()
        self.attention = Attention(config, layer_id)
        self.feed_forward = FeedForward(config)
        self.attention_norm = RMSNorm(config.dim, config.norm_eps)
        self.ffn_norm = RMSNorm(config.dim, config.norm_eps)

    def forward(self, x, cos, sin, batch: AttentionBatch) -> torch.Tensor:
        h = x + self.attention(self.attention_norm(x), cos, sin, batch)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.tok_embeddings = nn.Embedding(config.vocab_size, config.dim)
        self.layers = nn.ModuleList(TransformerBlock(config, i) for i in range(config.n_layers))
        self.norm = RMSNorm(config.dim, config.norm_eps)
        self.output = None if config.tie_embeddings else nn.Linear(config.dim, config.vocab_size, bias=False)
        self.head: nn.Module | None = None   # optional optimized projection (see pack_linears)
        self.native_layers: list | None = None  # set by optimize_for_cpu: kernels.cpu.decode_layer weights
        cos, sin = rope_tables(config, torch.float32)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)

    def to_dtype(self, dtype: torch.dtype) -> "Transformer":
        self.to(dtype)
        cos, sin = rope_tables(self.config, torch.float32)
        self.rope_cos, self.rope_sin = cos.to(dtype), sin.to(dtype)
        return self

    @property
    def head_weight(self) -> torch.Tensor:
        return self.tok_embeddings.weight if self.output is None else self.output.weight

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor, batch: AttentionBatch,
                output_indices: torch.Tensor | None = None) -> torch.Tensor:
        """tokens, positions: (T,) -> final-normed hidden states (len(output_indices) or T, dim).
        Logits come from `logits()`, so callers project only the rows they need."""
        assert tokens.dim() == 1 and tokens.shape == positions.shape, "tokens and positions must be (T,)"
        if batch.mode == "decode" and batch.plan is None and hasattr(batch.backend, "plan_decode"):
            # Block tables, lengths and masks laid out once per step, not once per layer.
            batch.plan = batch.backend.plan_decode(batch.cache, batch.block_table, batch.seq_lens)
        x = self.tok_embeddings(tokens)                              # (T, dim)
        cos = self.rope_cos[positions].unsqueeze(1)                  # (T, 1, D)
        sin = self.rope_sin[positions].unsqueeze(1)
        cache = batch.cache
        if self.native_layers and isinstance(batch.plan, kernels_cpu.DecodeLayout) and x.dtype == torch.bfloat16 \
                and (cache.k.dtype == torch.bfloat16 or (cache.is_fp8 and all(cache.calibrated))):
            # A bf16 decode step on a bf16 or fp8 cache (fp8: its scales fixed, as the engine
            # calibrates at start): each layer is one kernels.cpu call (see optimize_for_cpu).
            T, c = x.shape[0], self.config
            scratch = kernels_cpu.decode_layer_scratch(T, c.dim, c.n_heads, c.n_kv_heads, c.head_dim,
                                                      c.intermediate_size)
            cos, sin = cos.view(T, -1).contiguous(), sin.view(T, -1).contiguous()
            slots = batch.slots.to(torch.int64).contiguous()
            x = x.contiguous()
            for weights in self.native_layers:
                kernels_cpu.decode_layer(x, weights, cos, sin, slots, batch.cache, batch.plan, scratch)
        else:
            for layer in self.layers:
                x = layer(x, cos, sin, batch)
        if output_indices is not None:
            x = x[output_indices]
        return self.norm(x)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """(N, dim) final hidden -> (N, vocab) float32 logits."""
        head = self.head if self.head is not None else (lambda h: F.linear(h, self.head_weight))
        return head(hidden).float()

    def load_gguf_state(self, state: dict[str, torch.Tensor]) -> None:
        expected = set(self.state_dict())
        missing = expected - set(state)
        unexpected = set(state) - expected
        if missing or unexpected:
            raise ValueError(f"checkpoint does not fit the model: missing {sorted(missing)[:5]}, "
                             f"unexpected {sorted(unexpected)[:5]}")
        with torch.no_grad():
            for name, param in self.named_parameters():
                src = state[name]
                if src.shape != param.shape:
                    raise ValueError(f"{name}: checkpoint shape {tuple(src.shape)} != model {tuple(param.shape)}")
                param.copy_(src)


class NativeLinear(nn.Module):
    """A bias-free linear layer (bf16 or float32 weights) computed by kernels.cpu.linear: weights
    packed once (or a kernels.cpu.PackedWeight shared with decode_layer), float32 math in a fixed
    order per output element, so batch invariant at any row count."""

    def __init__(self, weight: "torch.Tensor | kernels_cpu.PackedWeight", *, out_dtype: torch.dtype | None = None):
        super().__init__()
        self.weight_packed = weight if isinstance(weight, kernels_cpu.PackedWeight) else kernels_cpu.PackedWeight(weight)
        self.out_dtype = out_dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        out = kernels_cpu.linear(x.reshape(-1, shape[-1]).contiguous(), self.weight_packed, out_dtype=self.out_dtype)
        return out.view(*shape[:-1], out.shape[-1])


class NativeFeedForward(nn.Module):
    """FeedForward on kernels.cpu: silu(gate) * up fused into the gate/up projection's epilogue
    (float32, one rounding), as decode_layer computes it."""

    def __init__(self, w13: "kernels_cpu.PackedWeight", w2: "kernels_cpu.PackedWeight"):
        super().__init__()
        self.w13, self.w2 = NativeLinear(w13), NativeLinear(w2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(self.w13(x))


class PackedLinear(nn.Module):
    """A bias-free linear layer whose weight is pre-packed once for oneDNN: about 2x faster than
    F.linear for the skinny matrices of decoding in bf16. Same math, same weights.

    Batch invariant: a row's result does not depend on the other rows of the call (needed for
    "the same seed gives the same text whatever the batch"). oneDNN sums a lone row in another
    order than rows of a larger batch (and MKL's fp32 F.linear changes order with the row
    count), so a single row is computed as a batch of two."""

    def __init__(self, weight: torch.Tensor):
        super().__init__()
        self.out_features = weight.shape[0]
        self.packed = torch.ops.mkldnn._reorder_linear_weight(weight.detach(), 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        rows = x.reshape(-1, shape[-1])
        single = rows.shape[0] == 1
        if single:
            rows = torch.cat([rows, rows])
        out = torch.ops.mkldnn._linear_pointwise(rows, self.packed, None, "none", [], "")
        if single:
            out = out[:1]
        return out.view(*shape[:-1], self.out_features)


def can_pack_linears(device: torch.device, dtype: torch.dtype) -> bool:
    return (device.type == "cpu" and dtype in (torch.bfloat16, torch.float32) and torch.backends.mkldnn.is_available()
            and hasattr(torch.ops.mkldnn, "_reorder_linear_weight"))


def pack_linears(model: Transformer) -> Transformer:
    """Swap every nn.Linear (and the tied head) for a PackedLinear. Called by the engine at load
    time on the CPU (bf16 and fp32), so the model itself stays plain."""
    model.head = PackedLinear(model.head_weight)
    for module in list(model.layers.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, nn.Linear):
                setattr(module, name, PackedLinear(child.weight))
    return model


def can_use_native(device: torch.device, dtype: torch.dtype) -> bool:
    """kernels.cpu serves bf16 models on the CPU whenever it could be built, and fp32 models where
    it has a vector path (its plain C loop is slower than oneDNN's fp32 GEMM)."""
    if device.type != "cpu" or not kernels_cpu.available():
        return False
    return dtype == torch.bfloat16 or (dtype == torch.float32 and kernels_cpu.simd_lanes() > 0)


def optimize_for_cpu(model: Transformer) -> Transformer:
    """bf16 on the CPU, every projection on kernels.cpu. A decode step (dense or sparse, bf16 or
    calibrated fp8 cache) runs each layer as one kernels.cpu.decode_layer call; prefill and the
    other decode paths (teacher forcing, Triton kernels) run the per-op modules, whose linears are NativeLinears on
    the same packed weights (one copy of the weights in memory). Each path is batch invariant on
    its own, and which one runs depends only on the step's kind and kernel settings, never on the
    batch. The head is a NativeLinear too (prefill and decode project their rows with the same code).

    fp32: the same NativeLinears on float32 packed weights (on a Zen 3, oneDNN's packed fp32 GEMM
    made decode 2x slower at a few rows; prefill about even), and no decode_layer (it is bf16
    only): every step runs the per-op modules."""
    if model.head_weight.dtype == torch.float32:
        f32 = dict(dtype=torch.float32)
        for b in model.layers:
            b.attention.wqkv = NativeLinear(kernels_cpu.PackedWeight(b.attention.wqkv.weight, **f32))
            b.attention.wo = NativeLinear(kernels_cpu.PackedWeight(b.attention.wo.weight, **f32))
            b.feed_forward = NativeFeedForward(kernels_cpu.PackedWeight(b.feed_forward.w13.weight, silu_half=True, **f32),
                                               kernels_cpu.PackedWeight(b.feed_forward.w2.weight, **f32))
        model.head = NativeLinear(kernels_cpu.PackedWeight(model.head_weight, **f32), out_dtype=torch.float32)
        return model
    c = model.config
    model.native_layers = [
        kernels_cpu.LayerWeights(
            wqkv=b.attention.wqkv.weight, wo=b.attention.wo.weight, w13=b.feed_forward.w13.weight,
            w2=b.feed_forward.w2.weight, attention_norm=b.attention_norm.weight, ffn_norm=b.ffn_norm.weight,
            eps=b.attention_norm.eps, n_heads=c.n_heads, n_kv_heads=c.n_kv_heads, head_dim=c.head_dim, layer=i)
        for i, b in enumerate(model.layers)
    ]
    for b, w in zip(model.layers, model.native_layers):
        b.attention.wqkv, b.attention.wo = NativeLinear(w.wqkv), NativeLinear(w.wo)
        b.feed_forward = NativeFeedForward(w.w13, w.w2)
    model.head = NativeLinear(model.head_weight, out_dtype=torch.float32)
    return model
