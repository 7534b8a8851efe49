"""Record ids become unique per Agent instead of globally (docs/faults.md, item 5).

Each of the four tables gets an internal `row` primary key; `id` stays the runtime's id, unique
together with the Agent; links between records become `(agent, id)` pairs. Django cannot move a
primary key in place, so the tables are rebuilt: each is copied aside, dropped, created in its
new shape by the schema editor (the same indexes and constraints the models declare) and filled
back. PostgreSQL then gets composite foreign keys for the links. The rebuild copies every row
once; reversing it works until two Agents share an id.
"""

from django.db import migrations, models

import apps.common.ids

TABLES = ("enduser", "conversation", "message", "run")  # in creation order (links point back)

# PostgreSQL only: (table, constraint, columns, target, on delete). SQLite keeps the links in
# Django alone; records are only ever deleted together with their Agent.
COMPOSITE_LINKS = (
    ("conversation", "conv_user_link", "user_id", "enduser", "SET NULL (user_id)"),
    ("message", "msg_conversation_link", "conversation_id", "conversation", "CASCADE"),
    ("run", "run_conversation_link", "conversation_id", "conversation", "CASCADE"),
    ("run", "run_user_link", "user_id", "enduser", "SET NULL (user_id)"),
)


def _stash(apps, schema_editor):
    """Copy each table aside and drop it with its indexes and constraints."""
    quote = schema_editor.quote_name
    for name in TABLES:
        schema_editor.execute(
            f"CREATE TABLE {quote(f'activity_{name}_stash')} AS "  # noqa: S608 - our own tables
            f"SELECT * FROM {quote(f'activity_{name}')}"
        )
    for name in reversed(TABLES):
        schema_editor.delete_model(apps.get_model("activity", name))


def _restore(apps, schema_editor):
    """Create each table in the current shape and fill it from its copy (common columns)."""
    connection = schema_editor.connection
    quote = schema_editor.quote_name
    for name in TABLES:
        model = apps.get_model("activity", name)
        schema_editor.create_model(model)
        stash = f"activity_{name}_stash"
        with connection.cursor() as cursor:
            stashed = {
                column.name
                for column in connection.introspection.get_table_description(cursor, stash)
            }
        columns = ", ".join(
            quote(field.column)
            for field in model._meta.local_concrete_fields
            if field.column in stashed
        )
        schema_editor.execute(
            f"INSERT INTO {quote(model._meta.db_table)} ({columns}) "  # noqa: S608 - our own tables
            f"SELECT {columns} FROM {quote(stash)}"
        )
        schema_editor.execute(f"DROP TABLE {quote(stash)}")
    has_rows = any(f.name == "row" for f in apps.get_model("activity", "run")._meta.fields)
    if connection.vendor == "postgresql" and has_rows:
        for table, constraint, column, target, on_delete in COMPOSITE_LINKS:
            schema_editor.execute(
                f"ALTER TABLE activity_{table} ADD CONSTRAINT {constraint} "
                f"FOREIGN KEY (agent_id, {column}) REFERENCES activity_{target} (agent_id, id) "
                f"ON DELETE {on_delete} DEFERRABLE INITIALLY DEFERRED"
            )


