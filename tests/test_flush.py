"""The flush after a test that commits (tests/flush.py) leaves every table empty, as Django's
TRUNCATE does, the tables triggers write included; post_migrate then makes the content types
and permissions again."""

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection

from apps.usage.models import DailyLatency
from apps.workspaces.models import Agent
from tests.activity.factories import run_factory
from tests.factories import agent_factory, api_key_factory, user_factory, workspace_factory

pytestmark = pytest.mark.django_db(transaction=True)


def _tables_with_rows() -> set[str]:
    tables = connection.introspection.django_table_names(only_existing=True)
    with connection.cursor() as cursor:
        filled = set()
        for table in tables:
            cursor.execute(f"SELECT 1 FROM {connection.ops.quote_name(table)} LIMIT 1")
            if cursor.fetchone():
                filled.add(table)
        return filled


def test_the_flush_empties_every_table_that_holds_rows():
    if connection.vendor != "postgresql":
        pytest.skip("it replaces PostgreSQL's TRUNCATE")
    owner = user_factory()
    agent = agent_factory(workspace=workspace_factory(owner=owner))
    api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner)
    run_factory(agent=agent)
    # A past day's latency: a trigger records its month in usage_latencymonth, and would again
    # when the row is deleted.
    DailyLatency.objects.create(
        agent=agent, workspace=agent.workspace, day="2020-01-01", bucket=1, runs=1
    )
    filled = _tables_with_rows()
    assert {"auth_user", "workspaces_agent", "activity_run", "usage_latencymonth"} <= filled

    # As TransactionTestCase flushes after each test (reset_sequences=False: with True, the
    # flush keeps Django's TRUNCATE).
    call_command("flush", verbosity=0, interactive=False, reset_sequences=False)

    # Only what post_migrate makes again holds rows.
    assert _tables_with_rows() == {ContentType._meta.db_table, Permission._meta.db_table}
    assert ContentType.objects.get_for_model(Agent).model == "agent"
    assert Permission.objects.filter(codename="view_agent").exists()
