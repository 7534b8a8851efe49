"""After PostgreSQL restarts, no request answers 503 (issue 24, item 7).

gunicorn (threads, persistent connections as production runs it) reaches the test database
through a TCP proxy (tests/tcp_proxy.py); cutting the proxy drops every open connection at
once, exactly as a restart of PostgreSQL does, without touching the machine's server. Before,
each thread's stale connection answered one 503 in the first burst after the restart; with
CONN_HEALTH_CHECKS a connection is checked before a request reuses it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.db import connection

from tests.factories import api_key_factory
from tests.tcp_proxy import CuttableProxy
from tests.web_server import GunicornServer

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 4
BURST = 24


def _burst(url: str, key: str) -> list[int]:
    # One client for the burst: a client per request loads the CA bundle each time.
    with httpx.Client(timeout=30) as http, ThreadPoolExecutor(BURST) as pool:

        def one(_index: int) -> int:
            return http.get(
                f"{url}/v1/connection", headers={"Authorization": f"Bearer {key}"}
            ).status_code

        return list(pool.map(one, range(BURST)))


def test_no_request_fails_after_the_database_restarts(agent, owner, settings):
    if not settings.IS_POSTGRES:
        pytest.skip("a PostgreSQL drill")
    _key, raw = api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner)
    db = connection.settings_dict
    proxy = CuttableProxy(int(db["PORT"] or 5432))
    web = GunicornServer(
        threads=THREADS,
        DATABASE_URL=f"postgres://{db['USER']}@127.0.0.1:{proxy.port}/{db['NAME']}",
        # The key is read from the database each time, so every request needs a connection.
        REDIS_URL="",
    ).start()
    try:
        assert set(_burst(web.url, raw)) == {200}  # every thread holds a connection now
        proxy.cut()
        proxy.restore()  # PostgreSQL is back; the threads' connections are dead
        statuses = _burst(web.url, raw)
        assert statuses.count(200) == BURST, statuses
    finally:
        web.stop()
