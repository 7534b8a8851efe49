"""Grants and the tokens made from them, in process: what a resource token is on /v1, what
ends it, what the raw OAuth tokens can and cannot do, and the consent page's rules."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
import time_machine
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken

from apps.mcp_server.models import ConnectedApplication, SpentAuthorizationCode
from apps.mcp_server.resource_tokens import resource_token_sign
from apps.mcp_server.services import connected_app_revoke
from apps.workspaces.models import ApiKey, Membership
from tests.activity.factories import run_factory
from tests.api.test_rate_limit import one_round_trip_each
from tests.conftest import ApiClient, console_client
from tests.mcp_server.conftest import (
    MCP_RESOURCE,
    REDIRECT_URI,
    authorize_query,
    consent_form,
    mcp_post,
    obtain_grant,
    off_the_event_loop,
    pkce_pair,
    register_client,
)

pytestmark = pytest.mark.django_db


def _resource_token(connection: ConnectedApplication, *, audience="http://testserver/v1", **kw):
    raw, _token = resource_token_sign(
        connection_id=connection.pk,
        grant_key=connection.grant_key,
        scopes=kw.pop("scopes", connection.grant_key.scopes),
        audience=audience,
        not_after=kw.pop("not_after", timezone.now() + timedelta(hours=1)),
    )
    return raw


def test_a_resource_token_request_is_one_redis_round_trip(
    grant_for, owner, agent, settings, redis_store
):
    """The grant key comes from the cache and the grant's window is counted, in one call."""
    settings.API_RATE_LIMIT = "2/minute"
    grant_for(owner, agent, ["runs:read"])
    api = ApiClient(_resource_token(ConnectedApplication.objects.get(agent=agent)))
    assert api.get("/v1/runs").status == 200  # warms the key cache
    one_round_trip_each(redis_store, lambda: api.get("/v1/runs"), (200, 429))


def _tool(access_token: str, name: str, arguments: dict | None = None) -> dict:
    answer = mcp_post(access_token, "tools/call", {"name": name, "arguments": arguments or {}})
    assert answer.status_code == 200, answer.content
    return answer.json()["result"]


def test_a_resource_token_is_a_key_of_the_grants_permissions_on_v1(grant_for, owner, agent):
    grant_for(owner, agent, ["runs:read", "usage:read"])
    connection = ConnectedApplication.objects.get(agent=agent)
    api = ApiClient(_resource_token(connection))

    described = api.get("/v1/connection")
    assert described.status == 200, described.body
    body = described.json()
    assert body["credential"]["kind"] == "resource_token"
    assert body["credential"]["id"].startswith("art_")
    assert body["credential"]["name"] == "Test MCP client"
    assert body["agent"]["id"] == agent.pk
    assert body["scopes"] == ["runs:read", "usage:read"]
    assert body["is_owner"] is True

    run_factory(agent=agent)
    assert api.get("/v1/runs").status == 200
    refused = api.get("/v1/conversations")
    assert refused.status == 403
    assert refused.json()["name"] == "insufficient_scope"
    assert "conversations:read" in refused.json()["message"]


def test_a_resource_token_never_holds_more_than_its_grant(grant_for, owner, agent):
    grant_for(owner, agent, ["runs:read"])
    connection = ConnectedApplication.objects.get(agent=agent)
    api = ApiClient(_resource_token(connection, scopes=["runs:read", "webhooks:write"]))
    assert api.get("/v1/connection").json()["scopes"] == ["runs:read"]
    assert api.get(f"/v1/agents/{agent.pk}/webhook").status == 403


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda raw, c: raw[:-3] + "abc", id="tampered"),
        pytest.param(
            lambda raw, c: _resource_token(c, audience="https://elsewhere.example/v1"),
            id="other audience",
        ),
        pytest.param(
            lambda raw, c: _resource_token(c, not_after=timezone.now() - timedelta(seconds=1)),
            id="expired",
        ),
    ],
)
def test_a_spoiled_resource_token_is_401(grant_for, owner, agent, spoil):
    grant_for(owner, agent, ["runs:read"])
    connection = ConnectedApplication.objects.get(agent=agent)
    answer = ApiClient(spoil(_resource_token(connection), connection)).get("/v1/runs")
    assert answer.status == 401
    assert answer.json()["name"] == "unauthorized"


