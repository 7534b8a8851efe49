"""The OAuth authorization server and `/mcp` as the specifications say (issue 24, items 2-5):
only the code and refresh grants, registration rules and rate limits, no 500 from what a
client sends, a refused authorization that changes nothing, Origin checks, RFC 8252 redirect
URIs, `iss` on every redirect (RFC 9207), the challenge's scope, replayed codes, and the tools'
read-only annotations."""

from __future__ import annotations

import secrets
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest
from django.test import Client
from oauth2_provider.models import Application

from apps.mcp_server.models import ConnectedApplication
from apps.mcp_server.oauth import TOOL_SCOPES
from tests.mcp_server.conftest import (
    MCP_RESOURCE,
    authorize_query,
    client_metadata,
    code_exchange,
    consent_form,
    live_token_client,
    mcp_post,
    obtain_grant,
    pkce_pair,
    register,
    register_client,
)
from tests.mcp_server.factories import oauth_application_factory

pytestmark = pytest.mark.django_db

ISSUER = "http://testserver"


def _metadata(**fields) -> dict:
    return client_metadata(client_name="Conformance client", **fields)


def _address() -> str:
    """A client address of its own, so a rate-limit test owns its window."""
    return f"10.{secrets.randbelow(250)}.{secrets.randbelow(250)}.{secrets.randbelow(250) + 1}"


# --- 2. Only the code and refresh grants ---------------------------------------------------


@pytest.mark.parametrize(
    "grants",
    [
        ["client_credentials"],
        ["password"],
        ["implicit"],
        ["authorization_code", "client_credentials"],
        ["urn:ietf:params:oauth:grant-type:device_code"],
        ["refresh_token"],
        [],
    ],
)
def test_registration_refuses_every_other_grant_type(grants):
    answer = register(_metadata(grant_types=grants))
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"] == "invalid_client_metadata"
    assert "authorization_code" in answer.json()["error_description"]
    assert not Application.objects.exists()


@pytest.mark.parametrize("response_types", [["token"], ["code", "token"], [], "code"])
def test_registration_refuses_other_response_types(response_types):
    answer = register(_metadata(response_types=response_types))
    assert answer.status_code == 400
    assert not Application.objects.exists()


@pytest.mark.parametrize(
    ("grant_type", "registered_as"),
    [
        ("client_credentials", Application.GRANT_CLIENT_CREDENTIALS),
        ("password", Application.GRANT_PASSWORD),
    ],
)
def test_the_token_endpoint_issues_nothing_for_other_grants(grant_type, registered_as, owner):
    """Even a client registered for that grant before the rule (made here directly) gets no
    token: the validator refuses every grant but the two."""
    secret = "s3cret-value"
    application = oauth_application_factory(
        name="old client",
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=registered_as,
        client_secret=secret,
        redirect_uris="",
    )
    answer = Client().post(
        "/oauth/token/",
        {
            "grant_type": grant_type,
            "client_id": application.client_id,
            "client_secret": secret,
            "scope": "runs:read",
            "username": owner.email,
            "password": owner.raw_password,
        },
    )
    assert answer.status_code in (400, 401), answer.content
    assert "access_token" not in answer.json()


def test_registration_caps_redirect_uris():
    uris = [f"https://client.example/cb/{n}" for n in range(11)]
    answer = register(_metadata(redirect_uris=uris))
    assert answer.status_code == 400
    assert "1 to 10" in answer.json()["error_description"]
    assert register(_metadata(redirect_uris=uris[:10])).status_code == 201
    thousand = [f"https://client.example/cb/{n}" for n in range(1000)]
    assert register(_metadata(redirect_uris=thousand)).status_code == 400


def test_registration_is_rate_limited_per_address_with_retry_after(settings):
    settings.OAUTH_REGISTRATION_RATE_LIMIT = "5/hour"
    address = _address()
    statuses = [register(_metadata(), REMOTE_ADDR=address).status_code for _ in range(5)]
    assert statuses == [201] * 5
    refused = register(_metadata(), REMOTE_ADDR=address)
    assert refused.status_code == 429
    assert refused.json()["error"] == "rate_limited"
    assert 1 <= int(refused["Retry-After"]) <= 3600
    assert Application.objects.count() == 5
    # Another address has its own window.
    assert register(_metadata(), REMOTE_ADDR=_address()).status_code == 201


