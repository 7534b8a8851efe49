"""POST/GET /v1/api_keys and POST /v1/api_keys/{id}/revoke: exact shapes, the narrowing rules,
scope and owner checks, tenancy and expiry."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.api.scopes import ALL_SCOPES
from apps.workspaces.models import Agent, ApiKey
from tests.conftest import ApiClient
from tests.factories import agent_factory

pytestmark = pytest.mark.django_db

KEY_FIELDS = {
    "object",
    "id",
    "name",
    "prefix",
    "agent_id",
    "scopes",
    "status",
    "parent_id",
    "created_at",
    "last_used_at",
    "expires_at",
    "revoked_at",
}
MANAGER_SCOPES = ["api_keys:create", "auth_tokens:create", "runs:read", "users:read"]


@pytest.fixture
def manager(make_api):
    """An owner's key that may manage keys, holding a few read permissions besides."""
    return make_api(MANAGER_SCOPES)


def assert_error(response, status: int, name: str) -> dict:
    assert response.status == status, response.body
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"name", "message"}
    assert body["name"] == name
    return body


def test_create_returns_the_key_once_with_exact_fields(manager, agent):
    response = manager.post("/v1/api_keys", json={"name": "Reporting", "scopes": ["runs:read"]})
    assert response.status == 201
    body = response.json()
    assert set(body) == KEY_FIELDS | {"secret"}
    assert body["object"] == "api_key"
    assert body["id"].startswith("key_")
    assert body["agent_id"] == agent.pk
    assert body["scopes"] == ["runs:read"]
    assert body["status"] == "active"
    assert body["parent_id"] == manager.key.pk
    assert body["expires_at"] is None and body["revoked_at"] is None
    assert body["created_at"].endswith("Z")
    assert body["secret"].startswith(body["prefix"])
    child = ApiClient(body["secret"])
    assert child.get("/v1/runs").status == 200
    assert_error(child.get("/v1/users"), 403, "insufficient_scope")
    stored = ApiKey.objects.get(pk=body["id"])
    assert stored.created_by_id == manager.key.created_by_id
    assert body["secret"] not in manager.get("/v1/api_keys").body.decode()


def test_child_key_connection_reports_its_expiry(manager):
    expires_at = (timezone.now() + timedelta(days=7)).replace(microsecond=0)
    body = manager.post(
        "/v1/api_keys",
        json={"name": "Week", "scopes": ["users:read"], "expires_at": expires_at.isoformat()},
    ).json()
    assert body["expires_at"] == expires_at.isoformat(timespec="milliseconds").replace(
        "+00:00", "Z"
    )
    connection = ApiClient(body["secret"]).get("/v1/connection").json()
    assert connection["credential"]["expires_at"] == body["expires_at"]
    assert connection["is_owner"] is True


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scopes": ["runs:read"]}, "name"),
        ({"name": "", "scopes": ["runs:read"]}, "name"),
        ({"name": "x" * 121, "scopes": ["runs:read"]}, "name"),
        ({"name": 5, "scopes": ["runs:read"]}, "name"),
        ({"name": "k"}, "scopes"),
        ({"name": "k", "scopes": []}, "scopes"),
        ({"name": "k", "scopes": "runs:read"}, "scopes"),
        ({"name": "k", "scopes": [1]}, "scopes"),
        ({"name": "k", "scopes": ["runs:write"]}, "scopes"),
        ({"name": "k", "scopes": ["api_keys:create"]}, "scopes"),
        ({"name": "k", "scopes": ["runs:read"], "expires_at": "tomorrow"}, "expires_at"),
        ({"name": "k", "scopes": ["runs:read"], "expires_at": 1767225600}, "expires_at"),
        (
            {"name": "k", "scopes": ["runs:read"], "expires_at": "2001-01-01T00:00:00Z"},
            "expires_at",
        ),
        ({"name": "k", "scopes": ["runs:read"], "agent_id": 7}, "agent_id"),
        ({"name": "k", "scopes": ["runs:read"], "extra": True}, "extra"),
    ],
)
def test_bad_bodies_are_bad_request_naming_the_field_and_create_nothing(manager, body, field):
    before = ApiKey.objects.count()
    message = assert_error(manager.post("/v1/api_keys", json=body), 400, "bad_request")["message"]
    assert message.startswith(f"{field}:"), message
    assert ApiKey.objects.count() == before


