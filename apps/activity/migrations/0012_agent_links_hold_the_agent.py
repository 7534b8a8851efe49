"""Runs, messages and steps lose their foreign key to the Agent alone: their composite links
(to the conversation, or the run, of the same Agent) already require the Agent's row, and the
per-row check locked that one row for every recording of the Agent
(apps.activity.models.agent_field). Dropping a constraint checks no row."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("activity", "0011_agent_indexes_led_by_composites"),
        ("workspaces", "0009_merge_0008_audit_events_0008_team_invitations"),
    ]

    operations = [
        migrations.AlterField(
            model_name="message",
            name="agent",
            field=models.ForeignKey(
                db_constraint=False,
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
                db_constraint=False,
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
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="workspaces.agent",
            ),
        ),
    ]
