"""Tokenizer built with `tokenizers` from the vocabulary and merges stored in a GGUF file.

Byte-level BPE (`tokenizer.ggml.model == "gpt2"`): the pre-tokenizer follows
`tokenizer.ggml.pre` (SmolLM: each digit on its own, then GPT-2's byte-level split); tokens the
file marks CONTROL become special tokens and USER_DEFINED ones plain added tokens, so chat
markup such as `<|im_start|>` stays one token.
"""

from __future__ import annotations

from typing import Any, Sequence

from tokenizers import AddedToken, Regex, decoders, models, pre_tokenizers
from tokenizers import Tokenizer as HFTokenizer

TOKEN_TYPE_CONTROL = 3
TOKEN_TYPE_USER_DEFINED = 4

_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def _byte_level(use_regex: bool = True):
    return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=use_regex)


# `tokenizer.ggml.pre` -> pre-tokenizer factory (how the vocabulary's merges were learned).
PRE_TOKENIZERS = {
    "smollm": lambda: pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), _byte_level()]),
    "gpt2": _byte_level,
    "default": _byte_level,
    "llama3": lambda: pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(_LLAMA3_SPLIT), behavior="isolated"), _byte_level(use_regex=False)]
    ),
    "llama-bpe": lambda: PRE_TOKENIZERS["llama3"](),
}


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's printable spelling of the 256 byte values."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class Tokenizer:
    """encode/decode plus the special ids the engine needs."""

    def __init__(self, backend: HFTokenizer, *, bos_token_id: int | None, eos_token_ids: Sequence[int],
                 add_bos: bool = False, special_ids: Sequence[int] = ()):
        self.backend = backend
        self.bos_token_id = bos_token_id
        self.eos_token_ids = tuple(eos_token_ids)
        self.eos_token_id = self.eos_token_ids[0] if self.eos_token_ids else None
        self.add_bos = add_bos
        self.special_ids = frozenset(special_ids)
        self.vocab_size = backend.get_vocab_size(with_added_tokens=True)
        self._id_to_token = [backend.id_to_token(i) for i in range(self.vocab_size)]

    @classmethod
    def from_gguf_metadata(cls, metadata: dict[str, Any]) -> "Tokenizer":
        kind = metadata.get("tokenizer.ggml.model")
        if kind != "gpt2":
            raise ValueError(f"tokenizer model {kind!r} is not supported (only byte-level BPE, 'gpt2')")
        tokens: list[str] = list(metadata["tokenizer.ggml.tokens"])
        token_types = list(metadata.get("tokenizer.ggml.token_type") or [1] * len(tokens))
        merges = [tuple(m.split(" ", 1)) for m in metadata.get("tokenizer.ggml.merges") or []]
        alphabet = set(_bytes_to_unicode().values())
        spelling = _bytes_to_unicode()
        # Control/user tokens are stored as plain text; every other token is byte-spelled already.
        vocab = {}
        for i, tok in enumerate(tokens):
            if not set(tok) <= alphabet:
                tok = "".join(spelling[b] for b in tok.encode("utf-8"))
            vocab.setdefault(tok, i)
        bpe = models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False)
        backend = HFTokenizer(bpe)
        pre = metadata.get("tokenizer.ggml.pre", "default")
        backend.pre_tokenizer = PRE_TOKENIZERS.get(pre, _byte_level)()
        backend.decoder = decoders.ByteLevel()
        special = [
            AddedToken(tok, special=True, normalized=False)
            for tok, ty in zip(tokens, token_types)
            if ty == TOKEN_TYPE_CONTROL and set(tok) <= alphabet
        ]
        backend.add_special_tokens(special)
        user = [AddedToken(tok, special=False, normalized=False)
                for tok, ty in zip(tokens, token_types) if ty == TOKEN_TYPE_USER_DEFINED]
        if user:
            backend.add_tokens(user)
        eos = [metadata.get("tokenizer.ggml.eos_token_id"), metadata.get("tokenizer.ggml.eot_token_id")]
        return cls(
            backend,
            bos_token_id=metadata.get("tokenizer.ggml.bos_token_id"),
            eos_token_ids=[int(e) for e in dict.fromkeys(eos) if e is not None],
            add_bos=bool(metadata.get("tokenizer.ggml.add_bos_token", False)),
            special_ids=[i for i, ty in enumerate(token_types) if ty == TOKEN_TYPE_CONTROL],
        )

    def encode(self, text: str, *, add_bos: bool | None = None) -> list[int]:
        """Token ids; special-token markup in `text` (e.g. `<|im_start|>`) becomes its single id."""
        ids = self.backend.encode(text, add_special_tokens=False).ids
        if (self.add_bos if add_bos is None else add_bos) and self.bos_token_id is not None:
            ids = [self.bos_token_id, *ids]
        return ids

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = True) -> str:
        return self.backend.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def token_str(self, token_id: int) -> str:
        """A token's text (byte-level spelling undone; may be a partial UTF-8 character)."""
        return self.backend.decode([token_id], skip_special_tokens=False)

    def token_to_id(self, token: str) -> int | None:
        return self.backend.token_to_id(token)


class IncrementalDetokenizer:
    """Turns a growing list of token ids into text deltas without re-decoding everything each
    step, and without emitting half of a multi-byte character (vLLM's prefix/read offsets)."""

    def __init__(self, tokenizer: Tokenizer):
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.prefix_offset = 0
        self.read_offset = 0

    def add(self, token_id: int) -> str:
        self.ids.append(token_id)
        if token_id in self.tokenizer.special_ids:
            return ""
        decode = self.tokenizer.decode
        prefix = decode(self.ids[self.prefix_offset:self.read_offset])
        full = decode(self.ids[self.prefix_offset:])
        if len(full) > len(prefix) and not full.endswith("\ufffd"):
            self.prefix_offset, self.read_offset = self.read_offset, len(self.ids)
            return full[len(prefix):]
        return ""

    def flush(self) -> str:
        """Whatever complete text is still held back, at the end of the sequence. The bytes of a
        character cut off by the end (e.g. max_tokens in the middle of an emoji) are dropped:
        they would decode to a trailing U+FFFD replacement character."""
        decode = self.tokenizer.decode
        prefix = decode(self.ids[self.prefix_offset:self.read_offset])
        full = decode(self.ids[self.prefix_offset:])
        self.prefix_offset = self.read_offset = len(self.ids)
        return full[len(prefix):].rstrip("\ufffd")