class Migration(migrations.Migration):
    dependencies = [
        ("activity", "0002_run_model_and_error_indexes"),
        ("workspaces", "0005_agent_configuration_and_revisions"),
    ]

    operations = [
        migrations.RunPython(_stash, _restore),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(
                    model_name="conversation",
                    name="conv_agent_user",
                ),
                migrations.RemoveIndex(
                    model_name="message",
                    name="msg_conv_created",
                ),
                migrations.RemoveIndex(
                    model_name="run",
                    name="run_agent_conv",
                ),
                migrations.RemoveIndex(
                    model_name="run",
                    name="run_agent_user",
                ),
                migrations.AddField(
                    model_name="conversation",
                    name="row",
                    field=models.BigAutoField(primary_key=True, serialize=False),
                ),
                migrations.AddField(
                    model_name="conversation",
                    name="user_id",
                    field=models.CharField(blank=True, max_length=64, null=True),
                ),
                migrations.AddField(
                    model_name="enduser",
                    name="row",
                    field=models.BigAutoField(primary_key=True, serialize=False),
                ),
                migrations.AddField(
                    model_name="message",
                    name="conversation_id",
                    field=models.CharField(default=None, max_length=64),
                    preserve_default=False,
                ),
                migrations.AddField(
                    model_name="message",
                    name="row",
                    field=models.BigAutoField(primary_key=True, serialize=False),
                ),
                migrations.AddField(
                    model_name="run",
                    name="conversation_id",
                    field=models.CharField(default=None, max_length=64),
                    preserve_default=False,
                ),
                migrations.AddField(
                    model_name="run",
                    name="row",
                    field=models.BigAutoField(primary_key=True, serialize=False),
                ),
                migrations.AddField(
                    model_name="run",
                    name="user_id",
                    field=models.CharField(blank=True, max_length=64, null=True),
                ),
                migrations.AlterField(
                    model_name="conversation",
                    name="id",
                    field=models.CharField(
                        default=apps.common.ids.id_factory("conv"), max_length=64
                    ),
                ),
                migrations.AlterField(
                    model_name="conversation",
                    name="user",
                    field=models.ForeignObject(
                        from_fields=("agent", "user_id"),
                        null=True,
                        on_delete=models.DO_NOTHING,
                        related_name="conversations",
                        to="activity.enduser",
                        to_fields=("agent", "id"),
                    ),
                ),
                migrations.AlterField(
                    model_name="enduser",
                    name="id",
                    field=models.CharField(
                        default=apps.common.ids.id_factory("usr"), max_length=64
                    ),
                ),
                migrations.AlterField(
                    model_name="message",
                    name="conversation",
                    field=models.ForeignObject(
                        from_fields=("agent", "conversation_id"),
                        on_delete=models.DO_NOTHING,
                        related_name="messages",
                        to="activity.conversation",
                        to_fields=("agent", "id"),
                    ),
                ),
                migrations.AlterField(
                    model_name="message",
                    name="id",
                    field=models.CharField(
                        default=apps.common.ids.id_factory("msg"), max_length=64
                    ),
                ),
                migrations.AlterField(
                    model_name="run",
                    name="conversation",
                    field=models.ForeignObject(
                        from_fields=("agent", "conversation_id"),
                        on_delete=models.DO_NOTHING,
                        related_name="runs",
                        to="activity.conversation",
                        to_fields=("agent", "id"),
                    ),
                ),
                migrations.AlterField(
                    model_name="run",
                    name="id",
                    field=models.CharField(
                        default=apps.common.ids.id_factory("run"), max_length=64
                    ),
                ),
                migrations.AlterField(
                    model_name="run",
                    name="user",
                    field=models.ForeignObject(
                        from_fields=("agent", "user_id"),
                        null=True,
                        on_delete=models.DO_NOTHING,
                        related_name="runs",
                        to="activity.enduser",
                        to_fields=("agent", "id"),
                    ),
                ),
                migrations.AddIndex(
                    model_name="conversation",
                    index=models.Index(
                        fields=["agent", "user_id", "-updated_at", "-id"], name="conv_agent_user"
                    ),
                ),
                migrations.AddIndex(
                    model_name="message",
                    index=models.Index(
                        fields=["agent", "conversation_id", "created_at", "id"],
                        name="msg_conv_created",
                    ),
                ),
                migrations.AddIndex(
                    model_name="run",
                    index=models.Index(
                        fields=["agent", "conversation_id", "-created_at", "-id"],
                        name="run_agent_conv",
                    ),
                ),
                migrations.AddIndex(
                    model_name="run",
                    index=models.Index(
                        fields=["agent", "user_id", "-created_at", "-id"], name="run_agent_user"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="conversation",
                    constraint=models.UniqueConstraint(
                        fields=("agent", "id"), name="conv_agent_id"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="enduser",
                    constraint=models.UniqueConstraint(
                        fields=("agent", "id"), name="enduser_agent_id"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="message",
                    constraint=models.UniqueConstraint(fields=("agent", "id"), name="msg_agent_id"),
                ),
                migrations.AddConstraint(
                    model_name="run",
                    constraint=models.UniqueConstraint(fields=("agent", "id"), name="run_agent_id"),
                ),
            ],
        ),
        migrations.RunPython(_restore, _stash),
    ]
