"""Page indexer: Quest-bound page scoring and top-k page selection, in torch (reference.py)
and Triton (triton.py, imported lazily)."""
