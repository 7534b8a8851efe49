"""/v1/agents, its revisions and /v1/workspaces (extensions): exact shapes and orders, strict
bodies, the errors, scope and owner checks, and tenancy (another workspace's Agent is 404)."""

import pytest

from apps.workspaces.models import Agent, AgentRevision
from tests.conftest import ApiClient
from tests.factories import agent_factory, membership_factory, user_factory

pytestmark = pytest.mark.django_db

AGENT_KEYS = {
    "object",
    "id",
    "workspace_id",
    "name",
    "description",
    "instructions",
    "model_id",
    "effort",
    "knowledge_search_enabled",
    "allowed_origins",
    "status",
    "revision",
    "created_at",
    "updated_at",
    "archived_at",
}
REVISION_KEYS = {
    "object",
    "id",
    "agent_id",
    "number",
    "kind",
    "restored_from",
    "changed_fields",
    "configuration",
    "actor",
    "created_at",
}
CONFIGURATION_KEYS = {
    "name",
    "description",
    "instructions",
    "model_id",
    "effort",
    "knowledge_search_enabled",
    "allowed_origins",
}
LIST_KEYS = {"object", "data", "has_more", "next_cursor"}


def assert_error(response, status: int, name: str) -> dict:
    assert response.status == status, response.body
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"name", "message"}
    assert body["name"] == name
    return body


def create(api, **body):
    return api.post("/v1/agents", json={"name": "Billing Agent", **body})


# --- create -------------------------------------------------------------------------------


@pytest.mark.smoke
def test_create_returns_the_agent_with_every_field(api, workspace):
    response = create(
        api,
        description="Answers invoice questions",
        instructions="You help with invoices.\nBe brief.",
        model_id="gpt-4.1-mini",
        effort="low",
        knowledge_search_enabled=False,
        allowed_origins=["https://Shop.Example.com:443/", "http://localhost:3000"],
    )

    assert response.status == 201
    body = response.json()
    assert set(body) == AGENT_KEYS
    assert body["object"] == "agent"
    assert body["id"].startswith("agt_")
    assert body["workspace_id"] == workspace.pk
    assert body["name"] == "Billing Agent"
    assert body["instructions"] == "You help with invoices.\nBe brief."
    assert (body["model_id"], body["effort"]) == ("gpt-4.1-mini", "low")
    assert body["knowledge_search_enabled"] is False
    # Normalized: lower-case host, default port and trailing slash dropped.
    assert body["allowed_origins"] == ["https://shop.example.com", "http://localhost:3000"]
    assert (body["status"], body["revision"], body["archived_at"]) == ("active", 1, None)
    assert body["created_at"].endswith("Z")
    assert body["created_at"] == body["updated_at"]


def test_create_with_only_a_name_takes_the_defaults(api):
    body = create(api).json()

    assert (body["description"], body["instructions"]) == ("", "")
    assert (body["model_id"], body["effort"]) == (None, None)
    assert body["knowledge_search_enabled"] is True
    assert body["allowed_origins"] == []


