"""Attention implementations: dense (prefill and paged decode, the reference), sparse decode
over indexer-selected pages in torch (reference.py) and Triton (triton.py, imported lazily)."""
