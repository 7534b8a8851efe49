"""The Agents pages: list (active/archived), create, edit with history and restore,
archive/restore for owners only; members view and edit; another workspace's Agent is 404."""

import re

import pytest
from django.test import Client

from apps.workspaces.models import Agent, AgentRevision
from apps.workspaces.services import actor_for_user, agent_update
from tests.factories import agent_factory

pytestmark = pytest.mark.django_db

CONFIG = {
    "name": "Billing Agent",
    "description": "Invoices",
    "instructions": "Line one\r\nLine two",
    "model_id": "gpt-4.1-mini",
    "effort": "low",
    "knowledge_search_enabled": "on",
    "allowed_origins": "https://Shop.example.com/\r\n\r\nhttp://localhost:3000",
}


@pytest.fixture
def owner_client(client, owner, agent):
    client.force_login(owner)
    return client


@pytest.fixture
def member_client(member, agent):
    client = Client()
    client.force_login(member)
    return client


def test_agents_page_needs_a_login(client, agent):
    response = client.get("/agents/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


@pytest.mark.smoke
def test_list_shows_active_agents_and_the_archived_tab(owner_client, agent, sibling_agent):
    Agent.objects.filter(pk=sibling_agent.pk).update(status="archived")

    active = owner_client.get("/agents/").content.decode()
    assert f'id="agent-row-{agent.pk}"' in active
    assert f'id="agent-row-{sibling_agent.pk}"' not in active
    assert 'href="/agents/"' in active  # in the navigation

    archived = owner_client.get("/agents/?status=archived").content.decode()
    assert f'id="agent-row-{sibling_agent.pk}"' in archived
    assert f'id="agent-row-{agent.pk}"' not in archived


def test_list_partial_for_htmx(owner_client, agent):
    response = owner_client.get(
        "/agents/", headers={"HX-Request": "true", "HX-Target": "agent-table"}
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="agent-table">')
    assert "<html" not in html


def test_list_shows_nothing_of_another_workspace(owner_client, other_agent):
    assert other_agent.name not in owner_client.get("/agents/").content.decode()


def test_create_makes_an_agent_with_revision_one_by_the_person(owner_client, workspace, owner):
    response = owner_client.post("/agents/new/", CONFIG)

    assert response.status_code == 302
    agent = Agent.objects.get(name="Billing Agent")
    assert response["Location"] == f"/agents/{agent.pk}/"
    assert agent.workspace == workspace
    assert agent.instructions == "Line one\nLine two"
    assert agent.allowed_origins == ["https://shop.example.com", "http://localhost:3000"]
    assert (agent.model_id, agent.effort, agent.knowledge_search_enabled) == (
        "gpt-4.1-mini",
        "low",
        True,
    )
    revision = AgentRevision.objects.get(agent=agent)
    assert (revision.actor_type, revision.actor_id) == ("user", owner.email)
    # The new Agent is in the switcher.
    assert f'value="{agent.pk}"' in owner_client.get("/agents/").content.decode()


def test_create_shows_the_services_errors_on_their_fields(owner_client):
    response = owner_client.post(
        "/agents/new/", {**CONFIG, "allowed_origins": "https://*.example.com"}
    )

    assert response.status_code == 400
    html = response.content.decode()
    assert "wildcards are not allowed" in html
    assert not Agent.objects.filter(name="Billing Agent").exists()


def test_edit_saves_a_revision_and_shows_the_diff(owner_client, agent):
    response = owner_client.post(
        f"/agents/{agent.pk}/",
        {**CONFIG, "name": "Support Agent", "instructions": "Be brief.\r\nBe kind."},
    )
    assert response.status_code == 302

    html = owner_client.get(f"/agents/{agent.pk}/").content.decode()
    assert "Saved as revision 2." in html
    assert 'id="revision-2"' in html and 'id="revision-1"' in html
    assert '<span class="diff-add">+Be brief.</span>' in html
    assert "gpt-4.1-mini" in html


def test_saving_unchanged_form_writes_no_revision(owner_client, agent):
    owner_client.post(
        f"/agents/{agent.pk}/",
        {"name": "Support Agent", "knowledge_search_enabled": "on"},
    )

    agent.refresh_from_db()
    assert agent.revision == 1


def test_one_click_restore_of_a_revision(owner_client, agent, owner):
    actor = actor_for_user(owner)
    agent_update(
        workspace_id=agent.workspace_id,
        agent_id=agent.pk,
        changes={"instructions": "Old"},
        actor=actor,
    )
    agent_update(
        workspace_id=agent.workspace_id,
        agent_id=agent.pk,
        changes={"instructions": "New"},
        actor=actor,
    )
    old = AgentRevision.objects.get(agent=agent, number=2)

    response = owner_client.post(f"/agents/{agent.pk}/revisions/{old.pk}/restore/")

    assert response.status_code == 302
    agent.refresh_from_db()
    assert (agent.instructions, agent.revision) == ("Old", 4)


def test_history_pages_older_revisions_with_htmx(owner_client, agent, owner):
    for n in range(12):
        agent_update(
            workspace_id=agent.workspace_id,
            agent_id=agent.pk,
            changes={"description": f"v{n}"},
            actor=actor_for_user(owner),
        )
    html = owner_client.get(f"/agents/{agent.pk}/").content.decode()
    assert 'id="revision-13"' in html and 'id="revision-3"' not in html
    assert 'id="older-revisions"' in html
    cursor = html.split('id="older-revisions" href="?after=')[1].split('"')[0]

    older = owner_client.get(
        f"/agents/{agent.pk}/?after={cursor}",
        headers={"HX-Request": "true", "HX-Target": "revision-history"},
    ).content.decode()

    assert older.lstrip().startswith('<div id="revision-history">')
    assert 'id="revision-3"' in older and 'id="revision-1"' in older


def test_owner_archives_and_restores_with_confirmation(owner_client, agent, sibling_agent):
    page = owner_client.get(f"/agents/{sibling_agent.pk}/").content.decode()
    assert (
        'id="archive-agent"' in page and "data-confirm=" in page
    )  # asked by console.js (no inline handler: CSP)

    owner_client.post(f"/agents/{sibling_agent.pk}/archive/")
    sibling_agent.refresh_from_db()
    assert sibling_agent.status == "archived"
    archived_page = owner_client.get(f"/agents/{sibling_agent.pk}/").content.decode()
    assert 'id="archived-banner"' in archived_page
    assert 'id="restore-agent"' in archived_page
    assert 'id="save-agent"' not in archived_page

    owner_client.post(f"/agents/{sibling_agent.pk}/restore/")
    sibling_agent.refresh_from_db()
    assert sibling_agent.status == "active"


def test_archiving_the_last_active_agent_is_refused_with_a_message(owner_client, agent):
    response = owner_client.post(f"/agents/{agent.pk}/archive/", follow=True)

    assert "last active Agent" in response.content.decode()
    agent.refresh_from_db()
    assert agent.status == "active"


def test_members_view_and_edit_but_cannot_archive(member_client, agent, sibling_agent):
    page = member_client.get(f"/agents/{sibling_agent.pk}/").content.decode()
    assert 'id="archive-agent"' not in page
    assert 'id="save-agent"' in page

    assert member_client.post(f"/agents/{sibling_agent.pk}/archive/").status_code == 403
    assert member_client.post(f"/agents/{sibling_agent.pk}/restore/").status_code == 403
    sibling_agent.refresh_from_db()
    assert sibling_agent.status == "active"

    member_client.post(f"/agents/{sibling_agent.pk}/", {"name": "Sales Agent 2"})
    sibling_agent.refresh_from_db()
    assert sibling_agent.name == "Sales Agent 2"


def test_another_workspaces_agent_is_404(owner_client, other_agent):
    assert owner_client.get(f"/agents/{other_agent.pk}/").status_code == 404
    assert owner_client.post(f"/agents/{other_agent.pk}/", CONFIG).status_code == 404
    assert owner_client.post(f"/agents/{other_agent.pk}/archive/").status_code == 404
    revision = AgentRevision.objects.get(agent=other_agent)
    restore = f"/agents/{other_agent.pk}/revisions/{revision.pk}/restore/"
    assert owner_client.post(restore).status_code == 404
    other_agent.refresh_from_db()
    assert other_agent.name == "Theirs"


def _agent_names(page: str) -> list[str]:
    return re.findall(r'<td data-label="Name" class="name"><a href="[^"]+">([^<]+)</a>', page)


def test_agents_list_counts_sorts_and_searches(owner_client, agent, workspace):
    for name in ("zeta Bot", "Alpha bot", "Mid Agent"):
        agent_factory(workspace=workspace, name=name)
    Agent.objects.filter(name="Mid Agent").update(status=Agent.Status.ARCHIVED)
    page = owner_client.get("/agents/").content.decode()
    assert "3 active Agents" in page
    assert _agent_names(owner_client.get("/agents/?sort=name&dir=asc").content.decode()) == [
        "Alpha bot",
        "Support Agent",
        "zeta Bot",
    ]
    assert _agent_names(owner_client.get("/agents/?sort=name&dir=desc").content.decode()) == [
        "zeta Bot",
        "Support Agent",
        "Alpha bot",
    ]
    found = owner_client.get("/agents/?q=BOT").content.decode()
    assert sorted(_agent_names(found)) == ["Alpha bot", "zeta Bot"]
    assert "2 active Agents match this search" in found
    archived = owner_client.get("/agents/?status=archived&q=mid").content.decode()
    assert _agent_names(archived) == ["Mid Agent"]
    assert "1 archived Agent matches this search" in archived
