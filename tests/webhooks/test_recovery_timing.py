"""A webhook delivery whose worker is SIGKILLed mid-send settles within a minute, in real time
(no clock travel), with real worker and beat processes on a private redis-server as broker.

Its claim runs out connect + read timeout + 10 s after the claim (here 1 + 8 + 10 = 19 s), the
next dispatch (every second here, 5 s by default) records the interrupted attempt once, and the
retry 5 s later succeeds.
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import transaction
from werkzeug import Response

from apps.webhooks.models import WebhookDelivery
from tests.activity.factories import run_factory
from tests.redis_server import RedisServer
from tests.webhooks.factories import webhook_factory
from tests.workers import BeatProcess, WorkerProcess, broker_at, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

CONNECT_TIMEOUT, READ_TIMEOUT, DISPATCH_SECONDS = 1, 8, 1
LEASE_SECONDS = CONNECT_TIMEOUT + READ_TIMEOUT + 10
FIRST_RETRY_SECONDS = 5 * 1.1


@pytest.fixture
def broker():
    server = RedisServer().start()
    with broker_at(server.url(0)):
        yield server
    server.stop()


def test_worker_sigkilled_mid_send_settles_within_lease_and_one_retry(
    agent, httpserver, settings, broker, tmp_path
):
    from apps.activity.services import run_record

    settings.NETGUARD_ALLOW_LOOPBACK = True
    env = {
        "REDIS_URL": broker.url(0),
        "NETGUARD_ALLOW_LOOPBACK_FOR_TESTS": "1",
        "WEBHOOK_CONNECT_TIMEOUT": str(CONNECT_TIMEOUT),
        "WEBHOOK_READ_TIMEOUT": str(READ_TIMEOUT),
        "WEBHOOK_DISPATCH_INTERVAL_SECONDS": str(DISPATCH_SECONDS),
    }
    first_arrived, release = threading.Event(), threading.Event()
    calls = []

    def handler(request):
        calls.append(request)
        if len(calls) == 1:
            first_arrived.set()
            release.wait(15)
        return Response("ok")

    httpserver.expect_request("/hook").respond_with_handler(handler)
    webhook_factory(agent=agent, url=httpserver.url_for("/hook"))
    processes = [WorkerProcess(**env).start(), BeatProcess(tmp_path, **env).start()]
    try:
        run = run_factory(agent=agent, status="streaming", completed_at=None)
        with transaction.atomic():
            run_record(agent=agent, data={"id": run.id, "status": "failed"})
        assert first_arrived.wait(90), "the worker never posted"

        processes[0].kill()  # SIGKILL mid-send: the attempt's result is never recorded
        killed_at = time.monotonic()
        release.set()
        processes.append(WorkerProcess(**env).start())  # the replacement
        delivery = wait_for(
            lambda: WebhookDelivery.objects.filter(run_id=run.id, status="succeeded").first(),
            timeout=60,
            message="the delivery never succeeded",
        )
        settled_after = time.monotonic() - killed_at
    finally:
        for process in reversed(processes):
            process.stop()

    bound = LEASE_SECONDS + DISPATCH_SECONDS + FIRST_RETRY_SECONDS + DISPATCH_SECONDS + 10
    assert settled_after < bound, settled_after
    assert [(a.attempt, a.status) for a in delivery.attempt_rows.all()] == [
        (1, "error"),
        (2, "succeeded"),
    ]
    assert len(calls) == 2
