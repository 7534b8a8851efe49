"""The console remembers the Agent a person last chose, across sign-ins (issue 26, item 7)."""

import re

import pytest
from django.test import Client

from apps.workspaces.services import agent_archive

pytestmark = pytest.mark.django_db


def _current(client: Client) -> str:
    html = client.get("/api-keys/").content.decode()
    return re.search(r'data-current="([^"]+)"', html).group(1)


def _signed_in(user) -> Client:
    client = Client()  # a new session, as after logging out and in again
    client.force_login(user)
    return client


def test_a_new_session_opens_the_agent_chosen_last_not_the_first_by_name(
    owner, agent, sibling_agent
):
    assert _current(_signed_in(owner)) == sibling_agent.pk  # "Sales Agent" sorts first
    first = _signed_in(owner)
    first.post("/agent/switch/", {"agent_id": agent.pk, "next": "/"})

    assert _current(_signed_in(owner)) == agent.pk


def test_each_person_has_their_own_memory(owner, member, agent, sibling_agent):
    _signed_in(owner).post("/agent/switch/", {"agent_id": agent.pk, "next": "/"})
    assert _current(_signed_in(member)) == sibling_agent.pk


def test_an_archived_remembered_agent_falls_back_to_one_that_can_be_opened(
    owner, agent, sibling_agent
):
    _signed_in(owner).post("/agent/switch/", {"agent_id": agent.pk, "next": "/"})
    agent_archive(workspace_id=agent.workspace_id, agent_id=agent.pk)
    assert _current(_signed_in(owner)) == sibling_agent.pk


def test_switching_to_another_workspaces_agent_is_not_remembered(owner, agent, other_agent):
    _signed_in(owner).post("/agent/switch/", {"agent_id": other_agent.pk, "next": "/"})
    from apps.workspaces.models import ConsolePreference

    assert not ConsolePreference.objects.filter(user=owner).exists()
    assert _current(_signed_in(owner)) == agent.pk
