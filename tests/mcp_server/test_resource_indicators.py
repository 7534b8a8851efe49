"""RFC 8707 resource indicators (issue 34, section 6): the authorization server grants access to
this service's MCP server only. A `resource` naming anything else is `invalid_target` at the
authorization endpoint (an error redirect to the client, nothing granted) and at the token
endpoint (nothing issued); the consent page says where the access will work; and the client
cannot ask to skip that page. Through the real endpoints, as an MCP client drives them."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.test import Client
from oauth2_provider.models import AccessToken, Grant

from apps.mcp_server.models import ConnectedApplication
from tests.mcp_server.conftest import (
    MCP_RESOURCE,
    REDIRECT_URI,
    authorize_query,
    code_exchange,
    consent_form,
    mcp_post,
    obtain_grant,
    pkce_pair,
    register_client,
)

pytestmark = pytest.mark.django_db

FOREIGN_RESOURCES = [
    "https://evil.example/mcp",
    "https://evil.example",
    "https://testserver/mcp",  # another scheme
    "http://testserver:8443/mcp",  # another port
    "http://testserver.evil.example/mcp",
    "http://testserver@evil.example/mcp",
    "http://testserver/v1",  # ours, but it takes no OAuth token
    "http://testserver/mcp/other",
    "http://testserver/mcp?tenant=2",
    "urn:example:resource",
]
OUR_RESOURCES = [
    MCP_RESOURCE,
    "http://testserver/mcp/",
    "http://TestServer:80/mcp",
    "http://testserver",
    "http://testserver/",
]


def _signed_in(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def _authorize(browser: Client, client_id: str, *, resource: str | None, **extra) -> object:
    _verifier, challenge = pkce_pair()
    query = parse_qs(authorize_query(client_id, challenge, "runs:read"))
    params = {name: values[0] for name, values in query.items()}
    params.pop("resource")
    if resource is not None:
        params["resource"] = resource
    params.update(extra)
    return browser.get(f"/oauth/authorize/?{urlencode(params)}")


@pytest.mark.parametrize("resource", FOREIGN_RESOURCES)
def test_authorize_refuses_a_resource_that_is_not_ours_with_invalid_target(owner, resource):
    """Before: the consent page was shown and a code issued for https://evil.example/mcp."""
    client_id = register_client()
    answer = _authorize(_signed_in(owner), client_id, resource=resource)
    assert answer.status_code == 302, answer.content[:300]
    location = urlsplit(answer["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT_URI
    query = parse_qs(location.query)
    assert query["error"] == ["invalid_target"]
    assert "http://testserver/mcp" in query["error_description"][0]
    assert query["state"] == ["st4te"]
    assert query["iss"] == ["http://testserver"]
    assert not Grant.objects.exists()


@pytest.mark.parametrize("resource", OUR_RESOURCES)
def test_authorize_takes_our_mcp_server_under_each_of_its_names(owner, resource):
    answer = _authorize(_signed_in(owner), register_client(), resource=resource)
    assert answer.status_code == 200, answer.get("Location")


def test_one_foreign_resource_among_ours_is_refused(owner):
    client_id = register_client()
    _verifier, challenge = pkce_pair()
    query = authorize_query(client_id, challenge, "runs:read")  # names MCP_RESOURCE
    answer = _signed_in(owner).get(
        f"/oauth/authorize/?{query}&{urlencode({'resource': 'https://evil.example/mcp'})}"
    )
    assert answer.status_code == 302
    assert parse_qs(urlsplit(answer["Location"]).query)["error"] == ["invalid_target"]


def test_the_consent_page_shows_the_resource(owner):
    """Before: the page did not say which server the access is for."""
    answer = _authorize(_signed_in(owner), register_client(), resource=MCP_RESOURCE)
    assert answer.status_code == 200
    page = answer.content.decode()
    shown = page[page.index('id="consent-resource"') :].split("</p>", 1)[0]
    assert f"<code>{MCP_RESOURCE}</code>" in shown


def test_without_a_resource_the_consent_page_names_where_the_tokens_work(owner):
    answer = _authorize(_signed_in(owner), register_client(), resource=None)
    assert answer.status_code == 200
    page = answer.content.decode()
    shown = page[page.index('id="consent-resource"') :].split("</p>", 1)[0]
    assert "<code>http://testserver/mcp</code>" in shown


def test_a_resource_changed_on_the_consent_form_grants_nothing(owner, agent):
    """The hidden field is checked again when the member answers: a changed one is a form
    error, no code and no grant."""
    client_id = register_client()
    _verifier, challenge = pkce_pair()
    browser = _signed_in(owner)
    fields = consent_form(browser, authorize_query(client_id, challenge, "runs:read"))
    answer = browser.post(
        "/oauth/authorize/",
        {
            **fields,
            "resource": "https://evil.example/mcp",
            "agent_id": agent.pk,
            "granted_scopes": ["runs:read"],
            "allow": "1",
        },
    )
    assert "code=" not in answer.get("Location", "")
    assert "https://evil.example/mcp" in answer.content.decode()
    assert not Grant.objects.exists()
    assert not ConnectedApplication.objects.exists()


def _code_without_resource(owner, agent) -> dict:
    """A code exchange whose authorization named no resource (RFC 8707 leaves it optional)."""
    client_id = register_client()
    verifier, challenge = pkce_pair()
    browser = _signed_in(owner)
    query = parse_qs(authorize_query(client_id, challenge, "runs:read"))
    params = {name: values[0] for name, values in query.items() if name != "resource"}
    fields = consent_form(browser, urlencode(params))
    answer = browser.post(
        "/oauth/authorize/",
        {**fields, "agent_id": agent.pk, "granted_scopes": ["runs:read"], "allow": "1"},
    )
    code = parse_qs(urlsplit(answer["Location"]).query)["code"][0]
    return {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT_URI,
        "client_id": client_id,
        "code_verifier": verifier,
    }


@pytest.mark.parametrize("resource", ["https://evil.example/mcp", "http://testserver/v1"])
def test_the_token_endpoint_refuses_a_resource_that_is_not_ours(owner, agent, resource):
    """Before: a code granted for no resource in particular was exchanged for a token bound to
    https://evil.example/mcp."""
    exchange = _code_without_resource(owner, agent)
    refused = Client().post("/oauth/token/", {**exchange, "resource": resource})
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_target"
    assert "http://testserver/mcp" in refused.json()["error_description"]
    assert not AccessToken.objects.filter(user=owner).exists()
    # The code was not spent by the refusal: the client may still exchange it for our server.
    token = Client().post("/oauth/token/", {**exchange, "resource": MCP_RESOURCE})
    assert token.status_code == 200, token.content
    assert mcp_post(token.json()["access_token"], "tools/list").status_code == 200


def test_a_refresh_cannot_move_a_token_to_another_resource(owner, agent):
    exchange = _code_without_resource(owner, agent)
    first = Client().post("/oauth/token/", exchange).json()
    refused = Client().post(
        "/oauth/token/",
        {
            "grant_type": "refresh_token",
            "refresh_token": first["refresh_token"],
            "client_id": exchange["client_id"],
            "resource": "https://evil.example/mcp",
        },
    )
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_target"
    assert not AccessToken.objects.filter(resource__contains=["https://evil.example/mcp"]).exists()


def test_a_token_for_our_resource_is_bound_to_it_and_works(owner, agent):
    exchange = code_exchange(owner, agent, ["runs:read"])
    answer = Client().post("/oauth/token/", exchange)
    assert answer.status_code == 200, answer.content
    token = AccessToken.objects.get(user=owner)
    assert token.resource == [MCP_RESOURCE]
    assert mcp_post(answer.json()["access_token"], "tools/list").status_code == 200


def test_the_client_cannot_skip_the_consent_page(owner, agent):
    """`approval_prompt=auto` let a client that already held a token of the member skip the
    page: a code left without the member choosing an Agent or permissions."""
    grant = obtain_grant(owner, agent, ["runs:read"])
    answer = _authorize(
        _signed_in(owner), grant.client_id, resource=MCP_RESOURCE, approval_prompt="auto"
    )
    assert answer.status_code == 200, answer.get("Location")
    assert 'id="consent-form"' in answer.content.decode()
    assert Grant.objects.count() == 0
