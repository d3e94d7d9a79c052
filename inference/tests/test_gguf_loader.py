"""GGUF loading: name table, Q/K un-permutation, fusion, tied head, quant types, errors."""

from __future__ import annotations

import gguf
import numpy as np
import pytest
import torch

from inference.config import ModelConfig
from inference.gguf_loader import UnsupportedGGUFError, load_gguf, unpermute_qk
from inference.model import Transformer

Q = gguf.GGMLQuantizationType
DIM, N_HEADS, N_KV, FF, VOCAB, LAYERS = 64, 4, 2, 96, 128, 2
HEAD = DIM // N_HEADS


def llama_cpp_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """What llama.cpp's convert_hf_to_gguf.py does to HF q_proj/k_proj rows."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_tiny_gguf(path, *, qtype=Q.Q8_0, with_output=False, extra_tensor=None, seed=0):
    """A 2-layer llama with random HF-order weights; returns them by module name."""
    rng = np.random.default_rng(seed)
    hf = {"token_embd.weight": rng.standard_normal((VOCAB, DIM), dtype=np.float32),
          "output_norm.weight": rng.standard_normal(DIM, dtype=np.float32)}
    if with_output:
        hf["output.weight"] = rng.standard_normal((VOCAB, DIM), dtype=np.float32)
    for i in range(LAYERS):
        hf |= {
            f"blk.{i}.attn_norm.weight": rng.standard_normal(DIM, dtype=np.float32),
            f"blk.{i}.ffn_norm.weight": rng.standard_normal(DIM, dtype=np.float32),
            f"blk.{i}.attn_q.weight": rng.standard_normal((DIM, DIM), dtype=np.float32),
            f"blk.{i}.attn_k.weight": rng.standard_normal((N_KV * HEAD, DIM), dtype=np.float32),
            f"blk.{i}.attn_v.weight": rng.standard_normal((N_KV * HEAD, DIM), dtype=np.float32),
            f"blk.{i}.attn_output.weight": rng.standard_normal((DIM, DIM), dtype=np.float32),
            f"blk.{i}.ffn_gate.weight": rng.standard_normal((FF, DIM), dtype=np.float32),
            f"blk.{i}.ffn_up.weight": rng.standard_normal((FF, DIM), dtype=np.float32),
            f"blk.{i}.ffn_down.weight": rng.standard_normal((DIM, FF), dtype=np.float32),
        }
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(LAYERS)
    w.add_context_length(256)
    w.add_embedding_length(DIM)
    w.add_feed_forward_length(FF)
    w.add_head_count(N_HEADS)
    w.add_head_count_kv(N_KV)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    for name, array in hf.items():
        stored = array
        if name.endswith("attn_q.weight"):
            stored = llama_cpp_permute(array, N_HEADS)
        elif name.endswith("attn_k.weight"):
            stored = llama_cpp_permute(array, N_KV)
        if stored.ndim == 1 or qtype in (Q.F32,):
            w.add_tensor(name, np.ascontiguousarray(stored))
        elif qtype == Q.F16:
            w.add_tensor(name, np.ascontiguousarray(stored).astype(np.float16))
        else:
            w.add_tensor(name, gguf.quants.quantize(np.ascontiguousarray(stored), qtype), raw_dtype=qtype)
    if extra_tensor is not None:
        name, data, raw = extra_tensor
        w.add_tensor(name, data, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return hf


@pytest.mark.parametrize("qtype,tol", [(Q.F32, 0.0), (Q.F16, 2e-3), (Q.Q8_0, 0.05), (Q.Q4_1, 0.6)],
                         ids=["F32", "F16", "Q8_0", "Q4_1"])
def test_tensors_are_mapped_unpermuted_and_fused(tmp_path, qtype, tol):
    path = tmp_path / "tiny.gguf"
    hf = write_tiny_gguf(path, qtype=qtype)
    loaded = load_gguf(path)
    sd = loaded.state_dict
    wqkv = sd["layers.1.attention.wqkv.weight"]
    assert wqkv.shape == (DIM + 2 * N_KV * HEAD, DIM)
    expected = np.concatenate([hf["blk.1.attn_q.weight"], hf["blk.1.attn_k.weight"], hf["blk.1.attn_v.weight"]])
    # Un-permuted rows land where HF has them: the error is quantization noise, not a row shuffle.
    assert np.abs(wqkv.numpy() - expected).max() <= tol + 1e-7
    w13 = sd["layers.0.feed_forward.w13.weight"].numpy()
    assert np.abs(w13 - np.concatenate([hf["blk.0.ffn_gate.weight"], hf["blk.0.ffn_up.weight"]])).max() <= tol + 1e-7
    assert torch.equal(sd["norm.weight"], torch.from_numpy(hf["output_norm.weight"]))
    assert "output.weight" not in sd  # tied
    config = ModelConfig.from_gguf(loaded.metadata, vocab_size=VOCAB, tie_embeddings=True)
    model = Transformer(config)
    model.load_gguf_state(sd)
    assert model.output is None and model.head_weight is model.tok_embeddings.weight


def test_separate_output_head_is_kept(tmp_path):
    path = tmp_path / "tiny.gguf"
    hf = write_tiny_gguf(path, qtype=Q.F32, with_output=True)
    sd = load_gguf(path).state_dict
    assert torch.equal(sd["output.weight"], torch.from_numpy(hf["output.weight"]))


def test_unpermute_inverts_llama_cpp_permute():
    w = np.arange(8 * 64 * 3, dtype=np.float32).reshape(8 * 64, 3)
    assert np.array_equal(unpermute_qk(llama_cpp_permute(w, 8), 8), w)
    assert not np.array_equal(llama_cpp_permute(w, 8), w)


def test_unsupported_quant_type_is_named(tmp_path):
    path = tmp_path / "iq.gguf"
    block_bytes = gguf.GGML_QUANT_SIZES[Q.IQ2_XXS][1]
    write_tiny_gguf(path, qtype=Q.F32,
                    extra_tensor=("blk.0.extra.weight", np.zeros((2, block_bytes), dtype=np.uint8), Q.IQ2_XXS))
    with pytest.raises(UnsupportedGGUFError, match=r"IQ2_XXS.*blk\.0\.extra\.weight.*supported: F32"):
        load_gguf(path)


def test_unknown_tensor_name_is_an_error(tmp_path):
    path = tmp_path / "odd.gguf"
    write_tiny_gguf(path, qtype=Q.F32, extra_tensor=("blk.0.mystery.weight", np.zeros(4, dtype=np.float32), None))
    with pytest.raises(UnsupportedGGUFError, match="mystery"):
        load_gguf(path)


def test_missing_file_and_not_gguf(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_gguf(tmp_path / "nope.gguf")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all")
    with pytest.raises(UnsupportedGGUFError, match="not a readable GGUF"):
        load_gguf(bad)


@pytest.mark.slow  # (reads the real GGUF)
def test_default_model_config(model_path):
    loaded = load_gguf(model_path)
    c = ModelConfig.from_gguf(loaded.metadata, vocab_size=loaded.state_dict["tok_embeddings.weight"].shape[0])
    assert (c.n_layers, c.dim, c.n_heads, c.n_kv_heads, c.head_dim) == (30, 576, 9, 3, 64)
    assert (c.rope_base, c.max_seq_len, c.vocab_size, c.eos_token_ids) == (100000.0, 8192, 49152, (2,))
    assert loaded.tensor_types["token_embd.weight"] == "Q8_0"
    assert "output.weight" not in loaded.state_dict
