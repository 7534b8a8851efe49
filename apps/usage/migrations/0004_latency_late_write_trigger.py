"""The trigger that keeps the coarser latency tier honest (apps.usage.models.LatencyMonth).

Every statement that inserts, updates or deletes usage_dailylatency rows of a day two or more
days before the write (by the clock at the write, `clock_timestamp()`) adds one to the version
of that workspace and month, creating the row when missing. Recording today's and yesterday's
runs never reaches it: those rows are not in a sealed month (usage.seal_months seals a month
only two days after it closed). PostgreSQL only: on SQLite no tier is built or read.
"""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION usage_latency_late_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO usage_latencymonth (workspace_id, month, version)
    SELECT DISTINCT workspace_id, date_trunc('month', day)::date, 1 FROM changed
    WHERE day < (clock_timestamp() AT TIME ZONE 'UTC')::date - 1
    ORDER BY 1, 2
    ON CONFLICT (workspace_id, month)
    DO UPDATE SET version = usage_latencymonth.version + 1;
    RETURN NULL;
END
$$;
"""
TRIGGERS = {
    "usage_latency_late_insert": "AFTER INSERT ON usage_dailylatency REFERENCING NEW TABLE",
    "usage_latency_late_update": "AFTER UPDATE ON usage_dailylatency REFERENCING NEW TABLE",
    "usage_latency_late_delete": "AFTER DELETE ON usage_dailylatency REFERENCING OLD TABLE",
}


def _create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(FUNCTION)
    for name, event in TRIGGERS.items():
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name} ON usage_dailylatency")
        schema_editor.execute(
            f"CREATE TRIGGER {name} {event} AS changed FOR EACH STATEMENT "
            "EXECUTE FUNCTION usage_latency_late_change()"
        )


def _drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in TRIGGERS:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name} ON usage_dailylatency")
    schema_editor.execute("DROP FUNCTION IF EXISTS usage_latency_late_change()")


class Migration(migrations.Migration):
    dependencies = [("usage", "0003_latency_tiers")]

    operations = [migrations.RunPython(_create, _drop)]
