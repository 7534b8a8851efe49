"""The API keys page: create (secret once), list, revoke; owners and members."""

import re
from datetime import UTC, datetime, timedelta

import pytest

from apps.workspaces.models import ApiKey
from tests.conftest import ApiClient
from tests.factories import api_key_factory

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
    from apps.api.scopes import CONTRACT_SCOPES

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


# --- expiry ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("choice", "days"), [("7", 7), ("30", 30), ("90", 90)])
def test_create_with_a_lifetime_sets_the_expiry(owner_client, choice, days, time_machine):
    from datetime import UTC, datetime, timedelta

    time_machine.move_to("2026-04-01T08:00:00Z", tick=False)
    response = owner_client.post(
        "/api-keys/new/", {"name": "Temp", "scopes": ["runs:read"], "expires": choice}
    )
    assert response.status_code == 302
    expected = datetime(2026, 4, 1, 8, tzinfo=UTC) + timedelta(days=days)
    assert ApiKey.objects.get().expires_at == expected


def test_create_on_a_date_works_through_that_day(owner_client, time_machine):
    from datetime import UTC, datetime

    time_machine.move_to("2026-04-01T08:00:00Z", tick=False)
    owner_client.post(
        "/api-keys/new/",
        {"name": "Dated", "scopes": ["runs:read"], "expires": "date", "expires_on": "2026-04-10"},
    )
    assert ApiKey.objects.get().expires_at == datetime(2026, 4, 11, tzinfo=UTC)


@pytest.mark.parametrize("expires_on", ["", "2026-03-31", "not-a-date"])
def test_create_on_a_missing_or_past_date_is_refused(owner_client, time_machine, expires_on):
    time_machine.move_to("2026-04-01T08:00:00Z", tick=False)
    response = owner_client.post(
        "/api-keys/new/",
        {"name": "Bad", "scopes": ["runs:read"], "expires": "date", "expires_on": expires_on},
    )
    assert response.status_code == 400
    assert b'class="field-error"' in response.content
    assert not ApiKey.objects.exists()


def test_create_without_expiry_never_expires(owner_client):
    owner_client.post("/api-keys/new/", {"name": "Forever", "scopes": ["runs:read"]})
    assert ApiKey.objects.get().expires_at is None


def test_expired_keys_show_as_expired_and_cannot_be_used(owner_client, agent, owner, time_machine):
    from datetime import timedelta

    from django.utils import timezone

    from apps.workspaces.services import api_key_create

    time_machine.move_to("2026-04-01T08:00:00Z", tick=False)
    key, raw = api_key_create(
        agent=agent,
        name="Soon gone",
        scopes=["runs:read"],
        created_by=owner,
        expires_at=timezone.now() + timedelta(days=1),
    )
    html = owner_client.get("/api-keys/").content.decode()
    row = re.search(rf'<tr id="api-key-row-{key.pk}".*?</tr>', html, re.S).group(0)
    assert "in 1" in row and "Expired" not in row
    time_machine.move_to("2026-04-03T08:00:00Z", tick=False)
    html = owner_client.get("/api-keys/").content.decode()
    row = re.search(rf'<tr id="api-key-row-{key.pk}".*?</tr>', html, re.S).group(0)
    assert "badge-expired" in row and "row-muted" in row
    assert ApiClient(raw).get("/v1/connection").status == 401


def test_member_cannot_grant_owner_scopes_through_the_shared_rule(client, member, agent):
    client.force_login(member)
    response = client.post("/api-keys/new/", {"name": "M", "scopes": ["webhooks:read"]})
    assert response.status_code == 400
    assert b"Only workspace owners can grant: webhooks:read" in response.content
    assert not ApiKey.objects.exists()


# --- bulk revoke (issue 26, item 4) ------------------------------------------------------------


def test_bulk_revoke_asks_with_the_count_then_revokes_at_once(owner_client, agent, owner):
    from tests.conftest import ApiClient
    from tests.factories import api_key_factory

    keys = [api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner) for _ in range(3)]
    ids = [key.pk for key, _raw in keys[:2]]

    asked = owner_client.post("/api-keys/revoke/", {"ids": ids}).content.decode()
    assert "Revoke 2 keys?" in asked and "stop working immediately" in asked

    done = owner_client.post("/api-keys/revoke/", {"ids": ids, "confirm": "1"}, follow=True)
    assert "Revoked 2 keys." in done.content.decode()
    assert [ApiClient(raw).get("/v1/connection").status for _key, raw in keys] == [401, 401, 200]


def test_a_member_bulk_revoking_others_keys_is_told_why_they_stay(member, agent, owner):
    from django.test import Client

    from tests.factories import api_key_factory

    owners_key, _ = api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner)
    client = Client()
    client.force_login(member)
    done = client.post(
        "/api-keys/revoke/", {"ids": [owners_key.pk], "confirm": "1"}, follow=True
    ).content.decode()
    assert (
        "Revoked 0 keys. 1 left as it was: Only owners can revoke keys created by someone else."
        in done
    )
    owners_key.refresh_from_db()
    assert owners_key.revoked_at is None


def _names_on(page: str) -> list[str]:
    return re.findall(r'<td data-label="Name" class="name">([^<]+)</td>', page)


def test_filters_by_status_and_name_and_sorts_by_last_use(owner_client, agent, owner):
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    keys = {}
    for name in ("Live used", "Live unused", "Expired job", "Revoked job"):
        keys[name], _ = api_key_factory(agent=agent, scopes=["runs:read"], name=name)
    ApiKey.objects.filter(pk=keys["Live used"].pk).update(last_used_at=t0)
    ApiKey.objects.filter(pk=keys["Expired job"].pk).update(
        expires_at=t0, last_used_at=t0 - timedelta(days=1)
    )
    ApiKey.objects.filter(pk=keys["Revoked job"].pk).update(revoked_at=t0)

    def names(query: str) -> list[str]:
        return _names_on(owner_client.get(f"/api-keys/?{query}").content.decode())

    assert sorted(names("status=active")) == ["Live unused", "Live used"]
    assert names("status=expired") == ["Expired job"]
    assert names("status=revoked") == ["Revoked job"]
    assert sorted(names("q=JOB")) == ["Expired job", "Revoked job"]
    assert len(names("status=bogus")) == 4  # an unknown status filters nothing
    # Never used sorts below every used key, whichever way round.
    assert names("sort=last_used&dir=desc")[:2] == ["Live used", "Expired job"]
    assert names("sort=last_used&dir=asc")[2:] == ["Expired job", "Live used"]
    page = owner_client.get("/api-keys/?status=revoked").content.decode()
    assert "1 key matches these filters" in page
