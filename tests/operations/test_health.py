"""GET /healthz and GET /readyz, and the worker's and beat's checks, with PostgreSQL, Redis (and
the broker on it), the worker and beat each stopped in turn.

PostgreSQL is "stopped" as its clients see it: the test's connection goes through a TCP proxy
that is then cut (connections reset, new ones refused); the machine's PostgreSQL, shared with
other test workers, is never stopped. Redis is a private redis-server that is really stopped
and started again (tests/redis_server.py).
"""

from __future__ import annotations

import logging
import time

import orjson
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from tests.redis_server import RedisServer
from tests.tcp_proxy import CuttableProxy
from tests.workers import BeatProcess, WorkerProcess, broker_at, wait_for

CHECKS = {"database", "migrations", "redis", "broker", "embedding_model"}


def _readyz(client: Client | None = None):
    response = (client or Client()).get("/readyz")
    return response.status_code, orjson.loads(response.content)


@pytest.mark.django_db
def test_healthz_answers_without_touching_anything(django_assert_num_queries, caplog):
    caplog.set_level(logging.INFO)
    with django_assert_num_queries(0):
        # A probe calls by address: not a host the service names, and no session.
        response = Client(HTTP_HOST="10.1.2.3").get("/healthz")
    assert response.status_code == 200
    assert orjson.loads(response.content) == {"status": "ok"}
    assert not [r for r in caplog.records if r.name == "apps.request"], "a request log line"


@pytest.mark.django_db
def test_readyz_reports_each_check_with_its_time(caplog):
    caplog.set_level(logging.INFO)
    status, body = _readyz(Client(HTTP_HOST="10.1.2.3"))
    assert status == 200, body
    assert body["status"] == "ready"
    assert set(body["checks"]) == CHECKS
    for name, check in body["checks"].items():
        assert check["state"] == "up", name
        assert isinstance(check["seconds"], float) and 0 <= check["seconds"] < 5, name
    assert not [r for r in caplog.records if r.name == "apps.request"]


@pytest.mark.django_db
def test_readyz_is_never_rate_limited(settings):
    settings.API_RATE_LIMIT = "2/minute"
    statuses = {Client().get("/readyz").status_code for _ in range(6)}
    assert statuses == {200}


@pytest.mark.django_db
def test_operations_endpoints_only_read():
    for path in ("/healthz", "/readyz", "/metrics"):
        response = Client().post(path)
        assert response.status_code == 405, path
        assert response["Allow"] == "GET, HEAD"


@pytest.mark.django_db
def test_readyz_fails_while_a_migration_is_not_applied():
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM django_migrations WHERE id = (SELECT max(id) FROM django_migrations)"
        )
    status, body = _readyz()
    assert status == 503
    assert body["checks"]["migrations"] == {
        "state": "down",
        "seconds": body["checks"]["migrations"]["seconds"],
        "error": "CheckFailed",
    }
    assert body["checks"]["database"]["state"] == "up"


@pytest.mark.django_db(transaction=True)
def test_readyz_follows_postgresql_going_away_and_coming_back(caplog):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL")
    original = dict(connection.settings_dict)
    proxy = CuttableProxy(int(original["PORT"] or 5432))
    connection.close()
    connection.settings_dict.update(HOST="127.0.0.1", PORT=str(proxy.port))
    try:
        assert _readyz()[0] == 200  # through the proxy, with a connection kept open
        proxy.cut()
        caplog.set_level(logging.INFO)
        started = time.monotonic()
        status, body = _readyz()
        assert time.monotonic() - started < 10
        assert status == 503
        assert body["status"] == "unavailable"
        assert body["checks"]["database"]["state"] == "down"
        assert body["checks"]["migrations"]["state"] == "down"
        assert body["checks"]["redis"]["state"] == "up"
        assert "127.0.0.1" not in str(body), "connection details leak to an anonymous caller"
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "logged as error"
        proxy.restore()
        wait_for(lambda: _readyz()[0] == 200, timeout=10, message="not ready again")
    finally:
        connection.close()
        connection.settings_dict.update(original)
        proxy.close()


@pytest.fixture
def private_redis_everywhere(settings):
    """A private redis-server as Redis and as the Celery broker of this process."""
    server = RedisServer().start()
    settings.REDIS_URL = server.url(0)
    with broker_at(server.url(0)):
        yield server
    server.stop()


@pytest.mark.django_db
def test_readyz_follows_redis_and_the_broker_going_away_and_coming_back(
    private_redis_everywhere,
):
    assert _readyz()[0] == 200
    private_redis_everywhere.stop()
    status, body = _readyz()
    assert status == 503
    assert body["checks"]["redis"]["state"] == "down"
    assert body["checks"]["broker"]["state"] == "down"
    assert body["checks"]["database"]["state"] == "up"
    private_redis_everywhere.start()  # the same port
    wait_for(lambda: _readyz()[0] == 200, timeout=10, message="not ready again")


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_worker_check_follows_the_worker_while_readiness_does_not(settings):
    if not settings.REDIS_URL:
        pytest.skip("a real worker needs Redis (REDIS_URL)")
    worker = WorkerProcess(name="checked").start()
    try:
        wait_for(
            lambda: _passes("worker_check", hostname=worker.hostname, timeout=1),
            timeout=90,
            message="the worker never answered",
        )
        from tests.workers import process_queues

        _bulk, interactive = process_queues()
        assert _passes("worker_check", queue=interactive, timeout=2)
        assert not _passes("worker_check", queue="nobody-serves-this", timeout=1)
    finally:
        worker.stop()
    assert not _passes("worker_check", hostname=worker.hostname, timeout=1)
    # A web process serves without workers: their work waits in the queue.
    assert _readyz()[0] == 200


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_beat_check_follows_beat(settings, tmp_path):
    if not settings.REDIS_URL:
        pytest.skip("beat needs Redis (REDIS_URL)")
    settings.BEAT_HEARTBEAT_FILE = tmp_path / "heartbeat"
    assert not _passes("beat_check", max_age=5)  # never ran
    beat = BeatProcess(tmp_path, BEAT_HEARTBEAT_FILE=str(settings.BEAT_HEARTBEAT_FILE)).start()
    try:
        wait_for(lambda: _passes("beat_check", max_age=5), timeout=60, message="no heartbeat")
    finally:
        beat.stop()
    wait_for(lambda: not _passes("beat_check", max_age=2), timeout=10, message="still fresh")


def _passes(command: str, **options) -> bool:
    try:
        call_command(command, **options)
    except CommandError:
        return False
    return True
