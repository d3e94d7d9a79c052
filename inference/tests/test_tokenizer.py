"""Tokenizer and chat template against Hugging Face transformers loading the same GGUF."""

from __future__ import annotations

import random

import pytest

from inference.chat_template import ChatTemplateError
from inference.tokenizer import IncrementalDetokenizer

TEXTS = [
    "Hello world",
    "12345 + 678 = 99999, and 3.14159 * 2e10",
    "Phone: +1 (555) 010-9999; year 2024; 1st 2nd 3rd",
    "naïve café, 日本語のテキスト, Ελληνικά, русский текст, 😀🎉 emoji",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\n\n# done\n",
    '<!DOCTYPE html>\n<html>\n  <body>\n    <div class="x">&nbsp;</div></div></div>\n  </body>\n</html>',
    "   leading spaces\ttabs\r\nwindows lines\n\n\n   ",
    "I'm sure you're right; they'll say we've done what I'd've done.",
    "function f(){return a&&b||c?d:e;} // JS\nconst x = `tmpl ${y}`;",
    "",
    "<|endoftext|><repo_name>x<file_sep>",
]


def _random_text(seed: int, n: int = 400) -> str:
    rng = random.Random(seed)
    # Digits never follow whitespace here: that is where transformers' GGUF tokenizer (no
    # `smollm` digit pass) and llama.cpp / the original tokenizer.json differ; see the test below.
    pieces = ["the", " ", "\n", "v42", "#007", "ü", "—", "{", "}", "<div>", "</div>", "  ", "\t", "λ", "字", "🙂",
              "don't", "HTTP/1.1", "v3.0", "x=1;", "'", '"', "<|im_end|>", "ab", "Z", "\r\n"]
    return "".join(rng.choice(pieces) for _ in range(n))


@pytest.mark.parametrize("text", TEXTS + [_random_text(s) for s in range(3)])
def test_token_ids_match_transformers(engine, hf_tokenizer, text):
    ours = engine.tokenizer.encode(text)
    assert ours == hf_tokenizer.encode(text, add_special_tokens=False)
    assert engine.tokenizer.decode(ours, skip_special_tokens=False) == text


@pytest.mark.parametrize("text,pieces", [
    ("a  42", ["a", "  ", "4", "2"]),
    ("\t\t7", ["\t\t", "7"]),
    ("x ١٢", ["x", " ", "١", "٢"]),
])
def test_smollm_pretokenizer_isolates_numbers_first_like_llama_cpp(engine, text, pieces):
    """`tokenizer.ggml.pre = smollm`: llama.cpp (and SmolLM2's own tokenizer.json: Digits then
    ByteLevel) isolate every \\p{N} code point before the GPT-2 split, so a whitespace run before a
    number stays one piece. transformers (5.x) builds GGUF tokenizers with the GPT-2 split alone
    and splits such runs differently; we follow llama.cpp, the format's reference."""
    tok = engine.tokenizer
    split = tok.backend.pre_tokenizer.pre_tokenize_str(text)
    assert [text[a:b] for _, (a, b) in split] == pieces
    assert tok.decode(tok.encode(text)) == text


def test_digits_are_split_individually(engine):
    tok = engine.tokenizer
    ids = tok.encode("1234567890")
    assert [tok.token_str(i) for i in ids] == list("1234567890")


def test_control_tokens_are_single_special_tokens(engine):
    tok = engine.tokenizer
    assert tok.encode("<|im_start|>") == [1]
    assert tok.encode("<|im_end|>") == [2]
    assert tok.eos_token_ids == (2,)
    assert tok.decode([1, 28120, 2]) == tok.decode([28120])  # specials skipped by default


@pytest.mark.parametrize("messages", [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "2+2?"},
     {"role": "assistant", "content": "4"}, {"role": "user", "content": "And 3+3? 😀"}],
])
def test_chat_template_matches_transformers(engine, hf_tokenizer, messages):
    expected = hf_tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    if isinstance(expected, dict) or hasattr(expected, "input_ids"):
        expected = expected["input_ids"]
    assert engine.apply_chat_template(messages) == list(expected)
    text = engine.chat_template.render(messages)
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>assistant\n")


def test_chat_template_rejects_bad_messages(engine):
    with pytest.raises(ChatTemplateError, match="role"):
        engine.apply_chat_template([{"role": "wizard", "content": "x"}])
    with pytest.raises(ChatTemplateError, match="non-empty"):
        engine.apply_chat_template([])
    with pytest.raises(ChatTemplateError, match="content"):
        engine.apply_chat_template([{"role": "user", "content": None}])


def test_incremental_detokenizer_equals_full_decode(engine):
    tok = engine.tokenizer
    text = "Ünïcödé 日本語 😀🎉 and\nnew lines <b>bold</b> 12345 " * 3
    ids = tok.encode(text)
    detok = IncrementalDetokenizer(tok)
    pieces = [detok.add(i) for i in ids]
    assert "".join(pieces) + detok.flush() == text
    assert all("\ufffd" not in p for p in pieces)  # never half a character
