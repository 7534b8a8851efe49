"""The Tools console pages: list and add (owners), server detail with tools and change log,
status polling, tool toggles over htmx; members read, owners change; other Agents 404."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from apps.tools import services, tasks
from apps.tools.models import McpServer, McpTool
from tests.tools.factories import tool_server_factory

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


@pytest.fixture
def discovered(agent, loopback, streamable) -> McpServer:
    server = services.server_create(agent=agent, url=streamable.url, name="Weather")
    tasks.discover.run(server.pk)
    server.refresh_from_db()
    return server


@pytest.mark.smoke
def test_empty_list_lights_the_nav_and_offers_the_form(owner_client):
    response = owner_client.get("/tools/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'aria-current="page">Tools<' in html
    assert "No tool servers yet" in html
    assert 'id="add-server-form"' in html


def test_members_see_servers_but_no_forms(member_client, discovered):
    html = member_client.get("/tools/").content.decode()
    assert "Weather" in html
    assert 'id="add-server-form"' not in html
    detail = member_client.get(f"/tools/{discovered.pk}/").content.decode()
    assert "forecast" in detail
    assert 'id="discover-button"' not in detail
    assert "toggle-button" not in detail


def test_members_cannot_change_anything(member_client, discovered):
    for path in (
        "/tools/add/",
        f"/tools/{discovered.pk}/discover/",
        f"/tools/{discovered.pk}/toggle/",
        f"/tools/{discovered.pk}/delete/",
        f"/tools/{discovered.pk}/tools/forecast/toggle/",
    ):
        assert member_client.post(path, {"url": "https://93.184.215.14/x"}).status_code == 403
    assert McpServer.objects.count() == 1
    assert McpTool.objects.filter(enabled=False).count() == 0


def test_add_server_with_headers_redirects_to_its_page(owner_client, agent):
    response = owner_client.post(
        "/tools/add/",
        {
            "url": "https://93.184.215.14/mcp",
            "name": "Remote",
            "header_name": ["Authorization", ""],
            "header_value": ["Bearer top-secret", ""],
        },
    )
    server = McpServer.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/tools/{server.pk}/"
    assert server.auth_header_names == ["Authorization"]
    html = owner_client.get(response["Location"]).content.decode()
    assert "Discovering" in html
    assert 'hx-trigger="every 2s"' in html
    assert "top-secret" not in html


def test_a_private_url_is_a_form_error(owner_client):
    response = owner_client.post("/tools/add/", {"url": "http://10.0.0.1/mcp"})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="add-server-error"' in html
    assert "not public" in html
    assert not McpServer.objects.exists()


def test_detail_shows_tools_and_the_change_log(owner_client, discovered):
    html = owner_client.get(f"/tools/{discovered.pk}/").content.decode()
    assert 'data-status="connected"' in html
    assert "Forecast for a city." in html
    assert "&quot;city&quot;" in html  # the input schema, as JSON
    assert "Server added" in html
    assert "Added: <code>alerts</code>, <code>forecast</code>" in html


def test_status_partial_stops_polling_once_settled(owner_client, agent, discovered):
    response = owner_client.get(f"/tools/{discovered.pk}/?partial=status", headers=HTMX)
    assert response.status_code == 286
    assert response["HX-Refresh"] == "true"
    services.server_discover_request(agent=agent, server_id=discovered.pk)
    response = owner_client.get(f"/tools/{discovered.pk}/?partial=status", headers=HTMX)
    assert response.status_code == 200
    assert "Discovering" in response.content.decode()


def test_discover_now_over_htmx_returns_the_polling_status(owner_client, discovered):
    response = owner_client.post(f"/tools/{discovered.pk}/discover/", headers=HTMX)
    assert response.status_code == 200
    assert 'hx-trigger="every 2s"' in response.content.decode()
    discovered.refresh_from_db()
    assert discovered.status == "pending"


def test_toggle_a_tool_in_place(owner_client, discovered):
    response = owner_client.post(
        f"/tools/{discovered.pk}/tools/forecast/toggle/", {"enabled": "false"}, headers=HTMX
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.strip().startswith("<tr")
    assert 'aria-pressed="false"' in html
    assert McpTool.objects.get(server=discovered, name="forecast").enabled is False


def test_disable_and_delete_a_server(owner_client, discovered):
    owner_client.post(f"/tools/{discovered.pk}/toggle/", {"enabled": "false"})
    discovered.refresh_from_db()
    assert discovered.enabled is False
    response = owner_client.post(f"/tools/{discovered.pk}/delete/")
    assert response.status_code == 302
    assert not McpServer.objects.exists()


def test_another_agents_server_is_a_404_page(owner_client, sibling_agent):
    other = services.server_create(agent=sibling_agent, url="https://93.184.215.14/mcp")
    assert owner_client.get(f"/tools/{other.pk}/").status_code == 404
    assert owner_client.post(f"/tools/{other.pk}/discover/").status_code == 404
    assert owner_client.post(f"/tools/{other.pk}/delete/").status_code == 404
    assert McpServer.objects.filter(pk=other.pk).exists()


def test_tools_runs_use_lists_built_in_ones_beside_the_servers(owner_client, agent, discovered):
    """Issue 26, item 9: Tools listed MCP servers only, never the built-in tools runs use."""
    from tests.activity.factories import run_factory

    run_factory(agent=agent, tool_names=["search_knowledge", "forecast"], failed_tool_names=[])
    run_factory(agent=agent, tool_names=["lookup_order"], failed_tool_names=["lookup_order"])
    run_factory(agent=agent, tool_names=["lookup_order"], failed_tool_names=[])

    html = owner_client.get("/tools/").content.decode()
    card = html.split('id="tools-used"', 1)[1].split("</section>", 1)[0]
    order = card.split('id="tool-used-lookup_order"', 1)[1]
    assert '<span class="badge badge-builtin" data-source="built-in">Built-in</span>' in order
    assert '<td class="num" data-label="Runs">2</td>' in order.split("</tr>", 1)[0]
    assert '<span class="field-error">1</span>' in order.split("</tr>", 1)[0]
    forecast = card.split('id="tool-used-forecast"', 1)[1].split("</tr>", 1)[0]
    assert f'href="/tools/{discovered.pk}/">Weather</a>' in forecast  # offered by a server
    assert 'id="tool-used-search_knowledge"' in card


def test_knowledge_search_is_listed_while_on_even_before_a_run_uses_it(owner_client, agent):
    html = owner_client.get("/tools/").content.decode()
    row = html.split('id="tool-used-search_knowledge"', 1)[1].split("</tr>", 1)[0]
    assert "Built-in" in row and "Not used yet" in row


def _server_names(html: str) -> list[str]:
    return re.findall(r'class="server-name">([^<]+)</a>', html)


def test_server_list_counts_sorts_and_filters(owner_client, agent):
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    for name, state, enabled, tools, discovered in (
        ("beta", "connected", True, 5, t0),
        ("Alpha", "failed", True, 0, None),
        ("gamma", "connected", False, 2, t0 + timedelta(days=1)),
    ):
        tool_server_factory(
            agent=agent,
            name=name,
            url=f"https://{name.lower()}.example.com/mcp",
            status=state,
            enabled=enabled,
            tool_count=tools,
            last_discovered_at=discovered,
        )
    html = owner_client.get("/tools/").content.decode()
    assert "3 servers" in html and 'data-sort="name"' in html
    assert _server_names(owner_client.get("/tools/?sort=name&dir=asc").content.decode()) == [
        "Alpha",
        "beta",
        "gamma",
    ]
    by_tools = owner_client.get("/tools/?sort=tools&dir=desc").content.decode()
    assert _server_names(by_tools) == ["beta", "gamma", "Alpha"]
    # Never discovered sorts below every discovered server.
    by_discovery = owner_client.get("/tools/?sort=discovered&dir=desc").content.decode()
    assert _server_names(by_discovery) == ["gamma", "beta", "Alpha"]
    connected = owner_client.get("/tools/?status=connected&sort=name&dir=asc").content.decode()
    assert _server_names(connected) == ["beta", "gamma"]
    assert "2 servers match these filters" in connected
    disabled = owner_client.get("/tools/?enabled=no").content.decode()
    assert _server_names(disabled) == ["gamma"]
    assert len(_server_names(owner_client.get("/tools/?status=bogus").content.decode())) == 3
    partial = owner_client.get(
        "/tools/?status=failed", headers={"HX-Target": "server-table", **HTMX}
    )
    assert _server_names(partial.content.decode()) == ["Alpha"]
    assert "add-server-form" not in partial.content.decode()
