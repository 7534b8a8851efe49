"""GIN indexes for the runs filters ?tool_name= and ?failed_tool= (JSON containment on the
tool name arrays). PostgreSQL only: SQLite has no GIN, and its lists are small."""

from django.db import migrations

INDEXES = (
    ("run_tool_names_gin", "tool_names"),
    ("run_failed_tools_gin", "failed_tool_names"),
)


def _create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, column in INDEXES:
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON activity_run USING gin ({column} jsonb_path_ops)"
        )


def _drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, _column in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("activity", "0006_run_steps_and_spans")]

    operations = [migrations.RunPython(_create, _drop)]
