"""The OAuth consent page and the Connected apps page in Chromium: an owner picks the Agent and
the permissions for a registered MCP client, the browser is sent back to the client with a code
that the client exchanges, and disconnecting the application ends its token."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from apps.mcp_server.models import ConnectedApplication
from tests.mcp_server.conftest import REDIRECT_URI, pkce_pair

pytestmark = pytest.mark.django_db(transaction=True)


def _register(base: str) -> str:
    answer = httpx.post(
        f"{base}/oauth/register/",
        json={
            "client_name": "Browser-tested client",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
        timeout=10,
    )
    assert answer.status_code == 201, answer.text
    return answer.json()["client_id"]


def _authorize_url(base: str, client_id: str, challenge: str) -> str:
    query = httpx.QueryParams(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT_URI,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "browser-state",
            "scope": "runs:read conversations:read knowledge:read",
            "resource": f"{base}/mcp",
        }
    )
    return f"{base}/oauth/authorize/?{query}"


def test_consent_in_the_browser_then_disconnect(console_page, sibling_agent):
    page = console_page
    base = page.live_server_url
    errors: list[str] = []
    page.on(
        "console", lambda message: errors.append(message.text) if message.type == "error" else None
    )
    client_id = _register(base)
    verifier, challenge = pkce_pair()

    page.goto(_authorize_url(base, client_id, challenge))
    assert "Connect “Browser-tested client”" in page.locator("h2").inner_text()
    # The requested permissions are pre-checked; the owner narrows them and picks an Agent.
    assert page.locator("input[value='runs:read']").is_checked()
    assert page.locator("input[value='conversations:read']").is_checked()
    page.uncheck("input[value='conversations:read']")
    page.select_option("#id_agent_id", sibling_agent.pk)

    # Nothing listens on the client's loopback callback: answer it here, as the client would.
    page.route(f"{REDIRECT_URI}**", lambda route: route.fulfill(body="You can close this tab."))
    with page.expect_request(lambda request: request.url.startswith(REDIRECT_URI)) as caught:
        page.get_by_role("button", name="Connect").click()
    callback = parse_qs(urlsplit(caught.value.url).query)
    assert callback["state"] == ["browser-state"]
    assert errors == []

    token = httpx.post(
        f"{base}/oauth/token/",
        data={
            "grant_type": "authorization_code",
            "code": callback["code"][0],
            "redirect_uri": REDIRECT_URI,
            "client_id": client_id,
            "code_verifier": verifier,
            "resource": f"{base}/mcp",
        },
        timeout=10,
    ).json()
    assert sorted(token["scope"].split()) == sorted(
        ["runs:read", "knowledge:read", f"agent:{sibling_agent.pk}"]
    )
    connection = ConnectedApplication.objects.get(revoked_at__isnull=True)
    assert connection.agent_id == sibling_agent.pk

    # The console's Agent is the sibling's for this page: switch to it, then disconnect.
    page.goto(f"{base}/connected-apps/")
    page.select_option("#agent-switcher-select", sibling_agent.pk)
    row = page.locator("#connected-app-table tbody tr", has_text="Browser-tested client")
    row.wait_for()
    assert "knowledge:read" in row.inner_text() and "conversations:read" not in row.inner_text()
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Disconnect").click()
    page.locator("#connected-app-table tbody tr", has_text="Browser-tested client").get_by_text(
        "Disconnected"
    ).wait_for()

    mcp = httpx.post(
        f"{base}/mcp",
        headers={
            "Authorization": f"Bearer {token['access_token']}",
            "Accept": "application/json, text/event-stream",
        },
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        timeout=10,
    )
    assert mcp.status_code == 401


def test_consent_page_fits_a_phone(console_page):
    page = console_page
    base = page.live_server_url
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(_authorize_url(base, _register(base), pkce_pair()[1]))
    page.get_by_role("button", name="Connect").wait_for()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
