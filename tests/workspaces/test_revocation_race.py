"""Revocation against requests in flight (issue 24, item 1): once a revocation returns, no
request sent afterwards succeeds, whatever the requests in flight did with the key cache.

A live server answers many concurrent requests while the key is revoked. The revocation holds
its row lock a while (`then` sleeps inside its transaction, the code's own hook), so requests
that read the still-active row (from the database or the cache) and wait on that lock to record
`last_used_at` resume right at the commit and try to cache the key they hold. Before the fix
that write landed after the cache entry was dropped and the key answered 200 for a minute.
Each scenario is repeated; every request is timed from when it was sent.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

import httpx
import pytest
from django.db import connections
from django.utils import timezone

from apps.mcp_server.resource_tokens import resource_token_sign
from apps.workspaces.browser_tokens import browser_token_sign
from apps.workspaces.models import ApiKey
from apps.workspaces.services import api_key_create, api_key_revoke_now
from tests.examples import examples

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = examples(3)  # one round in `make test-fast` (tests/examples.py)
CLIENTS = 12
HOLD_SECONDS = 0.5  # the revocation's transaction stays open this long
AFTER_SECONDS = 1.0  # requests keep coming this long after the revocation returned


@dataclass
class Hammer:
    """CLIENTS threads sending `path` with `token` until stopped, each answer timed."""

    base_url: str
    path: str
    token: str
    results: list[tuple[float, int]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    served: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)
    http: httpx.Client = field(init=False)

    def _run(self, http: httpx.Client) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        while not self.stop.is_set():
            sent = time.monotonic()
            status = http.get(self.path, headers=headers).status_code
            self.results.append((sent, status))
            if status == 200:
                self.served.set()

    def start(self) -> Hammer:
        # One client shared by the threads (httpx's pool is thread-safe, each thread gets its
        # own connection): a client per thread built twelve TLS contexts a round, loading the
        # CA bundle each time, about a tenth of this module's CPU for plain-HTTP requests.
        self.http = httpx.Client(base_url=self.base_url, timeout=30)
        self.threads = [
            threading.Thread(target=self._run, args=(self.http,)) for _ in range(CLIENTS)
        ]
        for thread in self.threads:
            thread.start()
        return self

    def finish(self) -> list[tuple[float, int]]:
        self.stop.set()
        for thread in self.threads:
            thread.join(30)
        self.http.close()
        return self.results


def _credential(kind: str, agent, owner, audience: str) -> tuple[ApiKey, str, str]:
    """A fresh, never used key and the credential built on it: (key, token, path)."""
    if kind == "resource_token":
        key, _secret = api_key_create(
            agent=agent,
            name="grant",
            scopes=["conversations:read"],
            created_by=owner,
            kind=ApiKey.Kind.CONNECTED_APP,
        )
        raw, _token = resource_token_sign(
            connection_id="cap_race",
            grant_key=key,
            scopes=["conversations:read"],
            audience=audience,
            not_after=timezone.now() + timedelta(days=1),
        )
        return key, raw, "/v1/connection"
    key, raw = api_key_create(
        agent=agent, name="race", scopes=["conversations:read"], created_by=owner
    )
    if kind == "browser_token":
        token, _token = browser_token_sign(key=key, user_id="usr_race", lifetime_seconds=600)
        return key, token, "/v1/me/conversations"
    return key, raw, "/v1/connection"


def _revoke_holding_the_lock(key: ApiKey, locked: threading.Event) -> Callable[[], float]:
    """Start revoking `key` in a thread; `locked` is set once its row is locked. Returns a
    function that waits for the revocation and gives the moment it returned."""
    returned: list[float] = []

    def hold() -> None:
        locked.set()
        time.sleep(HOLD_SECONDS)

    def revoke() -> None:
        try:
            api_key_revoke_now(key, then=hold)
            returned.append(time.monotonic())
        finally:
            connections.close_all()  # this thread's own connection

    thread = threading.Thread(target=revoke)
    thread.start()

    def wait() -> float:
        thread.join(30)
        assert returned, "the revocation did not return"
        return returned[0]

    return wait


def _late_successes(results: list[tuple[float, int]], returned: float) -> list[int]:
    return [status for sent, status in results if sent > returned and status != 401]


@pytest.mark.parametrize("kind", ["api_key", "browser_token", "resource_token"])
def test_requests_waiting_on_the_revocation_cannot_cache_the_key_again(
    live_server, agent, owner, private_redis, kind
):
    """The issue's repro: requests that need a `last_used_at` refresh arrive while the
    revocation holds the row; they resume at its commit."""
    audience = f"{live_server.url}/v1"
    for _round in range(ROUNDS):
        key, token, path = _credential(kind, agent, owner, audience)
        locked = threading.Event()
        wait = _revoke_holding_the_lock(key, locked)
        assert locked.wait(10)
        hammer = Hammer(live_server.url, path, token).start()
        returned = wait()
        time.sleep(AFTER_SECONDS)
        results = hammer.finish()
        after = [status for sent, status in results if sent > returned]
        assert after, "no request was sent after the revocation returned"
        assert _late_successes(results, returned) == []


@pytest.mark.parametrize("kind", ["api_key", "browser_token", "resource_token"])
def test_a_revocation_at_a_random_moment_among_concurrent_requests(
    live_server, agent, owner, private_redis, kind
):
    """Requests already running (the key used and cached), the revocation at a random 0-250 ms,
    repeated: zero successes for requests sent after it returned."""
    audience = f"{live_server.url}/v1"
    rng = random.Random(24)
    for _round in range(ROUNDS):
        key, token, path = _credential(kind, agent, owner, audience)
        hammer = Hammer(live_server.url, path, token).start()
        assert hammer.served.wait(10), "the credential never worked"
        time.sleep(rng.uniform(0, 0.25))
        locked = threading.Event()
        returned = _revoke_holding_the_lock(key, locked)()
        time.sleep(AFTER_SECONDS)
        results = hammer.finish()
        assert any(status == 200 for sent, status in results if sent < returned), (
            "the credential never worked before its revocation: the race was not run"
        )
        assert _late_successes(results, returned) == []