def test_the_token_endpoint_is_rate_limited_per_address_with_retry_after(settings):
    settings.OAUTH_TOKEN_RATE_LIMIT = "4/minute"
    address = _address()
    body = {"grant_type": "refresh_token", "refresh_token": "ort_nothing", "client_id": "x"}
    statuses = [
        Client().post("/oauth/token/", body, REMOTE_ADDR=address).status_code for _ in range(4)
    ]
    assert 429 not in statuses
    refused = Client().post("/oauth/token/", body, REMOTE_ADDR=address)
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60


# --- 3. No 500 from what a client sends ----------------------------------------------------


@pytest.mark.parametrize("depth", [100, 1000, 5000])
def test_nested_json_on_registration_is_invalid_metadata(depth):
    nested = b'{"client_name": ' + b"[" * depth + b"]" * depth + b"}"
    answer = register(nested)
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_client_metadata"


def test_an_agent_scope_on_authorize_is_an_invalid_scope_redirect(owner, agent):
    client_id = register_client()
    _verifier, challenge = pkce_pair()
    browser = Client()
    browser.force_login(owner)
    answer = browser.get(
        f"/oauth/authorize/?{authorize_query(client_id, challenge, f'runs:read agent:{agent.pk}')}"
    )
    assert answer.status_code == 302
    query = parse_qs(urlsplit(answer["Location"]).query)
    assert query["error"] == ["invalid_scope"]
    assert query["iss"] == [ISSUER]
    assert query["state"] == ["st4te"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_refreshes_with_one_refresh_token_are_one_success_and_invalid_grants(
    live_server, owner, agent
):
    with live_token_client(live_server) as http:
        for _round in range(3):
            grant = obtain_grant(owner, agent, ["runs:read"])
            body = {
                "grant_type": "refresh_token",
                "refresh_token": grant.refresh_token,
                "client_id": grant.client_id,
                "resource": MCP_RESOURCE,
            }

            def refresh(_index, body=body):
                return http.post("/oauth/token/", data=body)

            with ThreadPoolExecutor(4) as pool:
                answers = list(pool.map(refresh, range(4)))
            statuses = sorted(answer.status_code for answer in answers)
            assert 500 not in statuses, [answer.text for answer in answers]
            assert statuses.count(200) >= 1
            for answer in answers:
                if answer.status_code != 200:
                    assert answer.status_code == 400
                    assert answer.json()["error"] == "invalid_grant"


def test_a_console_key_expiring_on_the_last_representable_day_is_a_form_error(owner_client):
    answer = owner_client.post(
        "/api-keys/new/",
        {
            "name": "Forever",
            "scopes": ["runs:read"],
            "expires": "date",
            "expires_on": "9999-12-31",
        },
    )
    assert answer.status_code == 400
    assert "within the next 100 years" in answer.content.decode()


# --- 4. A refused authorization changes nothing --------------------------------------------


@pytest.mark.parametrize(
    "tamper",
    [
        {"code_challenge_method": "plain"},
        {"code_challenge_method": ""},
        {"redirect_uri": "http://localhost:53682/elsewhere"},
        {"resource": "not a uri"},
        {"resource": "https://evil.example/mcp"},
    ],
    ids=["plain PKCE", "no PKCE method", "another redirect", "bad resource", "foreign resource"],
)
def test_a_refused_authorization_leaves_the_existing_grant_working(owner, agent, tamper):
    first = obtain_grant(owner, agent, ["runs:read"])
    before = ConnectedApplication.objects.get(agent=agent, revoked_at__isnull=True)
    _verifier, challenge = pkce_pair()
    browser = Client()
    browser.force_login(owner)
    fields = consent_form(browser, authorize_query(first.client_id, challenge, "usage:read"))
    answer = browser.post(
        "/oauth/authorize/",
        {
            **fields,
            **tamper,
            "agent_id": agent.pk,
            "granted_scopes": ["usage:read"],
            "allow": "1",
        },
    )
    location = answer.get("Location", "")
    assert "code=" not in location, location
    live = ConnectedApplication.objects.filter(agent=agent, revoked_at__isnull=True)
    assert list(live) == [before]
    assert live.get().grant_key.scopes == ["runs:read"]
    assert mcp_post(first.access_token, "tools/list").status_code == 200


# --- 5. Specification conformance ----------------------------------------------------------


def test_mcp_refuses_a_foreign_origin(owner, agent, settings):
    grant = obtain_grant(owner, agent, ["runs:read"])
    foreign = mcp_post(grant.access_token, "tools/list", HTTP_ORIGIN="https://evil.example")
    assert foreign.status_code == 403
    # Refused before authentication too: no token needed to be told.
    assert mcp_post(None, "tools/list", HTTP_ORIGIN="https://evil.example").status_code == 403
    assert mcp_post(grant.access_token, "tools/list").status_code == 200
    own = mcp_post(grant.access_token, "tools/list", HTTP_ORIGIN="http://testserver")
    assert own.status_code == 200
    settings.MCP_ALLOWED_ORIGINS = ["http://localhost:6274"]
    inspector = mcp_post(grant.access_token, "tools/list", HTTP_ORIGIN="http://localhost:6274")
    assert inspector.status_code == 200


@pytest.mark.parametrize(
    ("uri", "accepted"),
    [
        ("https://client.example/callback", True),
        ("http://localhost:8123/callback", True),
        ("http://127.0.0.1:8123/callback", True),
        ("http://[::1]:8123/callback", True),
        ("cursor://anysphere.cursor-retrieval/oauth/callback", True),
        ("com.example.app:/oauth2redirect", True),
        ("http://client.example/callback", False),
        ("http://10.0.0.5/callback", False),
        ("https://client.example/callback#fragment", False),
        ("javascript:alert(1)", False),
        ("data:text/html,hi", False),
        ("file:///etc/passwd", False),
        ("https:///no-host", False),
        ("not a uri", False),
    ],
)
def test_redirect_uris_follow_rfc_8252(uri, accepted):
    answer = register(_metadata(redirect_uris=[uri]))
    if accepted:
        assert answer.status_code == 201, answer.content
    else:
        assert answer.status_code == 400, answer.content
        assert answer.json()["error"] == "invalid_redirect_uri"


def test_a_client_updates_its_registration_under_the_same_rules():
    """RFC 7592: a private-use redirect that registration allows, an update allows too; a
    redirect registration refuses, an update refuses, leaving the client as it was."""
    registered = register(_metadata(redirect_uris=["cursor://app/cb"])).json()
    path = urlsplit(registered["registration_client_uri"]).path
    token = registered["registration_access_token"]

    def update(redirect_uris: list[str], bearer: str | None = token):
        headers = {"HTTP_AUTHORIZATION": f"Bearer {bearer}"} if bearer else {}
        body = orjson.dumps(_metadata(redirect_uris=redirect_uris))
        return Client().put(path, data=body, content_type="application/json", **headers)

    assert update(["cursor://app/cb"], bearer=None).status_code == 401
    refused = update(["javascript://app/cb"])
    assert refused.status_code == 400, refused.content
    assert refused.json()["error"] == "invalid_redirect_uri"
    updated = update(["cursor://app/cb", "com.example.app:/oauth"])
    assert updated.status_code == 200, updated.content
    assert updated.json()["redirect_uris"] == ["cursor://app/cb", "com.example.app:/oauth"]
    application = Application.objects.get(client_id=registered["client_id"])
    assert application.redirect_uris.split() == ["cursor://app/cb", "com.example.app:/oauth"]


def test_a_private_use_scheme_client_completes_the_flow(owner, agent):
    redirect = "cursor://anysphere.cursor-retrieval/oauth/callback"
    client_id = register(_metadata(redirect_uris=[redirect])).json()["client_id"]
    verifier, challenge = pkce_pair()
    browser = Client()
    browser.force_login(owner)
    query = authorize_query(client_id, challenge, "runs:read").replace(
        "http%3A%2F%2Flocalhost%3A53682%2Fcallback",
        "cursor%3A%2F%2Fanysphere.cursor-retrieval%2Foauth%2Fcallback",
    )
    fields = consent_form(browser, query)
    answer = browser.post(
        "/oauth/authorize/",
        {**fields, "agent_id": agent.pk, "granted_scopes": ["runs:read"], "allow": "1"},
    )
    assert answer.status_code == 302
    location = urlsplit(answer["Location"])
    assert location.scheme == "cursor"
    code = parse_qs(location.query)["code"][0]
    token = Client().post(
        "/oauth/token/",
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect,
            "client_id": client_id,
            "code_verifier": verifier,
            "resource": MCP_RESOURCE,
        },
    )
    assert token.status_code == 200, token.content


