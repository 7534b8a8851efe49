"""The API keys page: create (secret once), list, revoke; owners and members."""

import re

import pytest

from apps.workspaces.models import ApiKey
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner_client(client, owner, agent):
    client.force_login(owner)
    return client


def test_console_requires_login(client, agent):
    response = client.get("/api-keys/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


@pytest.mark.smoke
def test_create_shows_secret_exactly_once(owner_client, agent):
    response = owner_client.post(
        "/api-keys/new/", {"name": "Backend", "scopes": ["runs:read", "users:read"]}
    )
    assert response.status_code == 302
    page = owner_client.get("/api-keys/").content.decode()
    secret = re.search(r'id="new-key-secret">(ack_[^<]+)<', page).group(1)
    assert ApiClient(secret).get("/v1/connection").json()["scopes"] == ["runs:read", "users:read"]
    again = owner_client.get("/api-keys/").content.decode()
    assert secret not in again
    assert "Backend" in again and ApiKey.objects.get().prefix in again


def test_create_refuses_missing_name_or_scopes(owner_client):
    response = owner_client.post("/api-keys/new/", {"name": "", "scopes": []})
    assert response.status_code == 400
    assert b"Choose at least one permission" in response.content
    assert ApiKey.objects.count() == 0


def test_page_offers_every_permission(owner_client):
    from apps.workspaces.scopes import CONTRACT_SCOPES

    html = owner_client.get("/api-keys/").content.decode()
    for scope in CONTRACT_SCOPES:
        assert f'value="{scope}"' in html


def test_revoke_with_htmx_swaps_the_row(owner_client, agent, owner):
    from tests.factories import api_key_factory

    key, raw = api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner)
    response = owner_client.post(f"/api-keys/{key.pk}/revoke/", headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert f'id="api-key-row-{key.pk}"' in response.content.decode()
    assert "Revoked" in response.content.decode()
    assert "<html" not in response.content.decode()
    assert ApiClient(raw).get("/v1/connection").status == 401


def test_member_cannot_grant_owner_scopes_or_revoke_others_keys(client, member, agent, owner):
    from tests.factories import api_key_factory

    client.force_login(member)
    response = client.post("/api-keys/new/", {"name": "Hooks", "scopes": ["webhooks:read"]})
    assert response.status_code == 400
    assert b"Only workspace owners can grant" in response.content
    owners_key, raw = api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner)
    client.post(f"/api-keys/{owners_key.pk}/revoke/")
    assert ApiClient(raw).get("/v1/connection").status == 200
    ok = client.post("/api-keys/new/", {"name": "Mine", "scopes": ["runs:read"]})
    assert ok.status_code == 302


def test_agent_switcher_only_switches_to_own_agents(
    owner_client, agent, sibling_agent, other_agent
):
    owner_client.post("/agent/switch/", {"agent_id": sibling_agent.pk, "next": "/api-keys/"})
    assert sibling_agent.name in owner_client.get("/api-keys/").content.decode()
    owner_client.post("/agent/switch/", {"agent_id": other_agent.pk, "next": "/api-keys/"})
    page = owner_client.get("/api-keys/").content.decode()
    assert other_agent.name not in page
