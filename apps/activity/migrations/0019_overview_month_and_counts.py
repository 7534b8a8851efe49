"""Count the runs recorded so far in the Overview's month tier of end users (`ov_user_m`) and the
rows of end users and conversations per day (`ov_count`), apps.activity.overview_rollup: the
run groups rebuilt set-based from the runs on PostgreSQL (about 2 s per 100,000 runs), row by
row on the SQLite embedded default."""

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
    dependencies = [("activity", "0018_search_config_db_default")]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
