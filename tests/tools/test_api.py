"""/v1/mcp_servers: exact shapes, both path forms, strict bodies, owner-only writes, keyset
lists, 404 for another Agent's server, and header values that never come back."""

from __future__ import annotations

import pytest

from apps.tools import tasks
from apps.tools.models import McpServer
from tests.tools.factories import tool_server_factory

pytestmark = pytest.mark.django_db

SERVER_KEYS = {
    "object",
    "id",
    "agent_id",
    "name",
    "url",
    "enabled",
    "status",
    "error_message",
    "transport",
    "auth_header_names",
    "tool_count",
    "last_discovered_at",
    "next_discovery_at",
    "created_at",
    "updated_at",
}
TOOL_KEYS = {
    "object",
    "id",
    "server_id",
    "name",
    "description",
    "input_schema",
    "enabled",
    "first_seen_at",
    "updated_at",
}
DISCOVERY_KEYS = {
    "object",
    "id",
    "server_id",
    "status",
    "trigger",
    "error_message",
    "transport",
    "tool_count",
    "tools_added",
    "tools_removed",
    "tools_schema_changed",
    "tools_description_changed",
    "started_at",
    "finished_at",
}
PUBLIC_URL = "https://93.184.215.14/mcp"


@pytest.fixture
def tools_api(make_api):
    return make_api(["mcp_servers:read", "mcp_servers:write"])


def _create(api, url=PUBLIC_URL, **body):
    response = api.post("/v1/mcp_servers", json={"url": url, **body})
    assert response.status == 201, response.body
    return response.json()


def test_create_returns_a_pending_server_without_header_values(tools_api, agent):
    body = _create(
        tools_api,
        name="Weather",
        auth_headers={"Authorization": "Bearer secret-value", "X-Api-Key": "k-999"},
    )
    assert set(body) == SERVER_KEYS
    assert body["object"] == "mcp_server"
    assert body["id"].startswith("mcp_")
    assert body["agent_id"] == agent.pk
    assert (body["status"], body["enabled"], body["tool_count"]) == ("pending", True, 0)
    assert body["auth_header_names"] == ["Authorization", "X-Api-Key"]
    assert body["created_at"].endswith("Z")
    assert body["last_discovered_at"] is None
    again = tools_api.get(f"/v1/mcp_servers/{body['id']}")
    for response_text in (str(body), again.body.decode()):
        assert "secret-value" not in response_text
        assert "k-999" not in response_text


def test_name_defaults_to_the_host_and_bare_hosts_become_https(tools_api):
    body = _create(tools_api, url="93.184.215.14/mcp")
    assert body["url"] == "https://93.184.215.14/mcp"
    assert body["name"] == "93.184.215.14"


def test_duplicate_url_for_the_agent_is_conflict(tools_api):
    _create(tools_api)
    response = tools_api.post("/v1/mcp_servers", json={"url": "HTTPS://93.184.215.14:443/mcp"})
    assert response.status == 409
    assert response.json()["name"] == "conflict"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "http://10.0.0.1/mcp"}, "url"),
        ({"url": "ftp://93.184.215.14/"}, "url"),
        ({"url": "http://169.254.169.254/latest"}, "url"),
        ({"url": PUBLIC_URL, "enabled": "true"}, "enabled"),
        ({"url": PUBLIC_URL, "extra": 1}, "extra"),
        ({"url": PUBLIC_URL, "auth_headers": ["Authorization"]}, "auth_headers"),
        ({"url": PUBLIC_URL, "auth_headers": {"Authorization": 5}}, "auth_headers"),
        ({"url": PUBLIC_URL, "auth_headers": {"Host": "evil.example"}}, "auth_headers"),
        ({"url": PUBLIC_URL, "auth_headers": {"Bad Name": "x"}}, "auth_headers"),
        ({"url": PUBLIC_URL, "auth_headers": {"X-A": "line\r\nInjected: 1"}}, "auth_headers"),
        # Not ASCII: accepted before (201), then discovery failed with a misleading message.
        ({"url": PUBLIC_URL, "auth_headers": {"Authorization": "Bearer tökén"}}, "auth_headers"),
        ({"url": PUBLIC_URL, "name": ""}, "name"),
        ({"name": "no url"}, "url"),
    ],
)
def test_bad_bodies_are_bad_request_and_create_nothing(tools_api, body, field):
    response = tools_api.post("/v1/mcp_servers", json=body)
    assert response.status == 400, response.body
    assert response.json()["name"] == "bad_request"
    assert field in response.json()["message"]
    assert not McpServer.objects.exists()


