"""Every write operation of the served OpenAPI document leaves an audit entry (issue 27, item 3).

The walk reads the document, so an operation added later fails here until it either records
its change or is listed in NOT_WORKSPACE_CHANGES with the reason. Each operation runs with
valid input through a full-scope key of an owner; the entry it leaves must name the action,
the key as actor, the client's address and the request's id. A second test walks the
operations that handle secrets and finds none of them in any entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import orjson
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from apps.knowledge import services as knowledge
from apps.knowledge.models import KnowledgeDocument
from apps.tools.models import McpServer, McpTool
from apps.webhooks import services as webhooks
from apps.workspaces import services as workspaces
from apps.workspaces.models import AgentRevision, AuditEvent
from tests.activity.factories import run_factory
from tests.api.openapi import generated_document
from tests.conftest import ApiClient
from tests.factories import api_key_factory
from tests.knowledge.gap_helpers import gap_factory
from tests.scores.factories import score_config_factory, score_factory
from tests.webhooks.factories import delivery_factory

pytestmark = pytest.mark.django_db

# Operations that write but change nothing of the workspace, and why they record no entry.
NOT_WORKSPACE_CHANGES = {
    ("post", "/v1/ingest"): "records activity from the Agent runtime (the hot write path): "
    "conversations and runs are the workspace's data, not changes to its configuration",
    ("post", "/v1/otlp/v1/traces"): "records run steps from OpenTelemetry exporters, as ingest",
    ("post", "/v1/knowledge/search"): "a search: reads documents, changes nothing",
    ("post", "/v1/auth_tokens"): "mints a short-lived browser token for one end user on every "
    "page load of the embedding application; nothing of the workspace changes, and the token "
    "dies by itself within minutes",
    ("post", "/v1/scores"): "records judgements of runs and messages from the Agent runtime or an "
    "evaluator, like ingest: the workspace's data, not a change to its configuration",
    ("put", "/v1/me/messages/{id}/feedback"): "an end user's own thumbs on an answer, with their "
    "browser token: activity data, as the conversation itself",
    ("delete", "/v1/me/messages/{id}/feedback"): "an end user taking back their own thumbs",
}

_PARAM = re.compile(r"\{([^}]+)\}")
AGENT_PREFIX = "/v1/agents/{agentId}"
# Paths under /v1/agents/{agentId} that are operations on that Agent (it is the target), not
# the agent-scoped form of a plain path.
AGENT_MANAGEMENT = ("", "/archive", "/restore", "/revisions/{revisionId}/restore")


def write_operations() -> list:
    document = generated_document()
    found = []
    for path, item in sorted(document["paths"].items()):
        for method in ("post", "put", "patch", "delete"):
            if method in item:
                found.append(pytest.param(method, path, id=f"{method.upper()} {path}"))
    return found


def recipe_key(method: str, path: str) -> tuple[str, str]:
    """The plain form of an agent-scoped path (`/v1/agents/{agentId}/knowledge` ->
    `/v1/knowledge`), so one recipe serves both forms."""
    if path.startswith(AGENT_PREFIX):
        rest = path[len(AGENT_PREFIX) :]
        if rest not in AGENT_MANAGEMENT:
            return method, "/v1" + rest
    return method, path


@dataclass
class World:
    api: ApiClient
    agent: object
    sibling: object
    receiver_url: str


@dataclass
class Call:
    action: str
    params: dict
    json: dict | None = None
    data: dict | None = None
    target_agent: str | None = None  # {agentId} when it names another Agent than the key's


def _document(world: World, *, url: bool = False, ready: bool = False) -> KnowledgeDocument:
    if url:
        document = knowledge.document_create_from_url(
            agent=world.agent, url="http://127.0.0.1:8000/walk"
        )
    else:
        upload = SimpleUploadedFile("walk.md", b"# Walk\n\nA page.", "text/markdown")
        document = knowledge.document_create_from_upload(agent=world.agent, upload=upload)
    if ready:
        KnowledgeDocument.objects.filter(pk=document.pk).update(status="ready")
    return document


def _server(world: World) -> McpServer:
    server = McpServer.objects.create(
        agent=world.agent, name="Weather", url="https://93.184.215.14/mcp", status="connected"
    )
    McpTool.objects.create(server=server, name="forecast")
    return server


def _webhook(world: World):
    webhooks.webhook_update(agent=world.agent, url=world.receiver_url, enabled=True)
    return world.agent.webhook


def _revisions(world: World) -> str:
    workspaces.agent_update(
        workspace_id=world.sibling.workspace_id,
        agent_id=world.sibling.pk,
        changes={"description": "second"},
        actor=workspaces.SYSTEM_ACTOR,
    )
    return AgentRevision.objects.get(agent=world.sibling, number=1).pk


RECIPES: dict[tuple[str, str], Callable[[World], Call]] = {
    ("post", "/v1/agents"): lambda w: Call("agent.created", {}, json={"name": "Walked"}),
    ("patch", "/v1/agents/{agentId}"): lambda w: Call(
        "agent.updated", {}, json={"description": "changed"}, target_agent=w.sibling.pk
    ),
    ("post", "/v1/agents/{agentId}/archive"): lambda w: Call(
        "agent.archived", {}, target_agent=w.sibling.pk
    ),
    ("post", "/v1/agents/{agentId}/restore"): lambda w: (
        workspaces.agent_archive(workspace_id=w.sibling.workspace_id, agent_id=w.sibling.pk),
        Call("agent.restored", {}, target_agent=w.sibling.pk),
    )[1],
    ("post", "/v1/agents/{agentId}/revisions/{revisionId}/restore"): lambda w: Call(
        "agent.revision_restored", {"revisionId": _revisions(w)}, target_agent=w.sibling.pk
    ),
    ("post", "/v1/api_keys"): lambda w: Call(
        "api_key.created", {}, json={"name": "Narrow", "scopes": ["runs:read"]}
    ),
    ("post", "/v1/api_keys/{id}/revoke"): lambda w: Call(
        "api_key.revoked", {"id": api_key_factory(agent=w.agent, scopes=["runs:read"])[0].pk}
    ),
    ("patch", "/v1/knowledge/{id}"): lambda w: Call(
        "document.updated", {"id": _document(w).pk}, json={"name": "Renamed"}
    ),
    ("delete", "/v1/knowledge/{id}"): lambda w: Call("document.deleted", {"id": _document(w).pk}),
    ("post", "/v1/score_configs"): lambda w: Call(
        "score_config.created", {}, json={"name": "helpful", "data_type": "boolean"}
    ),
    ("patch", "/v1/score_configs/{id}"): lambda w: Call(
        "score_config.updated",
        {"id": score_config_factory(agent=w.agent).pk},
        json={"description": "How helpful the answer was."},
    ),
    ("post", "/v1/score_configs/{id}/archive"): lambda w: Call(
        "score_config.archived", {"id": score_config_factory(agent=w.agent).pk}
    ),
    ("post", "/v1/score_configs/{id}/restore"): lambda w: Call(
        "score_config.restored",
        {"id": score_config_factory(agent=w.agent, archived_at=timezone.now()).pk},
    ),
    ("delete", "/v1/scores/{id}"): lambda w: Call(
        "score.deleted", {"id": score_factory(agent=w.agent, run=run_factory(agent=w.agent)).id}
    ),
    ("post", "/v1/knowledge/gaps/{id}/resolve"): lambda w: Call(
        "knowledge_gap.resolved", {"id": gap_factory(w.agent).pk}
    ),
    ("post", "/v1/knowledge/gaps/{id}/reopen"): lambda w: Call(
        "knowledge_gap.reopened", {"id": gap_factory(w.agent, status="resolved").pk}
    ),
    ("post", "/v1/knowledge/{id}/refresh"): lambda w: Call(
        "document.refresh_requested", {"id": _document(w, url=True, ready=True).pk}
    ),
    ("patch", "/v1/knowledge/{id}/schedule"): lambda w: Call(
        "document.schedule_changed",
        {"id": _document(w, url=True).pk},
        json={"refresh_interval_hours": 6},
    ),
    ("post", "/v1/knowledge/files"): lambda w: Call(
        "document.created",
        {},
        data={"file": SimpleUploadedFile("new.md", b"# New\n\nText.", "text/markdown")},
    ),
    ("post", "/v1/knowledge/urls"): lambda w: Call(
        "document.created", {}, json={"url": "http://127.0.0.1:8000/new"}
    ),
    ("post", "/v1/mcp_servers"): lambda w: Call(
        "mcp_server.created",
        {},
        json={"url": "https://93.184.215.14/mcp", "auth_headers": {"X-Api-Key": "v"}},
    ),
    ("patch", "/v1/mcp_servers/{id}"): lambda w: Call(
        "mcp_server.updated", {"id": _server(w).pk}, json={"name": "Renamed"}
    ),
    ("delete", "/v1/mcp_servers/{id}"): lambda w: Call("mcp_server.deleted", {"id": _server(w).pk}),
    ("post", "/v1/mcp_servers/{id}/discover"): lambda w: Call(
        "mcp_server.discovery_requested", {"id": _server(w).pk}
    ),
    ("patch", "/v1/mcp_servers/{id}/tools/{name}"): lambda w: Call(
        "mcp_tool.disabled", {"id": _server(w).pk, "name": "forecast"}, json={"enabled": False}
    ),
    ("patch", "/v1/webhook"): lambda w: Call(
        "webhook.updated", {}, json={"url": w.receiver_url, "events": ["run.failed"]}
    ),
    ("post", "/v1/webhook/test"): lambda w: (_webhook(w), Call("webhook.test_sent", {}))[1],
    ("post", "/v1/webhook/secret"): lambda w: Call("webhook.secret_rotated", {}),
    ("post", "/v1/webhook/deliveries/recover"): lambda w: (
        _webhook(w),
        Call(
            "webhook.deliveries_recovered",
            {},
            json={"since": (timezone.now() - timedelta(days=1)).isoformat()},
        ),
    )[1],
    ("post", "/v1/webhook/deliveries/{deliveryId}/retry"): lambda w: Call(
        "webhook.delivery_retried",
        {"deliveryId": delivery_factory(webhook=_webhook(w), status="failed").pk},
    ),
}


@pytest.fixture
def world(api, agent, sibling_agent, httpserver, settings) -> World:
    settings.NETGUARD_ALLOW_LOOPBACK = True
    settings.API_RATE_LIMIT = "100000/minute"
    httpserver.expect_request("/hook").respond_with_data("ok")
    return World(
        api=api, agent=agent, sibling=sibling_agent, receiver_url=httpserver.url_for("/hook")
    )


def _call(world: World, method: str, path: str, call: Call):
    params = {"agentId": call.target_agent or world.agent.pk, **call.params}
    url = _PARAM.sub(lambda match: str(params[match.group(1)]), path)
    body = {"data": call.data} if call.data is not None else {"json": call.json or {}}
    return world.api.request(method, url, headers={"X-Request-Id": "walk-request-1"}, **body)


@pytest.mark.parametrize(("method", "path"), write_operations())
def test_every_write_operation_leaves_an_audit_entry(method, path, world):
    key = recipe_key(method, path)
    if key in NOT_WORKSPACE_CHANGES:
        pytest.skip(f"not a workspace change: {NOT_WORKSPACE_CHANGES[key]}")
    assert key in RECIPES, f"{method.upper()} {path}: add a recipe (or a documented exclusion)"
    call = RECIPES[key](world)
    before = set(AuditEvent.objects.values_list("pk", flat=True))

    response = _call(world, method, path, call)

    assert 200 <= response.status < 300, response.body
    new = AuditEvent.objects.exclude(pk__in=before).filter(action=call.action)
    assert new.count() == 1, list(AuditEvent.objects.exclude(pk__in=before).values("action"))
    entry = new.get()
    assert entry.workspace_id == world.agent.workspace_id
    assert (entry.actor_type, entry.actor_id) == ("api_key", world.api.key.pk)
    assert entry.actor_name == world.api.key.name
    assert entry.ip == "127.0.0.1"
    assert entry.request_id == "walk-request-1"
    assert entry.target_type and entry.target_id


def test_the_exclusions_are_operations_of_the_document():
    # An exclusion left behind by a removed operation would hide nothing; keep the list true.
    served = {recipe_key(*param.values) for param in write_operations()}
    assert set(NOT_WORKSPACE_CHANGES) <= served
    assert set(RECIPES) <= served


def test_no_secret_reaches_the_audit_log(world, owner_client):
    """Keys, webhook signing secrets (rotated and revealed) and tool-server header values
    pass through the audited operations; none of them is in any entry."""
    secrets = []
    created = world.api.post("/v1/api_keys", json={"name": "Leaky?", "scopes": ["runs:read"]})
    secrets.append(created.json()["secret"])
    secrets.append(world.api.raw_key)
    for _ in range(2):  # the second rotation keeps the first secret as the previous one
        rotated = world.api.post(f"/v1/agents/{world.agent.pk}/webhook/secret", json={})
        secrets.append(rotated.json()["secret"])
    header_value = "Bearer tool-server-secret-0123456789"
    server = world.api.post(
        "/v1/mcp_servers",
        json={"url": "https://93.184.215.14/mcp", "auth_headers": {"Authorization": header_value}},
    ).json()
    world.api.patch(
        f"/v1/mcp_servers/{server['id']}",
        json={"auth_headers": {"Authorization": header_value + "-rotated"}},
    )
    secrets.append(header_value)
    page = owner_client.post(
        "/api-keys/new/", {"name": "Console key", "scopes": ["runs:read"], "expires": "never"}
    )
    assert page.status_code == 302
    console_key = owner_client.get("/api-keys/").context["new_key"]["key"]
    secrets.append(console_key)
    revealed = owner_client.post("/webhooks/secret/", {"action": "reveal"})
    assert revealed.status_code == 200
    world.agent.webhook.refresh_from_db()
    secrets += [world.agent.webhook.secret, world.agent.webhook.previous_secret]

    entries = AuditEvent.objects.filter(workspace_id=world.agent.workspace_id)
    actions = set(entries.values_list("action", flat=True))
    assert {
        "api_key.created",
        "webhook.secret_rotated",
        "webhook.secret_revealed",
        "mcp_server.created",
        "mcp_server.updated",
    } <= actions
    dump = orjson.dumps([list(row) for row in entries.values_list()], default=str).decode()
    for secret in secrets:
        assert secret
        # The whole value and any long piece of it (a key's secret part without its prefix).
        for piece in {secret, secret[-24:]}:
            assert piece not in dump, f"a secret is in the audit log: {piece[:6]}…"
    updated = entries.get(action="mcp_server.updated")
    assert updated.changes["auth_headers"] == {"changed": True}
