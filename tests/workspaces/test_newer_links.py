"""Agents and revision history: "Older" then "Newer" comes back to the same rows."""

import pytest

from apps.workspaces import services
from tests.factories import agent_factory
from tests.paging import assert_older_then_newer_retraces

pytestmark = pytest.mark.django_db


def test_agents_list_pages_back_to_newer(owner_client, workspace, agent):
    for n in range(30):
        agent_factory(workspace=workspace, name=f"Agent {n:02}")
    assert_older_then_newer_retraces(
        owner_client,
        "/agents/",
        older_id="older-agents",
        newer_id="newer-agents",
        row_pattern=r'id="agent-row-(agt_\w+)"',
    )


def test_revision_history_pages_back_to_newer(owner_client, owner, agent):
    for n in range(14):
        services.agent_update(
            workspace_id=agent.workspace_id,
            agent_id=agent.pk,
            changes={"instructions": f"Answer politely, version {n}."},
            actor=services.actor_for_user(owner),
        )
    assert_older_then_newer_retraces(
        owner_client,
        f"/agents/{agent.pk}/",
        older_id="older-revisions",
        newer_id="newer-revisions",
        row_pattern=r'id="revision-(\d+)"',
    )