def test_created_agent_is_listed_and_has_revision_one_by_the_key(api):
    agent_id = create(api).json()["id"]

    revisions = api.get(f"/v1/agents/{agent_id}/revisions").json()["data"]
    assert len(revisions) == 1
    first = revisions[0]
    assert set(first) == REVISION_KEYS
    assert (first["number"], first["kind"], first["restored_from"]) == (1, "created", None)
    assert set(first["changed_fields"]) == CONFIGURATION_KEYS
    assert first["actor"] == {"type": "api_key", "id": api.key.pk, "name": api.key.name}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "x" * 121}, "name"),
        ({"name": 5}, "name"),
        ({"name": "A", "surprise": 1}, "surprise"),
        ({"name": "A", "instructions": "x" * 32_001}, "instructions"),
        ({"name": "A", "description": "x" * 1001}, "description"),
        ({"name": "A", "model_id": "gpt 4"}, "model_id"),
        ({"name": "A", "model_id": ""}, "model_id"),
        ({"name": "A", "model_id": 4}, "model_id"),
        ({"name": "A", "effort": "extreme"}, "effort"),
        ({"name": "A", "effort": True}, "effort"),
        ({"name": "A", "knowledge_search_enabled": "true"}, "knowledge_search_enabled"),
        ({"name": "A", "knowledge_search_enabled": 1}, "knowledge_search_enabled"),
        ({"name": "A", "allowed_origins": "https://a.example"}, "allowed_origins"),
        ({"name": "A", "allowed_origins": [5]}, "allowed_origins"),
        ({"name": "A", "allowed_origins": ["https://*.example.com"]}, "allowed_origins"),
        ({"name": "A", "allowed_origins": ["https://a.example/app"]}, "allowed_origins"),
        ({"name": "A", "allowed_origins": ["https://a.example?x=1"]}, "allowed_origins"),
        ({"name": "A", "allowed_origins": ["ftp://a.example"]}, "allowed_origins"),
        ({"name": "A", "allowed_origins": ["a.example"]}, "allowed_origins"),
        ({"name": "A", "allowed_origins": ["https://user@a.example"]}, "allowed_origins"),
        ({"name": "A", "allowed_origins": ["https://a.example:99999"]}, "allowed_origins"),
        ({"name": "A", "allowed_origins": ["https://bad_host.example"]}, "allowed_origins"),
        ({"name": "A", "allowed_origins": [f"https://h{i}.example" for i in range(51)]}, "allowed_origins"),
    ],
)  # fmt: skip
def test_create_refuses_bad_bodies_and_creates_nothing(api, body, field):
    before = Agent.objects.count()

    message = assert_error(api.post("/v1/agents", json=body), 400, "bad_request")["message"]

    assert message.startswith(f"{field}:"), message
    assert Agent.objects.count() == before


def test_create_refuses_a_body_that_is_not_an_object(api):
    assert_error(api.post("/v1/agents", json=["name"]), 400, "bad_request")
    assert_error(
        api.post("/v1/agents", data=b"{not json", content_type="application/json"),
        400,
        "bad_request",
    )


def test_ipv6_and_idn_origins_are_normalized(api):
    body = create(
        api, allowed_origins=["http://[::1]:8080", "https://bücher.example", "https://[::1]"]
    ).json()

    assert body["allowed_origins"] == [
        "http://[::1]:8080",
        "https://xn--bcher-kva.example",
        "https://[::1]",
    ]


def test_duplicate_origins_are_kept_once(api):
    body = create(
        api, allowed_origins=["https://a.example", "HTTPS://A.EXAMPLE:443", "https://a.example/"]
    ).json()

    assert body["allowed_origins"] == ["https://a.example"]


# --- list and retrieve --------------------------------------------------------------------


def test_list_is_the_workspaces_agents_newest_first_with_status_filter(
    api, agent, sibling_agent, other_agent, workspace, time_machine
):
    time_machine.move_to("2030-03-01T10:00:00Z", tick=False)
    archived = agent_factory(workspace=workspace, name="Old")
    Agent.objects.filter(pk=archived.pk).update(status="archived")
    time_machine.move_to("2030-03-01T11:00:00Z", tick=False)
    newest = agent_factory(workspace=workspace, name="Newest")

    everything = api.get("/v1/agents").json()
    assert set(everything) == LIST_KEYS
    ids = [item["id"] for item in everything["data"]]
    assert ids[:2] == [newest.pk, archived.pk]
    assert set(ids) == {agent.pk, sibling_agent.pk, archived.pk, newest.pk}
    assert other_agent.pk not in ids
    assert all(set(item) == AGENT_KEYS for item in everything["data"])

    only_archived = api.get("/v1/agents", params={"status": "archived"}).json()["data"]
    assert [item["id"] for item in only_archived] == [archived.pk]
    only_active = api.get("/v1/agents", params={"status": "active"}).json()["data"]
    assert archived.pk not in [item["id"] for item in only_active]


def test_list_rejects_unknown_status(api):
    message = assert_error(api.get("/v1/agents", params={"status": "deleted"}), 400, "bad_request")[
        "message"
    ]
    assert "status" in message


