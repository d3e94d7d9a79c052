"""Indexes for the triage queue (numbers: README, bench_queue): severity order (keyset pages
on (severity, id)); and on PostgreSQL
- a GIN index on reasons (jsonb_path_ops) for the reason filter (`reasons @> [{"code": …}]`),
  which otherwise reads every candidate row's reasons;
- a trigram index for the text search (`response__icontains`, which Django writes as
  UPPER(response) LIKE UPPER('%…%')), so a search that matches little does not read every
  response. pg_trgm is a trusted extension (PostgreSQL ≥ 13): the database owner may create it."""

from django.db import migrations, models

POSTGRESQL_INDEXES = {
    "transcript_reasons_gin": "gin (reasons jsonb_path_ops)",
    "transcript_response_trgm": "gin (UPPER(response) gin_trgm_ops)",
}


def create_postgresql_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, definition in POSTGRESQL_INDEXES.items():
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
