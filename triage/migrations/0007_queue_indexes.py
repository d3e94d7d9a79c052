"""Indexes for the triage queue (numbers: README, bench_queue): severity order (keyset pages
on (severity, id)); and on PostgreSQL
- a GIN index on reasons (jsonb_path_ops) for the reason filter (`reasons @> [{"code": …}]`),
  which otherwise reads every candidate row's reasons;
- a trigram index for the text search (`response__icontains`, which Django writes as
  UPPER(response) LIKE UPPER('%…%')), so a search that matches little does not read every
  response. pg_trgm is a trusted extension (PostgreSQL ≥ 13): the database owner may create it."""

import warnings

from django.db import DatabaseError, migrations, models, transaction

POSTGRESQL_INDEXES = {
    "transcript_reasons_gin": "gin (reasons jsonb_path_ops)",
    "transcript_response_trgm": "gin (UPPER(response) gin_trgm_ops)",
}


def create_postgresql_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    indexes = dict(POSTGRESQL_INDEXES)
    try:  # (a savepoint: a role that may not create the extension leaves the migration intact)
        with transaction.atomic(using=schema_editor.connection.alias):
            schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DatabaseError as exc:
        del indexes["transcript_response_trgm"]
        warnings.warn(f"pg_trgm is not available ({exc}); the queue's text search runs without its index "
                      f"(slow on large tables). A superuser can run CREATE EXTENSION pg_trgm and re-run "
                      f"this migration.", stacklevel=1)
    for name, definition in indexes.items():
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON triage_transcript USING {definition}")


def drop_postgresql_indexes(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for name in POSTGRESQL_INDEXES:
            schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("triage", "0006_backend_default_system_prompt")]

    operations = [
        migrations.AddIndex(
            model_name="transcript",
            index=models.Index(fields=["-severity", "-id"], name="transcript_severity"),
        ),
        migrations.AddIndex(
            model_name="transcript",
            index=models.Index(fields=["degenerate", "-severity", "-id"], name="transcript_degenerate_severity"),
        ),
        migrations.RunPython(create_postgresql_indexes, drop_postgresql_indexes),
    ]