def _authorize_error(owner, query: str) -> dict:
    browser = Client()
    browser.force_login(owner)
    answer = browser.get(f"/oauth/authorize/?{query}")
    assert answer.status_code == 302, answer.content
    return parse_qs(urlsplit(answer["Location"]).query)


def test_every_error_redirect_carries_iss(owner, agent):
    client_id = register_client()
    _verifier, challenge = pkce_pair()
    plain = authorize_query(client_id, challenge, "runs:read").replace("S256", "plain")
    assert _authorize_error(owner, plain)["iss"] == [ISSUER]
    assert _authorize_error(owner, plain)["error"] == ["invalid_request"]
    unknown = authorize_query(client_id, challenge, "no-such:scope")
    assert _authorize_error(owner, unknown)["error"] == ["invalid_scope"]
    assert _authorize_error(owner, unknown)["iss"] == [ISSUER]
    # Cancel on the consent page: access_denied.
    browser = Client()
    browser.force_login(owner)
    fields = consent_form(browser, authorize_query(client_id, challenge, "runs:read"))
    cancelled = browser.post("/oauth/authorize/", {**fields, "agent_id": agent.pk})
    query = parse_qs(urlsplit(cancelled["Location"]).query)
    assert query["error"] == ["access_denied"]
    assert query["iss"] == [ISSUER]