def test_malformed_json_and_non_object_bodies_are_bad_request(manager):
    assert_error(
        manager.post("/v1/api_keys", data=b"{", content_type="application/json"),
        400,
        "bad_request",
    )
    assert_error(manager.post("/v1/api_keys", json=["runs:read"]), 400, "bad_request")


def test_scopes_beyond_the_callers_are_insufficient_scope_naming_them(manager):
    response = manager.post(
        "/v1/api_keys", json={"name": "k", "scopes": ["runs:read", "knowledge:write"]}
    )
    body = assert_error(response, 403, "insufficient_scope")
    assert "knowledge:write" in body["message"]
    assert 'scope="knowledge:write"' in response.headers["WWW-Authenticate"]


def test_creating_needs_auth_tokens_create_too(make_api):
    client = make_api(["api_keys:create", "runs:read"])
    response = client.post("/v1/api_keys", json={"name": "k", "scopes": ["runs:read"]})
    assert_error(response, 403, "insufficient_scope")
    assert 'scope="auth_tokens:create"' in response.headers["WWW-Authenticate"]
    assert_error(client.get("/v1/api_keys"), 403, "insufficient_scope")


def test_creating_needs_a_key_created_by_an_owner(make_api, member):
    client = make_api(MANAGER_SCOPES, created_by=member)
    response = client.post("/v1/api_keys", json={"name": "k", "scopes": ["runs:read"]})
    assert_error(response, 403, "insufficient_scope")
    assert 'scope="api_keys:create"' in response.headers["WWW-Authenticate"]


def test_a_key_without_api_keys_create_is_refused(make_api):
    client = make_api([s for s in ALL_SCOPES if s != "api_keys:create"])
    response = client.post("/v1/api_keys", json={"name": "k", "scopes": ["runs:read"]})
    assert_error(response, 403, "insufficient_scope")
    assert 'scope="api_keys:create"' in response.headers["WWW-Authenticate"]


def test_agent_id_targets_another_active_agent_of_the_workspace(manager, sibling_agent):
    body = manager.post(
        "/v1/api_keys",
        json={"name": "Sales", "scopes": ["runs:read"], "agent_id": sibling_agent.pk},
    ).json()
    assert body["agent_id"] == sibling_agent.pk
    connection = ApiClient(body["secret"]).get("/v1/connection").json()
    assert connection["agent"]["id"] == sibling_agent.pk


def test_agent_path_form_targets_that_agent(manager, sibling_agent):
    response = manager.post(
        f"/v1/agents/{sibling_agent.pk}/api_keys", json={"name": "S", "scopes": ["runs:read"]}
    )
    assert response.status == 201
    assert response.json()["agent_id"] == sibling_agent.pk
    listed = manager.get(f"/v1/agents/{sibling_agent.pk}/api_keys").json()["data"]
    assert [key["name"] for key in listed] == ["S"]


def test_agent_id_differing_from_the_path_is_bad_request(manager, agent, sibling_agent):
    response = manager.post(
        f"/v1/agents/{agent.pk}/api_keys",
        json={"name": "S", "scopes": ["runs:read"], "agent_id": sibling_agent.pk},
    )
    assert_error(response, 400, "bad_request")


def test_other_workspaces_or_archived_agent_is_not_found(manager, other_agent, workspace):
    archived = agent_factory(workspace=workspace)
    Agent.objects.filter(pk=archived.pk).update(status=Agent.Status.ARCHIVED)
    for agent_id in (other_agent.pk, archived.pk, "agt_nope"):
        body = {"name": "k", "scopes": ["runs:read"], "agent_id": agent_id}
        assert_error(manager.post("/v1/api_keys", json=body), 404, "not_found")
    for agent_id in (other_agent.pk, archived.pk):
        path = f"/v1/agents/{agent_id}/api_keys"
        assert_error(
            manager.post(path, json={"name": "k", "scopes": ["runs:read"]}), 404, "not_found"
        )
        assert_error(manager.get(path), 404, "not_found")
    assert not ApiKey.objects.filter(agent=other_agent).exists()


def test_child_of_an_expiring_key_expires_with_it_at_the_latest(make_api, agent, owner):
    from tests.factories import api_key_factory

    parent_expiry = timezone.now() + timedelta(days=3)
    parent, raw = api_key_factory(agent=agent, scopes=MANAGER_SCOPES, created_by=owner)
    ApiKey.objects.filter(pk=parent.pk).update(expires_at=parent_expiry)
    client = ApiClient(raw)
    body = client.post("/v1/api_keys", json={"name": "k", "scopes": ["runs:read"]}).json()
    assert ApiKey.objects.get(pk=body["id"]).expires_at == parent_expiry
    later = (parent_expiry + timedelta(days=1)).isoformat()
    response = client.post(
        "/v1/api_keys", json={"name": "k", "scopes": ["runs:read"], "expires_at": later}
    )
    assert "expires_at" in assert_error(response, 400, "bad_request")["message"]


