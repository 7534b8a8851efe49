"""The audit log (issue 27, item 3): who is recorded for each kind of credential, from which
address, in the transaction of the change; GET /v1/audit_events with its filters and pages;
the console's Audit log page with its export; what reads cost; retention of the log itself.
The entries of every /v1 write operation are walked in tests/api/test_audit_every_write.py."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import orjson
import pytest
import time_machine
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.mcp_server.models import ConnectedApplication
from apps.mcp_server.resource_tokens import resource_token_sign
from apps.retention.services import retention_apply
from apps.workspaces import services
from apps.workspaces.audit import AUDIT_ACTIONS, audit_record
from apps.workspaces.models import AuditEvent
from tests.activity.factories import conversation_factory, message_factory, run_factory
from tests.conftest import ApiClient
from tests.factories import api_key_factory
from tests.mcp_server.conftest import obtain_grant

pytestmark = pytest.mark.django_db

EVENT_KEYS = {
    "object",
    "id",
    "workspace_id",
    "agent_id",
    "action",
    "actor",
    "target",
    "changes",
    "ip",
    "request_id",
    "created_at",
}


@pytest.fixture
def audit_api(make_api):
    return make_api(["audit_log:read"])


def _entries(workspace, **filters) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(workspace=workspace, **filters).order_by("created_at"))


# --- Who, from where, in which transaction ---------------------------------------------------


def test_a_console_change_names_the_person_and_their_address(owner_client, agent, owner):
    key, _raw = api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner)
    response = owner_client.post(f"/api-keys/{key.pk}/revoke/", REMOTE_ADDR="203.0.113.9")
    assert response.status_code in (200, 302)

    (entry,) = _entries(agent.workspace, action="api_key.revoked")
    assert (entry.actor_type, entry.actor_id, entry.actor_name) == (
        "user",
        "owner@example.com",
        "Olive Owner",
    )
    assert entry.ip == "203.0.113.9"
    assert (entry.target_type, entry.target_id, entry.target_name) == ("api_key", key.pk, key.name)
    assert entry.agent_id == agent.pk
    assert entry.changes == {"prefix": key.prefix}
    assert entry.request_id.startswith("req_")


def test_behind_trusted_proxies_the_address_is_the_one_the_outer_proxy_saw(
    owner_client, agent, settings
):
    settings.TRUSTED_PROXY_COUNT = 1
    owner_client.post(
        "/agents/new/",
        {"name": "Proxied"},
        REMOTE_ADDR="10.0.0.2",
        HTTP_X_FORWARDED_FOR="198.51.100.1, 192.0.2.44",  # the client may forge the left part
    )
    (entry,) = _entries(agent.workspace, target_name="Proxied")
    assert entry.ip == "192.0.2.44"

    settings.TRUSTED_PROXY_COUNT = 0  # no proxy trusted: the header is the client's own words
    owner_client.post(
        "/agents/new/",
        {"name": "Direct"},
        REMOTE_ADDR="10.0.0.2",
        HTTP_X_FORWARDED_FOR="192.0.2.44",
    )
    assert _entries(agent.workspace, target_name="Direct")[0].ip == "10.0.0.2"


def test_a_connected_application_is_its_own_kind_of_actor(owner, agent):
    obtain_grant(owner, agent, ["agents:write"])
    connection_row = ConnectedApplication.objects.get(agent=agent)
    (connected,) = _entries(agent.workspace, action="connected_app.connected")
    assert (connected.actor_type, connected.actor_id) == ("user", "owner@example.com")
    assert connected.changes == {"scopes": ["agents:write"]}
    raw, _token = resource_token_sign(
        connection_id=connection_row.pk,
        grant_key=connection_row.grant_key,
        scopes=["agents:write"],
        audience="http://testserver/v1",
        not_after=timezone.now() + timedelta(hours=1),
    )
    answer = ApiClient(raw).patch(f"/v1/agents/{agent.pk}", json={"description": "by the app"})
    assert answer.status == 200, answer.body

    (entry,) = _entries(agent.workspace, action="agent.updated")
    assert entry.actor_type == "oauth_app"
    assert entry.actor_id == connection_row.grant_key.pk
    assert entry.actor_name == "Test MCP client"
    assert entry.changes == {"description": {"from": "", "to": "by the app"}, "revision": 2}


def test_disconnecting_an_application_is_recorded(owner_client, owner, agent):
    obtain_grant(owner, agent, ["runs:read"])
    connection_row = ConnectedApplication.objects.get(agent=agent)
    owner_client.post(f"/connected-apps/{connection_row.pk}/revoke/")
    (entry,) = _entries(agent.workspace, action="connected_app.disconnected")
    assert (entry.actor_type, entry.target_id) == ("user", connection_row.pk)


def test_outside_a_request_the_actor_is_the_system(agent):
    services.agent_update(
        workspace_id=agent.workspace_id,
        agent_id=agent.pk,
        changes={"model_id": "gpt-4.1-mini"},
        actor=services.SYSTEM_ACTOR,
    )
    key, _raw = api_key_factory(agent=agent, scopes=["runs:read"])
    services.api_key_revoke(agent=agent, key_id=key.pk, by_user=None)
    for entry in _entries(agent.workspace, action__in=["agent.updated", "api_key.revoked"]):
        assert (entry.actor_type, entry.actor_id, entry.ip) == ("system", "", None)


@pytest.mark.smoke
def test_a_change_that_fails_leaves_no_entry(agent, api):
    # The entry is written in the change's transaction: when the change rolls back, so does it.
    with pytest.raises(RuntimeError), transaction.atomic():
        services.agent_create(workspace=agent.workspace, name="Doomed")
        assert _entries(agent.workspace, target_name="Doomed")
        raise RuntimeError("the rest of the change failed")
    assert _entries(agent.workspace, target_name="Doomed") == []
    # A refused change records nothing either.
    refused = api.post(f"/v1/agents/{agent.pk}/archive", json={})  # its own key's Agent: 409
    assert refused.status == 409
    assert _entries(agent.workspace, action="agent.archived") == []


def test_sending_the_values_already_set_records_nothing(agent, api):
    assert api.patch(f"/v1/agents/{agent.pk}", json={"name": agent.name}).status == 200
    assert _entries(agent.workspace, action="agent.updated") == []


def test_an_unknown_action_is_refused_so_every_action_is_documented(agent):
    with pytest.raises(ValueError, match="AUDIT_ACTIONS"):
        audit_record(workspace_id=agent.workspace_id, action="key.made", target_type="api_key")


def test_a_secret_field_is_redacted_whatever_a_caller_passes(agent):
    entry = audit_record(
        workspace_id=agent.workspace_id,
        action="webhook.updated",
        target_type="webhook",
        changes={"signing_secret": "whsec_abc", "url": {"from": None, "to": "https://x.example"}},
    )
    entry.refresh_from_db()
    assert entry.changes == {
        "signing_secret": "[redacted]",
        "url": {"from": None, "to": "https://x.example"},
    }


def test_reads_write_nothing_to_the_log(api, agent, owner_client):
    run_factory(agent=agent)
    with CaptureQueriesContext(connection) as queries:
        assert api.get("/v1/runs").status == 200
        assert api.get("/v1/knowledge").status == 200
        assert owner_client.get("/runs/").status_code == 200
    assert not [q for q in queries.captured_queries if "workspaces_auditevent" in q["sql"]]


# --- Console changes beyond the API ----------------------------------------------------------


def test_a_member_disabling_a_document_in_the_console_is_recorded(member_client, agent):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from apps.knowledge.services import document_create_from_upload

    document = document_create_from_upload(
        agent=agent, upload=SimpleUploadedFile("faq.md", b"# FAQ", "text/markdown")
    )
    member_client.post(f"/knowledge/{document.pk}/toggle/", {"is_enabled": "false"})
    (entry,) = _entries(agent.workspace, action="document.disabled")
    assert (entry.actor_type, entry.actor_id) == ("user", "member@example.com")
    assert (entry.target_id, entry.target_name) == (document.pk, "faq.md")
    assert entry.changes == {"is_enabled": {"from": True, "to": False}}


def test_credit_limit_and_retention_changes_are_recorded(owner_client, agent):
    owner_client.post("/usage/limit/", {"monthly_credit_limit": "1000"})
    owner_client.post("/retention/", {"activity": "90"})
    limit = _entries(agent.workspace, action="workspace.credit_limit_changed")
    assert [entry.changes for entry in limit] == [
        {"monthly_credit_limit": {"from": None, "to": "1000.00"}}
    ]
    (policy,) = _entries(agent.workspace, action="retention.policy_changed")
    assert policy.changes == {"activity_days": {"from": None, "to": 90}}
    assert policy.actor_type == "user"


def test_retention_records_what_it_deleted_as_the_system(agent, workspace, settings):
    from apps.retention.services import retention_policy_set

    retention_policy_set(workspace=workspace, activity_days=30)
    long_ago = timezone.now() - timedelta(days=40)
    conversation = conversation_factory(agent=agent, created_at=long_ago, updated_at=long_ago)
    run_factory(agent=agent, conversation=conversation, created_at=long_ago)
    message_factory(conversation=conversation, created_at=long_ago)
    retention_apply()
    (entry,) = _entries(workspace, action="retention.activity_purged")
    assert entry.actor_type == "system"
    assert {key: value for key, value in entry.changes.items() if key != "before"} == {
        "conversations": 1,
        "messages": 1,
        "runs": 1,
        "scores": 0,
        "unanswered_questions": 0,
        "webhook_deliveries": 0,
    }


def test_audit_entries_past_their_period_are_deleted_and_counted(agent, workspace, settings):
    settings.AUDIT_RETENTION_DAYS = 365
    with time_machine.travel(timezone.now() - timedelta(days=400)):
        old = services.agent_create(workspace=workspace, name="Long ago")
    services.agent_create(workspace=workspace, name="Recent")
    run = retention_apply()
    assert run.audit_events == {workspace.pk: 1}
    assert not AuditEvent.objects.filter(target_id=old.pk).exists()
    assert _entries(workspace, action="agent.created")[-1].target_name == "Recent"
    (purged,) = _entries(workspace, action="retention.audit_events_purged")
    assert purged.changes["audit_events"] == 1

    settings.AUDIT_RETENTION_DAYS = 0  # forever
    with time_machine.travel(timezone.now() + timedelta(days=4000)):
        assert retention_apply().audit_events == {}


# --- GET /v1/audit_events --------------------------------------------------------------------


@pytest.mark.smoke
def test_the_list_is_the_workspaces_entries_newest_first_with_exact_fields(
    audit_api, agent, other_agent
):
    services.agent_create(workspace=agent.workspace, name="First")
    services.agent_create(workspace=agent.workspace, name="Second")
    services.agent_create(workspace=other_agent.workspace, name="Theirs")

    response = audit_api.get("/v1/audit_events", params={"action": "agent.created"})
    assert response.status == 200, response.body
    body = response.json()
    assert set(body) == {"object", "data", "has_more", "next_cursor"}
    names = [event["target"]["name"] for event in body["data"]]
    assert names == ["Second", "First", "Support Agent"]  # nothing of the other workspace
    assert {event["workspace_id"] for event in body["data"]} == {agent.workspace_id}
    event = body["data"][0]
    assert set(event) == EVENT_KEYS
    assert event["object"] == "audit_event"
    assert event["action"] == "agent.created"
    assert event["actor"] == {"type": "system", "id": None, "name": "System"}
    assert set(event["target"]) == {"type", "id", "name"}
    assert event["target"]["type"] == "agent"
    assert event["changes"]["name"] == {"from": None, "to": "Second"}
    assert event["ip"] is None and event["request_id"] is None
    assert event["created_at"].endswith("Z")


def test_pages_walk_every_entry_once(audit_api, agent):
    for number in range(5):
        services.agent_create(workspace=agent.workspace, name=f"Agent {number}")
    seen, after = [], None
    while True:
        params = {"limit": "2", **({"after": after} if after else {})}
        body = audit_api.get("/v1/audit_events", params=params).json()
        seen += [event["id"] for event in body["data"]]
        if not body["has_more"]:
            assert body["next_cursor"] is None
            break
        after = body["next_cursor"]
    newest_first = AuditEvent.objects.filter(workspace=agent.workspace).order_by(
        "-created_at", "-id"
    )
    assert seen == list(newest_first.values_list("id", flat=True))
    assert len(seen) >= 7


def test_filters_keep_what_they_name(audit_api, agent, api):
    created = api.post("/v1/api_keys", json={"name": "Narrow", "scopes": ["runs:read"]}).json()
    api.post(f"/v1/api_keys/{created['id']}/revoke", json={})
    other = services.agent_create(workspace=agent.workspace, name="Other")
    total = AuditEvent.objects.filter(workspace=agent.workspace).count()

    def listed(**params) -> list[tuple[str, str]]:
        response = audit_api.get("/v1/audit_events", params=params)
        assert response.status == 200, response.body
        return [(e["action"], e["target"]["name"]) for e in response.json()["data"]]

    assert listed(action="api_key.revoked") == [("api_key.revoked", "Narrow")]
    assert listed(action="api_key", actor_id=api.key.pk) == [
        ("api_key.revoked", "Narrow"),
        ("api_key.created", "Narrow"),
    ]
    assert listed(actor_type="system", action="agent") == [
        ("agent.created", "Other"),
        ("agent.created", "Support Agent"),
    ]
    assert listed(actor_type="api_key") == [
        ("api_key.revoked", "Narrow"),
        ("api_key.created", "Narrow"),
    ]
    assert [name for _, name in listed(target_id=created["id"])] == ["Narrow", "Narrow"]
    assert listed(agent_id=other.pk) == [("agent.created", "Other")]
    now = timezone.now()
    five_minutes_ago = (now - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert listed(until=five_minutes_ago) == []
    assert len(listed(since=five_minutes_ago, limit="100")) == total
    today = now.date().isoformat()
    assert len(listed(since=today, until=today, limit="100")) == total


@pytest.mark.parametrize(
    ("params", "names"),
    [
        ({"action": "key.made"}, "action"),
        ({"actor_type": "robot"}, "actor_type"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-03-01T10:00:00"}, "zone"),
        ({"since": "2026-03-02", "until": "2026-03-01"}, "before until"),
        ({"limit": "0"}, "limit"),
        ({"after": "forged"}, "cursor"),
    ],
)
def test_bad_filters_are_400_naming_the_fault(audit_api, params, names):
    response = audit_api.get("/v1/audit_events", params=params)
    assert response.status == 400
    assert response.json()["name"] == "bad_request"
    assert names in response.json()["message"]


def test_reading_the_log_needs_its_scope_and_an_owner(make_api, member):
    missing = make_api(["runs:read"]).get("/v1/audit_events")
    assert missing.status == 403
    assert 'scope="audit_log:read"' in missing.headers["WWW-Authenticate"]
    of_a_member = make_api(["audit_log:read"], created_by=member).get("/v1/audit_events")
    assert of_a_member.status == 403
    assert "owner" in of_a_member.json()["message"]


def test_every_recorded_action_is_documented():
    with open("docs/audit-log.md", encoding="utf-8") as handle:
        text = handle.read()
    assert [action for action in AUDIT_ACTIONS if f"`{action}`" not in text] == []


# --- The console's Audit log page ------------------------------------------------------------


@pytest.mark.smoke
def test_the_page_shows_who_did_what_and_is_for_owners_only(owner_client, member_client, agent):
    owner_client.post("/agents/new/", {"name": "Paged"}, REMOTE_ADDR="192.0.2.7")
    page = owner_client.get("/audit-log/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "agent.created" in html and "Olive Owner" in html and "192.0.2.7" in html
    assert "name: — → Paged" in html
    assert member_client.get("/audit-log/").status_code == 403
    assert "Audit log" in html  # its navigation entry, for owners


def test_the_page_filters_and_answers_htmx_with_its_table(owner_client, agent):
    services.agent_create(workspace=agent.workspace, name="Kept")
    key, _raw = api_key_factory(agent=agent, scopes=["runs:read"])
    services.api_key_revoke(agent=agent, key_id=key.pk, by_user=None)
    partial = owner_client.get(
        "/audit-log/?action=api_key", headers={"HX-Request": "true", "HX-Target": "audit-table"}
    )
    html = partial.content.decode()
    assert "<html" not in html and 'id="audit-table"' in html
    assert "api_key.revoked" in html and "agent.created" not in html
    bad = owner_client.get("/audit-log/?since=someday")
    assert bad.status_code == 200 and "since:" in bad.content.decode()


def test_the_export_holds_every_matching_entry_and_is_itself_recorded(owner_client, agent):
    for number in range(3):
        services.agent_create(workspace=agent.workspace, name=f"Export {number}")
    response = owner_client.get("/audit-log/export/?format=csv&action=agent.created")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    names = [row["target_name"] for row in rows]
    assert names == ["Export 2", "Export 1", "Export 0", "Support Agent"]
    assert rows[0]["actor_type"] == "system" and rows[0]["action"] == "agent.created"

    as_json = owner_client.get("/audit-log/export/?format=json&action=agent")
    events = orjson.loads(b"".join(as_json.streaming_content))
    assert {event["object"] for event in events} == {"audit_event"}
    assert set(events[0]) == EVENT_KEYS

    exports = _entries(agent.workspace, action="audit_log.exported")
    assert [entry.changes for entry in exports] == [
        {"format": "csv", "filters": {"action": "agent.created"}},
        {"format": "json", "filters": {"action": "agent"}},
    ]
    refused = owner_client.get("/audit-log/export/?format=xml")
    assert refused.status_code == 302
