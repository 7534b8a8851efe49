"""Count the runs recorded so far in the Overview's rollup groups (apps.activity.overview_rollup)
and their credits in the run groups: one set-based statement per group over the runs, on
PostgreSQL (about 2 s per 100,000 runs); row by row on the SQLite embedded default."""

from django.db import migrations


def backfill(apps, schema_editor):
    from apps.activity.analytics import rollup_rebuild
    from apps.activity.rollup_rebuild import rollup_rebuild_sql

    agent_ids = list(apps.get_model("workspaces", "Agent").objects.values_list("pk", flat=True))
    for start in range(0, len(agent_ids), 100):
        batch = agent_ids[start : start + 100]
        if schema_editor.connection.vendor == "postgresql":
            rollup_rebuild_sql(batch, steps=False)
        else:
            for agent_id in batch:
                rollup_rebuild(agent_id=agent_id)


class Migration(migrations.Migration):
    dependencies = [("activity", "0015_rollup_credits")]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
