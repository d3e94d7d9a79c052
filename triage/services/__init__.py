"""Writes (the reads are in triage.selectors), one module per concept; import from the module:

- ``ingest``: router payloads validated and stored, idempotently (transcript_ingest_batch,
  transcript_ingest; load_demo's transcripts_spread_received).
- ``metrics``: the degeneration verdict stored with a transcript or a sample (transcript_metrics).
- ``flags``: flags and their status (flag_create, flags_create_bulk, flag_update_status,
  flags_advance).
- ``keys``: API keys and the demo user (api_key_create, api_key_revoke, demo_user_ensure).

Experiments keep their writes beside their planning, analysis and reads, in
triage.experiments.services (experiment_start, chunk_run, experiment_finalize, …).

Nothing is re-exported here on purpose: a test that patches a function patches it in the
module that looks it up.
"""