def test_resource_tokens_live_minutes_and_die_with_their_grant(grant_for, owner, agent, settings):
    grant_for(owner, agent, ["runs:read"])
    connection = ConnectedApplication.objects.get(agent=agent)
    raw = _resource_token(connection)
    with time_machine.travel(
        timezone.now() + timedelta(seconds=settings.MCP_RESOURCE_TOKEN_SECONDS + 1)
    ):
        assert ApiClient(raw).get("/v1/runs").status == 401

    fresh = _resource_token(connection)
    assert ApiClient(fresh).get("/v1/runs").status == 200
    connected_app_revoke(connection=connection, by_user=owner)
    answer = ApiClient(fresh).get("/v1/runs")
    assert answer.status == 401
    assert "revoked" in answer.json()["message"]


def test_oauth_tokens_are_refused_by_v1_and_sessions_by_mcp(grant_for, owner, agent):
    grant = grant_for(owner, agent, ["runs:read"])
    for raw in (grant.access_token, grant.refresh_token):
        answer = ApiClient(raw).get("/v1/runs")
        assert answer.status == 401
        assert "/mcp" in answer.json()["message"]

    # A signed-in console session is not an Agent credential (contract 5.1.3).
    signed_in = console_client(owner, agent)
    answer = mcp_post(None, "tools/list", client=signed_in)
    assert answer.status_code == 401
    assert "resource_metadata=" in answer["WWW-Authenticate"]


def test_grant_keys_are_not_api_keys(grant_for, owner, agent, api):
    grant_for(owner, agent, ["runs:read"])
    key = ConnectedApplication.objects.get(agent=agent).grant_key
    assert key.kind == ApiKey.Kind.CONNECTED_APP
    listed = api.get("/v1/api_keys").json()["data"]
    assert key.pk not in {item["id"] for item in listed}
    page = console_client(owner, agent).get("/api-keys/")
    assert key.prefix not in page.content.decode()
    assert Client().get("/connected-apps/").status_code == 302  # sign-in first


def test_tool_errors_carry_the_api_message(grant_for, owner, agent):
    grant = grant_for(owner, agent, ["runs:read"])
    missing = _tool(grant.access_token, "read_run", {"run_id": "run_nope"})
    assert missing["isError"] is True
    assert "not_found" in missing["content"][0]["text"]
    unknown = _tool(grant.access_token, "usage")
    assert unknown["isError"] is True
    assert "'usage:read'" in unknown["content"][0]["text"]


def test_refresh_rotates_and_the_old_refresh_token_is_spent(grant_for, owner, agent):
    grant = grant_for(owner, agent, ["runs:read"])
    refreshed = Client().post(
        "/oauth/token/",
        {
            "grant_type": "refresh_token",
            "refresh_token": grant.refresh_token,
            "client_id": grant.client_id,
            "resource": MCP_RESOURCE,
        },
    )
    assert refreshed.status_code == 200, refreshed.content
    body = refreshed.json()
    assert body["access_token"] != grant.access_token
    assert f"agent:{agent.pk}" in body["scope"].split()
    assert _tool(body["access_token"], "list_runs")["isError"] is False
    assert mcp_post(grant.access_token, "tools/list").status_code == 401

    again = Client().post(
        "/oauth/token/",
        {
            "grant_type": "refresh_token",
            "refresh_token": grant.refresh_token,
            "client_id": grant.client_id,
        },
    )
    assert again.status_code == 400
    # Reusing a spent refresh token is taken as theft: the whole family is revoked.
    assert mcp_post(body["access_token"], "tools/list").status_code == 401


def test_mcp_has_no_server_stream_to_open(grant_for, owner, agent):
    grant = grant_for(owner, agent, ["runs:read"])
    answer = off_the_event_loop(
        lambda: Client().get(
            "/mcp",
            HTTP_AUTHORIZATION=f"Bearer {grant.access_token}",
            HTTP_ACCEPT="text/event-stream",
        )
    )
    assert answer.status_code == 405