def test_list_pages_with_cursors_and_no_duplicates(api, workspace):
    for n in range(5):
        agent_factory(workspace=workspace, name=f"Agent {n}")
    seen: list[str] = []
    after = None
    while True:
        params = {"limit": "2", **({"after": after} if after else {})}
        page = api.get("/v1/agents", params=params).json()
        seen += [item["id"] for item in page["data"]]
        if not page["has_more"]:
            assert page["next_cursor"] is None
            break
        after = page["next_cursor"]
    expected = list(
        Agent.objects.filter(workspace=workspace)
        .order_by("-created_at", "-id")
        .values_list("pk", flat=True)
    )
    assert seen == expected


def test_list_refuses_a_tampered_cursor(api, workspace):
    agent_factory(workspace=workspace)
    cursor = api.get("/v1/agents", params={"limit": "1"}).json()["next_cursor"]
    assert_error(api.get("/v1/agents", params={"after": cursor[:-2] + "xx"}), 400, "bad_request")


def test_retrieve_an_archived_sibling(api, sibling_agent):
    Agent.objects.filter(pk=sibling_agent.pk).update(status="archived")

    body = api.get(f"/v1/agents/{sibling_agent.pk}").json()

    assert set(body) == AGENT_KEYS
    assert (body["id"], body["status"]) == (sibling_agent.pk, "archived")


def test_retrieve_own_agent(api, agent):
    assert api.get(f"/v1/agents/{agent.pk}").json()["name"] == "Support Agent"


@pytest.mark.parametrize(
    ("method", "suffix"),
    [
        ("get", ""),
        ("patch", ""),
        ("post", "/archive"),
        ("post", "/restore"),
        ("get", "/revisions"),
    ],
)
def test_another_workspaces_agent_is_not_found(api, other_agent, method, suffix):
    body = {"json": {"name": "x"}} if method != "get" else {}
    response = getattr(api, method)(f"/v1/agents/{other_agent.pk}{suffix}", **body)
    assert_error(response, 404, "not_found")


def test_unknown_agent_is_not_found(api):
    assert_error(api.get("/v1/agents/agt_nope"), 404, "not_found")


def test_the_agent_scoped_form_of_other_paths_still_works(api, agent, sibling_agent):
    """/v1/agents/{agentId} and /v1/agents/{agentId}/<path> coexist."""
    assert api.get(f"/v1/agents/{agent.pk}/connection").status == 200
    assert api.get(f"/v1/agents/{agent.pk}/runs").status == 200
    assert api.get(f"/v1/agents/{sibling_agent.pk}/webhook").status == 200
    assert_error(api.get(f"/v1/agents/{sibling_agent.pk}/runs"), 404, "not_found")


# --- update and revisions -----------------------------------------------------------------


def test_patch_changes_fields_and_records_a_revision(api, agent):
    response = api.patch(
        f"/v1/agents/{agent.pk}",
        json={"instructions": "Be kind.", "effort": "high", "model_id": "o4-mini"},
    )

    assert response.status == 200
    body = response.json()
    assert set(body) == AGENT_KEYS
    assert (body["instructions"], body["effort"], body["model_id"]) == (
        "Be kind.",
        "high",
        "o4-mini",
    )
    assert body["name"] == "Support Agent"
    assert body["revision"] == 2
    assert body["updated_at"] > body["created_at"]

    latest = api.get(f"/v1/agents/{agent.pk}/revisions").json()["data"][0]
    assert (latest["number"], latest["kind"]) == (2, "updated")
    assert latest["changed_fields"] == ["instructions", "model_id", "effort"]
    assert latest["configuration"]["instructions"] == "Be kind."
    assert set(latest["configuration"]) == CONFIGURATION_KEYS
    assert latest["actor"]["type"] == "api_key"


def test_patch_with_the_current_values_writes_no_revision(api, agent):
    response = api.patch(f"/v1/agents/{agent.pk}", json={"name": "Support Agent"})

    assert response.status == 200
    assert response.json()["revision"] == 1
    assert AgentRevision.objects.filter(agent=agent).count() == 1