def test_loopback_is_refused_on_create_without_the_test_setting(tools_api):
    response = tools_api.post("/v1/mcp_servers", json={"url": "http://127.0.0.1:9/mcp"})
    assert response.status == 400
    assert "not public" in response.json()["message"]


def test_list_is_newest_first_in_keyset_pages(tools_api):
    ids = [_create(tools_api, url=f"https://93.184.215.14/mcp{i}")["id"] for i in range(3)]
    first = tools_api.get("/v1/mcp_servers?limit=2").json()
    assert [s["id"] for s in first["data"]] == ids[::-1][:2]
    assert first["has_more"] is True
    second = tools_api.get(f"/v1/mcp_servers?limit=2&after={first['next_cursor']}").json()
    assert [s["id"] for s in second["data"]] == [ids[0]]
    assert (second["has_more"], second["next_cursor"]) == (False, None)


def test_agent_scoped_path_form_serves_the_same(tools_api, agent):
    created = _create(tools_api)
    response = tools_api.get(f"/v1/agents/{agent.pk}/mcp_servers/{created['id']}")
    assert response.status == 200
    assert response.json()["id"] == created["id"]


def test_another_agents_server_is_not_found(tools_api, make_api, sibling_agent):
    other = make_api(["mcp_servers:read", "mcp_servers:write"], for_agent=sibling_agent)
    server_id = _create(other)["id"]
    for method, path in [
        ("get", f"/v1/mcp_servers/{server_id}"),
        ("patch", f"/v1/mcp_servers/{server_id}"),
        ("delete", f"/v1/mcp_servers/{server_id}"),
        ("post", f"/v1/mcp_servers/{server_id}/discover"),
        ("get", f"/v1/mcp_servers/{server_id}/tools"),
        ("get", f"/v1/mcp_servers/{server_id}/changes"),
        ("patch", f"/v1/mcp_servers/{server_id}/tools/forecast"),
    ]:
        kwargs = {"json": {"enabled": True}} if method == "patch" else {}
        response = getattr(tools_api, method)(path, **kwargs)
        assert response.status == 404, (method, path, response.body)
        assert response.json()["name"] == "not_found"
    assert McpServer.objects.get(pk=server_id).status == "pending"


def test_writes_need_a_key_created_by_an_owner(make_api, member):
    api = make_api(["mcp_servers:read", "mcp_servers:write"], created_by=member)
    response = api.post("/v1/mcp_servers", json={"url": PUBLIC_URL})
    assert response.status == 403
    assert 'scope="mcp_servers:write"' in response.headers["WWW-Authenticate"]
    assert api.get("/v1/mcp_servers").status == 200  # reading needs no owner


def test_read_only_key_cannot_write(make_api):
    api = make_api(["mcp_servers:read"])
    response = api.post("/v1/mcp_servers", json={"url": PUBLIC_URL})
    assert response.status == 403
    assert response.json()["name"] == "insufficient_scope"


def test_patch_renames_disables_and_replaces_headers(tools_api):
    created = _create(tools_api, auth_headers={"Authorization": "a"})
    response = tools_api.patch(
        f"/v1/mcp_servers/{created['id']}",
        json={"name": "Renamed", "enabled": False, "auth_headers": {"X-Key": "b"}},
    )
    assert response.status == 200, response.body
    body = response.json()
    assert (body["name"], body["enabled"], body["auth_header_names"]) == (
        "Renamed",
        False,
        ["X-Key"],
    )
    cleared = tools_api.patch(f"/v1/mcp_servers/{created['id']}", json={"auth_headers": None})
    assert cleared.json()["auth_header_names"] == []
    assert tools_api.patch(f"/v1/mcp_servers/{created['id']}", json={}).status == 400