def test_the_client_can_revoke_its_own_token(grant_for, owner, agent):
    grant = grant_for(owner, agent, ["runs:read"])
    answer = Client().post(
        "/oauth/revoke_token/", {"token": grant.access_token, "client_id": grant.client_id}
    )
    assert answer.status_code == 200
    assert mcp_post(grant.access_token, "tools/list").status_code == 401


def test_consenting_again_replaces_the_grant(grant_for, owner, agent):
    first = grant_for(owner, agent, ["runs:read"])
    second = grant_for(owner, agent, ["usage:read"], client_id=first.client_id)
    live = ConnectedApplication.objects.filter(agent=agent, revoked_at__isnull=True)
    assert live.count() == 1
    assert live.get().grant_key.scopes == ["usage:read"]
    assert mcp_post(first.access_token, "tools/list").status_code == 401
    assert mcp_post(second.access_token, "tools/list").status_code == 200


def test_members_cannot_grant_owner_permissions_and_lose_owner_operations(
    grant_for, owner, member, agent, workspace
):
    client_id = register_client()
    verifier, challenge = pkce_pair()
    browser = console_client(member, agent)
    fields = consent_form(browser, authorize_query(client_id, challenge, "webhooks:read"))
    page = browser.post(
        "/oauth/authorize/",
        {**fields, "agent_id": agent.pk, "granted_scopes": ["webhooks:read"], "allow": "1"},
    )
    assert page.status_code == 200
    assert "Only workspace owners can grant: webhooks:read" in unescape(page.content.decode())
    assert not ConnectedApplication.objects.exists()

    # An owner's grant keeps owner operations only while its member is an owner.
    grant_for(owner, agent, ["webhooks:read"])
    connection = ConnectedApplication.objects.get(agent=agent)
    api = ApiClient(_resource_token(connection))
    assert api.get(f"/v1/agents/{agent.pk}/webhook").status == 200
    Membership.objects.filter(user=owner, workspace=workspace).update(role=Membership.Role.MEMBER)
    assert api.get(f"/v1/agents/{agent.pk}/webhook").status == 403


def test_consent_refusal_and_agents_of_other_workspaces(owner, agent, other_agent):
    client_id = register_client()
    _verifier, challenge = pkce_pair()
    browser = console_client(owner, agent)
    fields = consent_form(browser, authorize_query(client_id, challenge, "runs:read"))

    stranger = browser.post(
        "/oauth/authorize/",
        {**fields, "agent_id": other_agent.pk, "granted_scopes": ["runs:read"], "allow": "1"},
    )
    assert stranger.status_code == 200
    assert "Choose one of your workspaces' active Agents." in unescape(stranger.content.decode())

    denied = browser.post("/oauth/authorize/", {**fields, "agent_id": agent.pk, "deny": "1"})
    assert denied.status_code == 302
    query = parse_qs(urlsplit(denied["Location"]).query)
    assert denied["Location"].startswith(REDIRECT_URI)
    assert query["error"] == ["access_denied"]
    assert query["state"] == ["st4te"]
    assert not ConnectedApplication.objects.exists()
    assert not AccessToken.objects.filter(user=owner).exists()


def test_consent_page_lets_the_form_reach_only_the_registered_redirect(owner, agent):
    client_id = register_client()
    _verifier, challenge = pkce_pair()
    browser = console_client(owner, agent)
    page = browser.get(f"/oauth/authorize/?{authorize_query(client_id, challenge, 'runs:read')}")
    policy = page["Content-Security-Policy"]
    assert "form-action 'self' http://localhost:53682;" in policy
    assert "script-src 'self';" in policy

    fields = consent_form(browser, authorize_query(client_id, challenge, "runs:read"))
    tampered = browser.post(
        "/oauth/authorize/",
        {**fields, "redirect_uri": "http://x;script-src *", "agent_id": "", "allow": "1"},
    )
    assert "script-src *" not in tampered["Content-Security-Policy"]
    assert "form-action 'self';" in tampered["Content-Security-Policy"]


