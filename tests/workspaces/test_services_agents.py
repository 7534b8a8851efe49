"""Agent services: configuration rules, revisions, archive and restore, and what an archived
Agent's keys, scheduled refreshes and webhook deliveries do."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.common.errors import BadRequest, Conflict, NotFound
from apps.knowledge import pipeline
from apps.knowledge.models import KnowledgeDocument
from apps.webhooks.models import DeliveryStatus
from apps.webhooks.services import deliveries_dispatch_due
from apps.workspaces import configuration
from apps.workspaces.models import Agent, AgentRevision
from apps.workspaces.services import (
    actor_for_user,
    agent_archive,
    agent_create,
    agent_restore,
    agent_revision_restore,
    agent_update,
)
from tests.webhooks.factories import delivery_factory, webhook_factory

pytestmark = pytest.mark.django_db


# --- configuration rules ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://example.com", "https://example.com"),
        ("HTTPS://Example.COM/", "https://example.com"),
        ("https://example.com:443", "https://example.com"),
        ("http://example.com:80", "http://example.com"),
        ("http://localhost:3000", "http://localhost:3000"),
        ("https://example.com.", "https://example.com"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://[0:0::1]", "http://[::1]"),
        ("https://münchen.example", "https://xn--mnchen-3ya.example"),
    ],
)
def test_origins_are_normalized(raw, expected):
    assert configuration.normalize_origin(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "example.com",
        "//example.com",
        "https://",
        "https://*.example.com",
        "*",
        "https://example.com/path",
        "https://example.com/?q",
        "https://example.com#top",
        "https://example.com?",
        "https://a:b@example.com",
        "ftp://example.com",
        "javascript:alert(1)",
        "https://exa mple.com",
        "https://-bad.example",
        "https://example.com:0x50",
        "https://[not-ipv6]",
        "https://" + "a" * 64 + ".example",
        "https://x" + "." * 3,
    ],
)
def test_bad_origins_are_refused(raw):
    with pytest.raises(BadRequest) as caught:
        configuration.normalize_origin(raw)
    assert caught.value.message.startswith("allowed_origins:")


def test_clean_refuses_unknown_fields_and_blank_names():
    with pytest.raises(BadRequest, match="^status:"):
        configuration.clean({"status": "archived"})
    with pytest.raises(BadRequest, match="^name:"):
        configuration.clean({"name": " \t"})
    assert configuration.clean({"name": "  Trim me "}) == {"name": "Trim me"}


def test_differences_show_changed_fields_with_a_line_diff_for_instructions():
    before = {"name": "A", "instructions": "one\ntwo\nthree", "effort": None}
    after = {"name": "A", "instructions": "one\n2\nthree", "effort": "low"}

    changes = configuration.differences(before, after)

    assert [c.field for c in changes] == ["instructions", "effort"]
    instructions = changes[0]
    assert "-two" in instructions.lines and "+2" in instructions.lines
    assert " one" in instructions.lines
    assert (changes[1].before, changes[1].after, changes[1].lines) == (None, "low", ())


def test_differences_of_the_first_revision_list_what_was_set():
    after = {"name": "A", "description": "", "instructions": "Hi", "allowed_origins": []}

    assert [c.field for c in configuration.differences(None, after)] == ["name", "instructions"]


# --- revisions ----------------------------------------------------------------------------


def test_create_writes_revision_one_with_the_whole_configuration(workspace, owner):
    agent = agent_create(
        workspace=workspace, name="Docs", instructions="Answer.", actor=actor_for_user(owner)
    )

    revision = AgentRevision.objects.get(agent=agent)
    assert (revision.number, revision.kind, agent.revision) == (1, "created", 1)
    assert revision.configuration == configuration.snapshot(agent)
    assert (revision.actor_type, revision.actor_id, revision.actor_name) == (
        "user",
        "owner@example.com",
        "Olive Owner",
    )
    assert revision.created_at == agent.created_at == agent.updated_at


def test_update_keeps_the_previous_configuration(agent, owner):
    agent_update(
        workspace_id=agent.workspace_id,
        agent_id=agent.pk,
        changes={"instructions": "Last week's prompt"},
        actor=actor_for_user(owner),
    )
    agent_update(
        workspace_id=agent.workspace_id,
        agent_id=agent.pk,
        changes={"instructions": "This week's prompt"},
        actor=actor_for_user(owner),
    )

    history = list(AgentRevision.objects.filter(agent=agent).order_by("number"))
    assert [r.configuration["instructions"] for r in history] == [
        "",
        "Last week's prompt",
        "This week's prompt",
    ]
    agent.refresh_from_db()
    assert agent.revision == 3


def test_update_of_another_workspaces_agent_is_not_found(agent, other_agent, owner):
    with pytest.raises(NotFound):
        agent_update(
            workspace_id=agent.workspace_id,
            agent_id=other_agent.pk,
            changes={"name": "Mine now"},
            actor=actor_for_user(owner),
        )
    other_agent.refresh_from_db()
    assert other_agent.name == "Theirs"


def test_restore_brings_back_every_field_of_the_revision(agent, owner):
    actor = actor_for_user(owner)
    agent_update(
        workspace_id=agent.workspace_id,
        agent_id=agent.pk,
        changes={"model_id": "gpt-4.1", "allowed_origins": ["https://a.example"]},
        actor=actor,
    )
    agent_update(
        workspace_id=agent.workspace_id,
        agent_id=agent.pk,
        changes={"name": "Renamed", "model_id": None, "allowed_origins": []},
        actor=actor,
    )
    second = AgentRevision.objects.get(agent=agent, number=2)

    restored = agent_revision_restore(
        workspace_id=agent.workspace_id, agent_id=agent.pk, revision_id=second.pk, actor=actor
    )

    assert configuration.snapshot(restored) == second.configuration
    latest = AgentRevision.objects.get(agent=agent, number=4)
    assert (latest.kind, latest.restored_from) == ("restored", 2)
    assert latest.changed_fields == ["name", "model_id", "allowed_origins"]


def test_revision_of_another_agent_cannot_be_restored(agent, sibling_agent, owner):
    theirs = AgentRevision.objects.get(agent=sibling_agent, number=1)
    with pytest.raises(NotFound):
        agent_revision_restore(
            workspace_id=agent.workspace_id,
            agent_id=agent.pk,
            revision_id=theirs.pk,
            actor=actor_for_user(owner),
        )


# --- archive and restore ------------------------------------------------------------------


def test_the_last_active_agent_cannot_be_archived(agent):
    with pytest.raises(Conflict, match="last active Agent"):
        agent_archive(workspace_id=agent.workspace_id, agent_id=agent.pk)
    agent.refresh_from_db()
    assert agent.status == "active"


def test_archive_and_restore_without_a_key(agent, sibling_agent):
    archived = agent_archive(workspace_id=agent.workspace_id, agent_id=sibling_agent.pk)
    assert (archived.status, archived.archived_at is not None) == ("archived", True)

    restored = agent_restore(workspace_id=agent.workspace_id, agent_id=sibling_agent.pk)
    assert (restored.status, restored.archived_at) == ("active", None)
    # Neither is a configuration change.
    assert restored.revision == 1


def test_archived_agent_configuration_cannot_change(agent, sibling_agent, owner):
    agent_archive(workspace_id=agent.workspace_id, agent_id=sibling_agent.pk)
    with pytest.raises(Conflict, match="archived"):
        agent_update(
            workspace_id=agent.workspace_id,
            agent_id=sibling_agent.pk,
            changes={"name": "x"},
            actor=actor_for_user(owner),
        )


def _due_url_document(agent) -> KnowledgeDocument:
    return KnowledgeDocument.objects.create(
        agent=agent,
        name="FAQ",
        source_type="url",
        source_url="https://example.com/faq",
        normalized_url="https://example.com/faq",
        status="ready",
        refresh_interval_hours=24,
        next_refresh_at=timezone.now() - timedelta(minutes=5),
    )


def test_scheduled_refreshes_of_an_archived_agent_wait_and_resume_on_restore(agent, sibling_agent):
    waiting = _due_url_document(sibling_agent)
    running = _due_url_document(agent)
    agent_archive(workspace_id=agent.workspace_id, agent_id=sibling_agent.pk)

    assert pipeline.documents_refresh_due() == [running.pk]
    waiting.refresh_from_db()
    assert (waiting.refresh_status, waiting.next_refresh_at is not None) == ("idle", True)

    agent_restore(workspace_id=agent.workspace_id, agent_id=sibling_agent.pk)

    assert pipeline.documents_refresh_due() == [waiting.pk]


def test_webhook_deliveries_of_an_archived_agent_wait_and_go_out_on_restore(
    agent, sibling_agent, httpserver, settings
):
    settings.NETGUARD_ALLOW_LOOPBACK = True
    httpserver.expect_request("/hook", method="POST").respond_with_data("ok")
    webhook = webhook_factory(agent=sibling_agent, url=httpserver.url_for("/hook"))
    delivery = delivery_factory(webhook=webhook)
    agent_archive(workspace_id=agent.workspace_id, agent_id=sibling_agent.pk)

    assert deliveries_dispatch_due()["sent"] == 0
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING
    assert httpserver.log == []

    agent_restore(workspace_id=agent.workspace_id, agent_id=sibling_agent.pk)

    assert deliveries_dispatch_due()["sent"] == 1
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.SUCCEEDED
    assert len(httpserver.log) == 1


def test_archiving_deletes_nothing(agent, sibling_agent, make_api):
    make_api(for_agent=sibling_agent)
    _due_url_document(sibling_agent)
    webhook_factory(agent=sibling_agent)

    agent_archive(workspace_id=agent.workspace_id, agent_id=sibling_agent.pk)

    assert Agent.objects.filter(pk=sibling_agent.pk).exists()
    assert sibling_agent.api_keys.filter(revoked_at__isnull=True).count() == 1
    assert KnowledgeDocument.objects.filter(agent=sibling_agent).count() == 1
    assert AgentRevision.objects.filter(agent=sibling_agent).count() == 1


# --- demo ---------------------------------------------------------------------------------


def test_demo_agent_has_a_configuration_and_a_short_history():
    from apps.workspaces.demo import demo_seed

    first = demo_seed(email="demo@example.com", password="pw-demo-12345")
    agent = first["agent"]
    assert agent.model_id and agent.instructions and agent.allowed_origins
    history = list(AgentRevision.objects.filter(agent=agent).order_by("number"))
    assert [r.kind for r in history] == ["created", "updated", "updated"]
    assert all(r.actor_type == "user" for r in history)
    assert history[1].changed_fields == ["instructions", "model_id", "effort"]

    demo_seed(email="demo@example.com", password="pw-demo-12345")
    assert AgentRevision.objects.filter(agent=agent).count() == 3
