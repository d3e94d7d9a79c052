"""Studies: measurements that need the whole engine (a loaded model, its caches and kernels),
run as commands that print tables, e.g. `python -m studies.kv_formats`.

They sit above `inference` and `kernels` and may import both; nothing imports them
(docs/architecture.md, "Layout"; tests/test_import_direction.py checks it).
"""
