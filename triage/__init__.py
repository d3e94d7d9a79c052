"""Transcript triage: the Django project and app.

Kept import-free so that `triage.degeneration` (pure Python) can be used from the inference
backend and the shell without loading Django or Celery; the Celery app is loaded by
`TriageConfig.ready()`.
"""
