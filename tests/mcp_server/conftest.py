"""The OAuth flow run in process through the real endpoints (Django's test client), for tests
that need a grant without a live server: register a client (RFC 7591), consent as a member,
exchange the code with its PKCE verifier, refresh."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import orjson
import pytest
from django.db import DEFAULT_DB_ALIAS, connections
from django.test import Client

REDIRECT_URI = "http://localhost:53682/callback"
MCP_RESOURCE = "http://testserver/mcp"


@dataclass
class Grant:
    client_id: str
    access_token: str
    refresh_token: str
    scope: str


def client_metadata(**fields) -> dict:
    """A public client's registration (RFC 7591) as an MCP client sends it; `fields` override."""
    return {
        "client_name": "Test MCP client",
        "redirect_uris": [REDIRECT_URI],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **fields,
    }


def register(body: dict | bytes, **extra):
    """POST a registration, a dict as JSON or raw bytes as they are; the response."""
    return Client().post(
        "/oauth/register/",
        data=body if isinstance(body, bytes) else orjson.dumps(body),
        content_type="application/json",
        **extra,
    )


def register_client(name: str = "Test MCP client") -> str:
    answer = register(client_metadata(client_name=name))
    assert answer.status_code == 201, answer.content
    return answer.json()["client_id"]


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
    return verifier, challenge.decode()


def authorize_query(client_id: str, challenge: str, scope: str, state: str = "st4te") -> str:
    return urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT_URI,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
            "scope": scope,
            "resource": MCP_RESOURCE,
        }
    )


def consent_form(browser: Client, query: str) -> dict:
    """GET the consent page; the hidden fields it carries, as the browser would post them."""
    page = browser.get(f"/oauth/authorize/?{query}")
    assert page.status_code == 200, page.content
    form = page.context["form"]
    return {name: form[name].value() or "" for name in form.fields if form[name].is_hidden}


def code_exchange(user, agent, scopes: list[str], *, client_id: str | None = None) -> dict:
    """Consent as `user` on `agent` and return the token request that exchanges the code (the
    PKCE verifier, redirect and resource included), not yet sent."""
    client_id = client_id or register_client()
    verifier, challenge = pkce_pair()
    browser = Client()
    browser.force_login(user)
    fields = consent_form(browser, authorize_query(client_id, challenge, " ".join(scopes)))
    answer = browser.post(
        "/oauth/authorize/",
        {**fields, "agent_id": agent.pk, "granted_scopes": scopes, "allow": "1"},
    )
    assert answer.status_code == 302, answer.content
    query = parse_qs(urlsplit(answer["Location"]).query)
    assert "code" in query, answer["Location"]
    return {
        "grant_type": "authorization_code",
        "code": query["code"][0],
        "redirect_uri": REDIRECT_URI,
        "client_id": client_id,
        "code_verifier": verifier,
        "resource": MCP_RESOURCE,
    }


def obtain_grant(user, agent, scopes: list[str], *, client_id: str | None = None) -> Grant:
    exchange = code_exchange(user, agent, scopes, client_id=client_id)
    token = Client().post("/oauth/token/", exchange)
    assert token.status_code == 200, token.content
    body = token.json()
    return Grant(exchange["client_id"], body["access_token"], body["refresh_token"], body["scope"])


def live_token_client(live_server) -> httpx.Client:
    """One HTTP client for a test's concurrent calls to the live server's token endpoint (a
    client per request loads the CA bundle each time), under the name grants are made under
    (their resource names that host)."""
    return httpx.Client(base_url=live_server.url, headers={"Host": "testserver"}, timeout=30)


def off_the_event_loop(call):
    """`call()` where no asyncio loop runs. The browser tests' session-wide Playwright (sync
    API) leaves a loop running in its xdist worker's main thread, where `/mcp`'s async_to_sync
    bridge and `asyncio.run` both refuse to start; then the call runs on a helper thread that
    shares this thread's database connection (and so the test's transaction)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return call()
    connection = connections[DEFAULT_DB_ALIAS]
    connection.inc_thread_sharing()

    def run():
        connections[DEFAULT_DB_ALIAS] = connection
        return call()

    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(run).result()
    finally:
        connection.dec_thread_sharing()


def mcp_post(access_token: str | None, method: str, params: dict | None = None, **extra):
    """One JSON-RPC request to /mcp as the SDK's client sends it (stateless: no session)."""
    headers = {"HTTP_ACCEPT": "application/json, text/event-stream"}
    if access_token is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {access_token}"
    headers["HTTP_MCP_PROTOCOL_VERSION"] = "2025-06-18"
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    client = extra.pop("client", None) or Client()
    return off_the_event_loop(
        lambda: client.post(
            "/mcp", data=orjson.dumps(body), content_type="application/json", **headers, **extra
        )
    )


@pytest.fixture
def grant_for():
    return obtain_grant
