"""The knowledge documents a run's retrieval steps returned (`Run.document_ids`, kept by
recording), and a GIN index for ?document_id= on the runs lists (PostgreSQL only, like 0007)."""

from django.db import migrations, models


def _create_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "CREATE INDEX IF NOT EXISTS run_document_ids_gin ON activity_run "
            "USING gin (document_ids jsonb_path_ops)"
        )


def _drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS run_document_ids_gin")


class Migration(migrations.Migration):
    dependencies = [("activity", "0007_run_tool_gin_indexes")]

    operations = [
        migrations.AddField(
            model_name="run",
            name="document_ids",
            # A database default too: rows inserted in SQL (tests, benchmarks) get [].
            field=models.JSONField(default=list, db_default=models.Value([], models.JSONField())),
        ),
        migrations.RunPython(_create_index, _drop_index),
    ]