def test_the_consent_page_pre_ticks_only_what_the_tools_need(owner):
    client_id = register_client()
    _verifier, challenge = pkce_pair()
    browser = Client()
    browser.force_login(owner)
    everything = " ".join(
        Client().get("/.well-known/oauth-authorization-server").json()["scopes_supported"]
    )
    page = browser.get(f"/oauth/authorize/?{authorize_query(client_id, challenge, everything)}")
    assert page.status_code == 200
    assert sorted(page.context["form"].initial["granted_scopes"]) == TOOL_SCOPES
    one = browser.get(f"/oauth/authorize/?{authorize_query(client_id, challenge, 'runs:read')}")
    assert one.context["form"].initial["granted_scopes"] == ["runs:read"]


def test_a_replayed_code_revokes_the_tokens_issued_from_it(owner, agent):
    exchange = code_exchange(owner, agent, ["runs:read"])
    client_id = exchange["client_id"]
    first = Client().post("/oauth/token/", exchange)
    assert first.status_code == 200
    tokens = first.json()
    assert mcp_post(tokens["access_token"], "tools/list").status_code == 200

    replay = Client().post("/oauth/token/", exchange)
    assert replay.status_code == 400
    assert replay.json()["error"] == "invalid_grant"
    assert mcp_post(tokens["access_token"], "tools/list").status_code == 401
    refreshed = Client().post(
        "/oauth/token/",
        {
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": client_id,
        },
    )
    assert refreshed.status_code == 400


def test_every_tool_says_it_only_reads(owner, agent):
    grant = obtain_grant(owner, agent, ["runs:read"])
    tools = orjson.loads(mcp_post(grant.access_token, "tools/list").content)["result"]["tools"]
    assert len(tools) == 8
    for tool in tools:
        assert tool["annotations"]["readOnlyHint"] is True, tool["name"]
        assert tool["annotations"]["destructiveHint"] is False, tool["name"]
