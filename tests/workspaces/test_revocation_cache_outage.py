"""Revocation takes effect on the next request whatever the key cache (Redis) does.

The cache is a private redis-server (tests/redis_server.py) paused for writes with
`CLIENT PAUSE ... WRITE`: reads still answer, so a cached copy of the key is still served, but
the revocation cannot delete it. The revocation must then fail and say so, never return while
the key keeps working.
"""

from __future__ import annotations

import time

import pytest

from apps.common.errors import ServiceUnavailable
from apps.workspaces.models import ApiKey
from apps.workspaces.services import api_key_revoke
from tests.conftest import ApiClient
from tests.factories import api_key_factory
from tests.redis_server import RedisServer

pytestmark = pytest.mark.django_db

PAUSE_MS = 6000


@pytest.fixture
def key_cache(private_redis):
    """The key cache on a private Redis, unpaused before it stops."""
    yield private_redis
    private_redis.client().execute_command("CLIENT", "UNPAUSE")


def _cached_key_count(server: RedisServer) -> int:
    return len(server.client().keys("api-key:*"))


def test_revocation_while_the_cache_refuses_writes_fails_and_then_succeeds(api, agent, key_cache):
    assert api.get("/v1/connection").status == 200
    assert _cached_key_count(key_cache) == 1  # the key now answers from the cache

    key_cache.client().execute_command("CLIENT", "PAUSE", PAUSE_MS, "WRITE")
    paused_at = time.monotonic()
    with pytest.raises(ServiceUnavailable, match="not revoked"):
        api_key_revoke(agent=agent, key_id=api.key.pk, by_user=None)
    # Nothing changed: the key is active in the database, so the cached copy is the truth.
    assert ApiKey.objects.get(pk=api.key.pk).revoked_at is None
    assert api.get("/v1/connection").status == 200
    assert time.monotonic() - paused_at < PAUSE_MS / 1000, "the test outlived its pause"

    key_cache.client().execute_command("CLIENT", "UNPAUSE")
    api_key_revoke(agent=agent, key_id=api.key.pk, by_user=None)
    response = api.get("/v1/connection")
    assert response.status == 401
    assert response.json()["message"] == "The API key has been revoked."


def test_a_successful_revocation_is_never_answered_from_the_cache(api, agent, key_cache):
    """The invariant, whichever way the revocation ends: once it returns, the key is refused."""
    assert api.get("/v1/connection").status == 200
    key_cache.client().execute_command("CLIENT", "PAUSE", PAUSE_MS, "WRITE")
    try:
        api_key_revoke(agent=agent, key_id=api.key.pk, by_user=None)
    except ServiceUnavailable:
        assert api.get("/v1/connection").status == 200
    else:
        assert api.get("/v1/connection").status == 401


def test_console_revocation_while_the_cache_refuses_writes_shows_an_error(
    client, owner, agent, key_cache
):
    key, raw = api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner)
    assert ApiClient(raw).get("/v1/connection").status == 200
    client.force_login(owner)
    key_cache.client().execute_command("CLIENT", "PAUSE", PAUSE_MS, "WRITE")
    response = client.post(f"/api-keys/{key.pk}/revoke/", follow=True)
    assert response.status_code == 200
    html = response.content.decode()
    assert "could not be cleared" in html and "Revoked “" not in html
    assert ApiKey.objects.get(pk=key.pk).revoked_at is None