def test_patch_can_clear_model_and_effort_with_null(api, agent):
    api.patch(f"/v1/agents/{agent.pk}", json={"model_id": "o4-mini", "effort": "low"})

    body = api.patch(f"/v1/agents/{agent.pk}", json={"model_id": None, "effort": None}).json()

    assert (body["model_id"], body["effort"]) == (None, None)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, None),
        ({"name": None}, "name"),
        ({"description": None}, "description"),
        ({"name": "x", "id": "agt_1"}, "id"),
        ({"status": "archived"}, "status"),
        ({"allowed_origins": ["https://a.example/path"]}, "allowed_origins"),
    ],
)
def test_patch_refuses_bad_bodies_and_changes_nothing(api, agent, body, field):
    message = assert_error(api.patch(f"/v1/agents/{agent.pk}", json=body), 400, "bad_request")[
        "message"
    ]

    if field:
        assert message.startswith(f"{field}:"), message
    agent.refresh_from_db()
    assert (agent.revision, agent.name, agent.status) == (1, "Support Agent", "active")


def test_patch_of_archived_agent_is_conflict(api, sibling_agent):
    Agent.objects.filter(pk=sibling_agent.pk).update(status="archived")

    assert_error(
        api.patch(f"/v1/agents/{sibling_agent.pk}", json={"name": "Renamed"}), 409, "conflict"
    )
    sibling_agent.refresh_from_db()
    assert sibling_agent.name == "Sales Agent"


def test_revisions_are_newest_first_and_page(api, agent):
    for n in range(4):
        api.patch(f"/v1/agents/{agent.pk}", json={"description": f"version {n}"})

    first = api.get(f"/v1/agents/{agent.pk}/revisions", params={"limit": "3"}).json()
    assert set(first) == LIST_KEYS
    assert [item["number"] for item in first["data"]] == [5, 4, 3]
    assert first["has_more"] is True
    rest = api.get(
        f"/v1/agents/{agent.pk}/revisions", params={"after": first["next_cursor"]}
    ).json()
    assert [item["number"] for item in rest["data"]] == [2, 1]
    assert (rest["has_more"], rest["next_cursor"]) == (False, None)


def test_retrieve_a_revision_and_not_another_agents(api, agent, sibling_agent):
    api.patch(f"/v1/agents/{agent.pk}", json={"description": "v2"})
    revision = AgentRevision.objects.get(agent=agent, number=2)

    body = api.get(f"/v1/agents/{agent.pk}/revisions/{revision.pk}").json()
    assert set(body) == REVISION_KEYS
    assert (body["id"], body["agent_id"], body["number"]) == (revision.pk, agent.pk, 2)
    assert body["changed_fields"] == ["description"]

    assert_error(
        api.get(f"/v1/agents/{sibling_agent.pk}/revisions/{revision.pk}"), 404, "not_found"
    )


def test_restoring_a_revision_is_itself_a_new_revision(api, agent):
    api.patch(f"/v1/agents/{agent.pk}", json={"instructions": "First prompt", "effort": "low"})
    api.patch(f"/v1/agents/{agent.pk}", json={"instructions": "Second prompt", "effort": None})
    second = AgentRevision.objects.get(agent=agent, number=2)

    response = api.post(f"/v1/agents/{agent.pk}/revisions/{second.pk}/restore")

    assert response.status == 200
    body = response.json()
    assert set(body) == AGENT_KEYS
    assert (body["instructions"], body["effort"], body["revision"]) == ("First prompt", "low", 4)
    latest = api.get(f"/v1/agents/{agent.pk}/revisions").json()["data"][0]
    assert (latest["number"], latest["kind"], latest["restored_from"]) == (4, "restored", 2)
    assert latest["changed_fields"] == ["instructions", "effort"]
    # Nothing was lost: revision 3 is still there to go back to.
    assert AgentRevision.objects.filter(agent=agent).count() == 4


def test_restoring_the_current_revision_changes_nothing(api, agent):
    current = AgentRevision.objects.get(agent=agent, number=1)

    body = api.post(f"/v1/agents/{agent.pk}/revisions/{current.pk}/restore").json()

    assert body["revision"] == 1
    assert AgentRevision.objects.filter(agent=agent).count() == 1


def test_restoring_a_revision_of_an_archived_agent_is_conflict(api, sibling_agent):
    revision = AgentRevision.objects.get(agent=sibling_agent, number=1)
    Agent.objects.filter(pk=sibling_agent.pk).update(status="archived")

    assert_error(
        api.post(f"/v1/agents/{sibling_agent.pk}/revisions/{revision.pk}/restore"),
        409,
        "conflict",
    )