def test_patch_to_another_servers_url_is_conflict(tools_api):
    first = _create(tools_api)
    second = _create(tools_api, url="https://93.184.215.14/other")
    response = tools_api.patch(f"/v1/mcp_servers/{second['id']}", json={"url": first["url"]})
    assert response.status == 409


def test_delete_is_204_then_not_found(tools_api):
    created = _create(tools_api)
    assert tools_api.delete(f"/v1/mcp_servers/{created['id']}").status == 204
    assert tools_api.get(f"/v1/mcp_servers/{created['id']}").status == 404


def test_discover_tools_toggle_and_change_log(tools_api, loopback, streamable):
    created = _create(tools_api, url=streamable.url)
    server_id = created["id"]
    assert tasks.discover.run(server_id) == "connected"

    tools = tools_api.get(f"/v1/mcp_servers/{server_id}/tools").json()
    assert [t["name"] for t in tools["data"]] == ["alerts", "forecast"]
    assert set(tools["data"][0]) == TOOL_KEYS
    assert tools["data"][0]["object"] == "mcp_tool"
    assert tools["data"][1]["input_schema"]["required"] == ["city"]

    toggled = tools_api.patch(
        f"/v1/mcp_servers/{server_id}/tools/forecast", json={"enabled": False}
    )
    assert toggled.status == 200
    assert toggled.json()["enabled"] is False
    bad = tools_api.patch(f"/v1/mcp_servers/{server_id}/tools/forecast", json={"enabled": 0})
    assert bad.status == 400
    missing = tools_api.patch(f"/v1/mcp_servers/{server_id}/tools/nope", json={"enabled": True})
    assert missing.status == 404

    queued = tools_api.post(f"/v1/mcp_servers/{server_id}/discover")
    assert queued.status == 202
    assert queued.json()["status"] == "pending"
    assert tasks.discover.run(server_id) == "connected"

    changes = tools_api.get(f"/v1/mcp_servers/{server_id}/changes").json()
    assert [c["trigger"] for c in changes["data"]] == ["manual", "created"]
    assert set(changes["data"][0]) == DISCOVERY_KEYS
    assert changes["data"][1]["tools_added"] == ["alerts", "forecast"]
    assert changes["data"][0]["tools_added"] == []
    server = tools_api.get(f"/v1/mcp_servers/{server_id}").json()
    assert (server["status"], server["tool_count"], server["transport"]) == (
        "connected",
        2,
        "streamable_http",
    )
    tools_after = tools_api.get(f"/v1/mcp_servers/{server_id}/tools").json()["data"]
    assert {t["name"]: t["enabled"] for t in tools_after} == {"alerts": True, "forecast": False}


def test_tools_list_pages_by_name(tools_api, loopback, streamable, weather):
    from tests.tools.mcp_servers import add_tool

    for name in ("a_one", "b_two", "c_three"):
        add_tool(weather, name, lambda: "x")
    server_id = _create(tools_api, url=streamable.url)["id"]
    tasks.discover.run(server_id)
    names, after = [], None
    while True:
        query = "?limit=2" + (f"&after={after}" if after else "")
        page = tools_api.get(f"/v1/mcp_servers/{server_id}/tools{query}").json()
        names += [t["name"] for t in page["data"]]
        after = page["next_cursor"]
        if not page["has_more"]:
            break
    assert names == ["a_one", "alerts", "b_two", "c_three", "forecast"]


def test_list_costs_the_same_number_of_queries_for_any_page_size(tools_api, agent):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries_for_list() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert tools_api.get("/v1/mcp_servers?limit=100").status == 200
        return len(captured)

    queries_for_list()  # the key's lookup is cached after the first request
    tool_server_factory(agent=agent, name="one", url="https://93.184.215.14/0")
    few = queries_for_list()
    McpServer.objects.bulk_create(
        [
            McpServer(agent=agent, name=f"s{i}", url=f"https://93.184.215.14/{i}")
            for i in range(1, 40)
        ]
    )
    assert queries_for_list() == few
