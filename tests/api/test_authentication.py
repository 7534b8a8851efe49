"""Contract 5.1/5.2: Bearer keys, exact 401 and 403 behaviour, hashed storage."""

import hashlib

import pytest

from apps.workspaces.models import ApiKey
from apps.workspaces.services import api_key_revoke
from tests.conftest import ApiClient

pytestmark = [pytest.mark.django_db, pytest.mark.smoke]


def assert_unauthorized(response):
    assert response.status == 401
    assert response.headers["Content-Type"] == "application/json"
    assert set(response.json()) == {"name", "message"}
    assert response.json()["name"] == "unauthorized"
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="agent-console"'


def test_missing_key_is_unauthorized_with_bearer_challenge(anonymous_api):
    assert_unauthorized(anonymous_api.get("/v1/connection"))


@pytest.mark.parametrize(
    "header",
    [
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "Bearer ",
        "Token ack_abc",
        "Bearer not-a-key",
        "Bearer ack_short",
    ],
)
def test_malformed_authorization_is_unauthorized(agent, header):
    client = ApiClient(None)
    assert_unauthorized(client.get("/v1/connection", headers={"Authorization": header}))


def test_unknown_key_is_unauthorized(api):
    forged = api.raw_key[:-4] + ("AAAA" if not api.raw_key.endswith("AAAA") else "BBBB")
    assert_unauthorized(ApiClient(forged).get("/v1/connection"))


def test_revoked_key_is_unauthorized_immediately(api, agent):
    assert api.get("/v1/connection").status == 200
    api_key_revoke(agent=agent, key_id=api.key.pk, by_user=None)
    assert_unauthorized(api.get("/v1/connection"))


def test_key_of_archived_agent_is_unauthorized(api, agent):
    agent.status = "archived"
    agent.save(update_fields=["status"])
    assert_unauthorized(api.get("/v1/connection"))


def test_key_is_stored_hashed_only(api):
    stored = ApiKey.objects.get(pk=api.key.pk)
    secret = api.raw_key.split("_", 1)[1][12:]
    assert secret not in str(stored.__dict__)
    assert stored.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert api.raw_key.startswith(f"ack_{stored.lookup_id}")


def test_last_used_at_is_written_at_most_once_a_minute(api, time_machine):
    time_machine.move_to("2026-01-01T10:00:00Z", tick=False)
    api.get("/v1/connection")
    first = ApiKey.objects.get(pk=api.key.pk).last_used_at
    assert first is not None
    time_machine.move_to("2026-01-01T10:00:30Z", tick=False)
    api.get("/v1/connection")
    assert ApiKey.objects.get(pk=api.key.pk).last_used_at == first
    time_machine.move_to("2026-01-01T10:01:30Z", tick=False)
    api.get("/v1/connection")
    assert ApiKey.objects.get(pk=api.key.pk).last_used_at > first


def test_revocation_and_archiving_apply_at_once_with_the_key_cache(api, agent, settings):
    """The key row is cached in Redis; revoking or archiving still refuses the next request."""
    if not settings.REDIS_URL:
        pytest.skip("the key cache is only used with a shared cache")
    assert api.get("/v1/connection").status == 200
    assert api.get("/v1/connection").status == 200  # served from the cache
    agent.status = "archived"
    agent.save(update_fields=["status"])
    assert_unauthorized(api.get("/v1/connection"))
    agent.status = "active"
    agent.save(update_fields=["status"])
    assert api.get("/v1/connection").status == 200
    api_key_revoke(agent=agent, key_id=api.key.pk, by_user=None)
    assert_unauthorized(api.get("/v1/connection"))


def test_cache_outage_falls_back_to_the_database(api, settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
            "OPTIONS": {"socket_connect_timeout": 0.2},
        }
    }
    assert api.get("/v1/connection").status == 200