# --- archive and restore ------------------------------------------------------------------


def test_archive_then_restore_a_sibling(api, sibling_agent, make_api):
    sibling_key = make_api(for_agent=sibling_agent)
    assert sibling_key.get("/v1/connection").status == 200

    archived = api.post(f"/v1/agents/{sibling_agent.pk}/archive")

    assert archived.status == 200
    body = archived.json()
    assert set(body) == AGENT_KEYS
    assert body["status"] == "archived"
    assert body["archived_at"].endswith("Z")
    assert body["updated_at"] == body["archived_at"]
    refused = assert_error(sibling_key.get("/v1/connection"), 401, "unauthorized")
    assert refused["message"] == "The API key's Agent is archived."

    restored = api.post(f"/v1/agents/{sibling_agent.pk}/restore").json()

    assert (restored["status"], restored["archived_at"]) == ("active", None)
    assert sibling_key.get("/v1/connection").status == 200


def test_archiving_keeps_configuration_and_history(api, sibling_agent):
    api.patch(f"/v1/agents/{sibling_agent.pk}", json={"instructions": "Keep me"})

    api.post(f"/v1/agents/{sibling_agent.pk}/archive")
    api.post(f"/v1/agents/{sibling_agent.pk}/restore")

    body = api.get(f"/v1/agents/{sibling_agent.pk}").json()
    assert (body["instructions"], body["revision"]) == ("Keep me", 2)
    assert len(api.get(f"/v1/agents/{sibling_agent.pk}/revisions").json()["data"]) == 2


def test_archive_twice_and_restore_of_active_are_conflicts(api, sibling_agent):
    assert_error(api.post(f"/v1/agents/{sibling_agent.pk}/restore"), 409, "conflict")
    api.post(f"/v1/agents/{sibling_agent.pk}/archive")
    assert_error(api.post(f"/v1/agents/{sibling_agent.pk}/archive"), 409, "conflict")


def test_a_key_cannot_archive_its_own_agent(api, agent, sibling_agent):
    message = assert_error(api.post(f"/v1/agents/{agent.pk}/archive"), 409, "conflict")["message"]

    assert "own Agent" in message
    agent.refresh_from_db()
    assert agent.status == "active"
    assert api.get("/v1/connection").status == 200


def test_archive_needs_the_archive_scope_and_an_owner(make_api, member, sibling_agent):
    read_write = make_api(["agents:read", "agents:write"])
    response = read_write.post(f"/v1/agents/{sibling_agent.pk}/archive")
    assert_error(response, 403, "insufficient_scope")
    assert 'scope="agents:archive"' in response.headers["WWW-Authenticate"]

    by_member = make_api(["agents:archive"], created_by=member)
    response = by_member.post(f"/v1/agents/{sibling_agent.pk}/restore")
    assert_error(response, 403, "insufficient_scope")
    assert 'scope="agents:archive"' in response.headers["WWW-Authenticate"]
    sibling_agent.refresh_from_db()
    assert sibling_agent.status == "active"


def test_member_keys_may_create_and_edit(make_api, member, agent):
    client = make_api(["agents:read", "agents:write"], created_by=member)

    assert create(client).status == 201
    assert client.patch(f"/v1/agents/{agent.pk}", json={"description": "by a member"}).status == 200


@pytest.mark.parametrize(
    ("method", "path", "scope"),
    [
        ("get", "/v1/agents", "agents:read"),
        ("post", "/v1/agents", "agents:write"),
        ("get", "/v1/agents/{id}", "agents:read"),
        ("patch", "/v1/agents/{id}", "agents:write"),
        ("get", "/v1/agents/{id}/revisions", "agents:read"),
        ("post", "/v1/agents/{id}/revisions/{rev}/restore", "agents:write"),
        ("post", "/v1/agents/{id}/archive", "agents:archive"),
        ("get", "/v1/workspaces", "workspaces:read"),
    ],
)
def test_each_operation_names_its_scope(make_api, agent, method, path, scope):
    from apps.api.scopes import ALL_SCOPES

    client = make_api([s for s in ALL_SCOPES if s != scope])
    revision = AgentRevision.objects.get(agent=agent, number=1)
    url = path.format(id=agent.pk, rev=revision.pk)

    response = getattr(client, method)(url, **({"json": {"name": "x"}} if method != "get" else {}))

    body = assert_error(response, 403, "insufficient_scope")
    assert scope in body["message"]
    assert response.headers["WWW-Authenticate"] == (
        f'Bearer realm="agent-console", error="insufficient_scope", scope="{scope}", '
        f'error_description="{body["message"]}"'
    )


