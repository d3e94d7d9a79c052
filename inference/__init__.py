"""The bundled inference backend: GGUF loading, tokenizer, chat template, Llama model, paged-KV
engine with continuous batching, server, benchmark and demo data. `python -m inference --help`."""
