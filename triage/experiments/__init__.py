"""Experiments: a transcript regenerated under several kernel settings (arms), paired seeds,
then statistics and a diagnosis (kernel, sampling, or model/prompt).

- ``arms``: planning the arms (defaults, explicit, ablation).
- ``services``: the writes: start, run a chunk, record samples, finalize, cancel, sweep.
- ``selectors``: the reads (list, detail, export).
- ``analysis``: statistics, teacher-forced divergence, diagnosis.
- ``external``: teacher-forced scoring on external OpenAI-compatible servers.

The transcript writes they build on (the degeneration verdict of a sample, flags moving
forward) are in triage.services.
"""
