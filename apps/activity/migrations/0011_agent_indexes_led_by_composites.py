"""The activity tables' indexes on the Agent alone go (apps.activity.models.agent_field).

Only the indexes are dropped: Django's own AlterField would also drop and re-add each foreign
key, which re-checks every row of the table under a lock (minutes at ten million runs)."""

import django.db.models.deletion
from django.db import migrations, models

# Django's names for them (the `_like` twin, for LIKE on a varchar, exists on PostgreSQL only).
_DROPPED = (
    "activity_conversation_agent_id_b19e34e0",
    "activity_enduser_agent_id_b18e26d8",
    "activity_message_agent_id_aad4476a",
    "activity_pendingspan_agent_id_4c68b49a",
    "activity_run_agent_id_1973dc74",
    "activity_runstep_agent_id_fd0ccb90",
)


class Migration(migrations.Migration):
    dependencies = [
        ("activity", "0010_merge_20261127_0041"),
        ("workspaces", "0009_merge_0008_audit_events_0008_team_invitations"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    [f"DROP INDEX IF EXISTS {name}", f"DROP INDEX IF EXISTS {name}_like"],
                    reverse_sql=migrations.RunSQL.noop,
                )
                for name in _DROPPED
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="conversation",
                    name="agent",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="workspaces.agent",
                    ),
                ),
                migrations.AlterField(
                    model_name="enduser",
                    name="agent",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="workspaces.agent",
                    ),
                ),
                migrations.AlterField(
                    model_name="message",
                    name="agent",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="workspaces.agent",
                    ),
                ),
                migrations.AlterField(
                    model_name="pendingspan",
                    name="agent",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="workspaces.agent",
                    ),
                ),
                migrations.AlterField(
                    model_name="run",
                    name="agent",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="workspaces.agent",
                    ),
                ),
                migrations.AlterField(
                    model_name="runstep",
                    name="agent",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="workspaces.agent",
                    ),
                ),
            ],
        ),
    ]