def test_discovery_documents_describe_the_flow_mcp_clients_use():
    server = Client().get("/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == "http://testserver"
    assert server["response_types_supported"] == ["code"]
    assert set(server["grant_types_supported"]) == {"authorization_code", "refresh_token"}
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["registration_endpoint"] == "http://testserver/oauth/register/"
    assert server["authorization_endpoint"] == "http://testserver/oauth/authorize/"
    assert "api_keys:create" not in server["scopes_supported"]

    resource = Client().get("/.well-known/oauth-protected-resource/mcp").json()
    assert resource["resource"] == MCP_RESOURCE
    assert resource["authorization_servers"] == ["http://testserver"]
    assert "runs:read" in resource["scopes_supported"]

    challenge = mcp_post(None, "tools/list")
    assert challenge.status_code == 401
    # The challenge names what the tools need (MCP scope selection), and so does the
    # resource's metadata: a client that follows the specification asks for those.
    assert challenge["WWW-Authenticate"] == (
        'Bearer scope="conversations:read knowledge:read runs:read usage:read",'
        'resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp"'
    )
    assert resource["scopes_supported"] == [
        "conversations:read",
        "knowledge:read",
        "runs:read",
        "usage:read",
    ]
    assert "none" in server["token_endpoint_auth_methods_supported"]


def test_no_request_can_hold_a_worker_open(grant_for, owner, agent):
    """Nothing is pushed to clients, so a request for a lasting stream is answered at once."""
    grant = grant_for(owner, agent, ["runs:read"])
    answer = mcp_post(grant.access_token, "subscriptions/listen", {})
    assert answer.status_code in (200, 400)
    assert "error" in answer.json()


def test_the_hourly_sweep_removes_expired_tokens(grant_for, owner, agent):
    from apps.mcp_server.tasks import clear_expired_tokens

    grant_for(owner, agent, ["runs:read"])
    assert AccessToken.objects.filter(user=owner).exists()
    assert SpentAuthorizationCode.objects.count() == 1
    with time_machine.travel(timezone.now() + timedelta(days=29)):
        assert clear_expired_tokens() == "cleared"
    # Its refresh token still lives: a replay of its code must still be able to revoke it.
    assert SpentAuthorizationCode.objects.count() == 1
    with time_machine.travel(timezone.now() + timedelta(days=31)):
        assert clear_expired_tokens() == "cleared"
    assert not AccessToken.objects.filter(user=owner).exists()
    assert not SpentAuthorizationCode.objects.exists()
    # The grant itself stays until someone disconnects it.
    assert ConnectedApplication.objects.filter(agent=agent, revoked_at__isnull=True).exists()


def test_connected_apps_list_counts_sorts_and_filters(owner, agent):
    for name in ("zed Editor", "Alpha Desktop", "Mid IDE"):
        obtain_grant(owner, agent, ["runs:read"], client_id=register_client(name))
    connections = {c.application.name: c for c in ConnectedApplication.objects.filter(agent=agent)}
    connected_app_revoke(connection=connections["Mid IDE"], by_user=owner)
    ConnectedApplication.objects.filter(pk=connections["zed Editor"].pk).update(
        last_used_at=timezone.now()
    )
    browser = console_client(owner, agent)

    def names(query: str) -> list[str]:
        html = browser.get(f"/connected-apps/?{query}").content.decode()
        return re.findall(r'<td data-label="Application" class="name">([^<]+)</td>', html)

    assert names("sort=name&dir=asc") == ["Alpha Desktop", "Mid IDE", "zed Editor"]
    assert names("sort=name&dir=desc") == ["zed Editor", "Mid IDE", "Alpha Desktop"]
    assert names("sort=last_used&dir=desc")[0] == "zed Editor"
    assert names("status=active&sort=name&dir=asc") == ["Alpha Desktop", "zed Editor"]
    assert names("status=revoked") == ["Mid IDE"]
    assert len(names("status=bogus")) == 3
    page = browser.get("/connected-apps/?status=revoked").content.decode()
    assert "1 application matches these filters" in page
    assert "3 applications" in browser.get("/connected-apps/").content.decode()