def test_missing_key_is_unauthorized_with_the_challenge(agent):
    response = ApiClient(None).get("/v1/agents")
    assert_error(response, 401, "unauthorized")
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="agent-console"'


def test_unsupported_method_is_bad_request_with_allow(api, agent):
    response = api.delete(f"/v1/agents/{agent.pk}")
    assert_error(response, 400, "bad_request")
    assert set(response.headers["Allow"].replace(" ", "").split(",")) >= {"GET", "PATCH"}


# --- workspaces ---------------------------------------------------------------------------


def test_workspaces_lists_the_keys_own_workspace_with_the_creators_role(
    api, workspace, other_agent
):
    body = api.get("/v1/workspaces").json()

    assert set(body) == LIST_KEYS
    assert (body["has_more"], body["next_cursor"]) == (False, None)
    assert body["data"] == [
        {
            "object": "workspace",
            "id": workspace.pk,
            "name": "Acme",
            "role": "owner",
            "created_at": body["data"][0]["created_at"],
        }
    ]
    assert body["data"][0]["created_at"].endswith("Z")


def test_workspaces_role_is_member_or_null(make_api, member, agent):
    by_member = make_api(["workspaces:read"], created_by=member)
    assert by_member.get("/v1/workspaces").json()["data"][0]["role"] == "member"

    nobody = make_api(["workspaces:read"], created_by=None)
    assert nobody.get("/v1/workspaces").json()["data"][0]["role"] is None

    former = user_factory()
    membership = membership_factory(workspace=agent.workspace, user=former)
    by_former = make_api(["workspaces:read"], created_by=former)
    membership.delete()
    assert by_former.get("/v1/workspaces").json()["data"][0]["role"] is None


def test_workspaces_rejects_a_bad_limit(api):
    assert_error(api.get("/v1/workspaces", params={"limit": "0"}), 400, "bad_request")


# --- cost ---------------------------------------------------------------------------------


def _queries(api, path: str) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        assert api.get(path).status == 200
    return len(captured)


def test_list_pages_cost_a_constant_number_of_queries(api, agent, workspace, owner):
    from apps.workspaces.services import actor_for_user, agent_update

    api.get("/v1/agents")  # warm the key cache and last_used_at
    small = _queries(api, "/v1/agents?limit=100")
    revisions_small = _queries(api, f"/v1/agents/{agent.pk}/revisions?limit=100")
    for n in range(15):
        agent_factory(workspace=workspace, name=f"More {n}")
        agent_update(
            workspace_id=workspace.pk,
            agent_id=agent.pk,
            changes={"description": f"v{n}"},
            actor=actor_for_user(owner),
        )
    api.get("/v1/agents")  # saving an Agent drops its keys from the cache: warm it again

    assert _queries(api, "/v1/agents?limit=100") == small
    assert _queries(api, f"/v1/agents/{agent.pk}/revisions?limit=100") == revisions_small


def test_every_new_operation_is_a_tagged_extension():
    from django.test import Client

    document = Client().get("/v1/openapi.json").json()
    paths = [p for p in document["paths"] if p.startswith(("/v1/agents", "/v1/workspaces"))]
    ours = [
        (path, op)
        for path in paths
        for method, op in document["paths"][path].items()
        if method in {"get", "post", "patch"}
        and op.get("x-required-scope", "").startswith(("agents:", "workspaces:"))
    ]
    assert len(ours) == 10
    for path, op in ours:
        assert op.get("x-extension") is True, path
        assert op["tags"] in (["Agents"], ["Workspaces"]), path
        assert op["summary"] and op["description"], path
