"""POST /v1/mcp_servers, then a real Celery worker process discovers the tools: the task is
queued after commit and the server turns `connected`."""

from __future__ import annotations

import time

import pytest
from django.conf import settings

from apps.tools.models import McpServer
from tests.workers import WorkerProcess

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def tools_worker(transactional_db):
    from config.celery import app

    if not settings.REDIS_URL:
        pytest.skip("a real worker needs Redis (REDIS_URL)")
    app.control.purge()
    worker = WorkerProcess(NETGUARD_ALLOW_LOOPBACK_FOR_TESTS="1").start()
    yield worker
    worker.stop()


def _wait_settled(server_id: str, timeout: float = 60) -> McpServer:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server = McpServer.objects.get(pk=server_id)
        if server.status != "pending":
            return server
        time.sleep(0.2)
    raise AssertionError("discovery did not finish")


def test_added_server_is_discovered_by_the_worker(make_api, loopback, streamable, tools_worker):
    api = make_api(["mcp_servers:read", "mcp_servers:write"])
    response = api.post("/v1/mcp_servers", json={"url": streamable.url, "name": "Weather"})
    assert response.status == 201, response.body
    assert response.json()["status"] == "pending"
    server = _wait_settled(response.json()["id"])
    assert server.status == "connected", server.error_message
    names = [t["name"] for t in api.get(f"/v1/mcp_servers/{server.pk}/tools").json()["data"]]
    assert names == ["alerts", "forecast"]