def test_list_is_newest_first_keyset_paged_without_secrets(manager, agent, sibling_agent):
    names = [f"k{i}" for i in range(5)]
    for name in names:
        manager.post("/v1/api_keys", json={"name": name, "scopes": ["runs:read"]})
    manager.post(
        "/v1/api_keys",
        json={"name": "elsewhere", "scopes": ["runs:read"], "agent_id": sibling_agent.pk},
    )
    seen, cursor = [], None
    while True:
        params = {"limit": "2", **({"after": cursor} if cursor else {})}
        page = manager.get("/v1/api_keys", params=params).json()
        assert set(page) == {"object", "data", "has_more", "next_cursor"}
        for item in page["data"]:
            assert set(item) == KEY_FIELDS
        seen += [item["name"] for item in page["data"]]
        if not page["has_more"]:
            assert page["next_cursor"] is None
            break
        cursor = page["next_cursor"]
    assert seen == [*reversed(names), "Test key"]
    assert_error(manager.get("/v1/api_keys", params={"limit": "0"}), 400, "bad_request")
    assert_error(manager.get("/v1/api_keys", params={"after": "forged"}), 400, "bad_request")


def test_revoke_stops_the_key_and_leaves_the_parent_and_siblings(manager):
    first = manager.post("/v1/api_keys", json={"name": "a", "scopes": ["runs:read"]}).json()
    second = manager.post("/v1/api_keys", json={"name": "b", "scopes": ["runs:read"]}).json()
    response = manager.post(f"/v1/api_keys/{first['id']}/revoke")
    assert response.status == 200
    body = response.json()
    assert set(body) == KEY_FIELDS
    assert body["status"] == "revoked" and body["revoked_at"].endswith("Z")
    assert ApiClient(first["secret"]).get("/v1/runs").status == 401
    assert ApiClient(second["secret"]).get("/v1/runs").status == 200
    assert manager.get("/v1/runs").status == 200
    assert_error(manager.post(f"/v1/api_keys/{first['id']}/revoke"), 409, "conflict")


def test_revoking_the_parent_leaves_its_children_working(manager, make_api, agent):
    child = manager.post("/v1/api_keys", json={"name": "c", "scopes": ["runs:read"]}).json()
    # Another key revokes it: a key never revokes itself (tests/api/test_consistency.py).
    other_manager = make_api(MANAGER_SCOPES)
    assert other_manager.post(f"/v1/api_keys/{manager.key.pk}/revoke").status == 200
    assert manager.get("/v1/runs").status == 401
    assert ApiClient(child["secret"]).get("/v1/runs").status == 200


def test_revoke_of_another_agents_key_is_not_found(manager, make_api, other_agent, sibling_agent):
    from tests.factories import api_key_factory

    theirs, _ = api_key_factory(agent=other_agent, scopes=["runs:read"])
    sibling, _ = api_key_factory(agent=sibling_agent, scopes=["runs:read"])
    for key_id in (theirs.pk, sibling.pk, "key_nope"):
        assert_error(manager.post(f"/v1/api_keys/{key_id}/revoke"), 404, "not_found")
    assert_error(
        manager.post(f"/v1/agents/{other_agent.pk}/api_keys/{theirs.pk}/revoke"), 404, "not_found"
    )
    # The agent form reaches a sibling Agent of the same workspace.
    assert manager.post(f"/v1/agents/{sibling_agent.pk}/api_keys/{sibling.pk}/revoke").status == 200
    theirs.refresh_from_db()
    assert theirs.revoked_at is None


def test_browser_token_cannot_manage_keys(manager):
    token = manager.post("/v1/auth_tokens", json={"external_id": "u1"}).json()["token"]
    response = ApiClient(token).get("/v1/api_keys")
    assert_error(response, 403, "insufficient_scope")
    assert 'scope="api_keys:create"' in response.headers["WWW-Authenticate"]


def test_get_of_revoke_is_bad_request_with_allow(manager):
    response = manager.get(f"/v1/api_keys/{manager.key.pk}/revoke")
    assert_error(response, 400, "bad_request")
    assert "POST" in response.headers["Allow"]
