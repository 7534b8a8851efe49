"""End to end with a real `celery worker` process on Redis: a run ending through the activity
recording service reaches a local receiver, signed; a worker killed mid-send loses nothing and
doubles nothing."""

import threading
from datetime import timedelta

import pytest
import time_machine
from django.db import transaction
from django.utils import timezone
from standardwebhooks.webhooks import Webhook as StandardWebhook
from werkzeug import Response

from apps.webhooks.models import WebhookDelivery
from apps.webhooks.services import deliveries_dispatch_due
from tests.activity.factories import run_factory
from tests.webhooks.conftest import received
from tests.webhooks.factories import webhook_factory
from tests.workers import WorkerProcess, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def loopback_worker(transactional_db, settings):
    """A real worker (not started yet) allowed to post to 127.0.0.1, on this test's queue."""
    from config.celery import app

    if not settings.REDIS_URL:
        pytest.skip("a real worker needs Redis (REDIS_URL)")
    app.control.purge()
    worker = WorkerProcess(NETGUARD_ALLOW_LOOPBACK_FOR_TESTS="1")
    yield worker
    worker.stop()


def _end_run(agent, run, status="completed"):
    from apps.activity.services import run_record

    with transaction.atomic():
        run_record(agent=agent, data={"id": run.id, "status": status})


def test_run_completed_while_no_worker_runs_reaches_the_receiver_signed_once_one_starts(
    agent, receiver, loopback_worker
):
    webhook = webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    receiver.expect_request("/hook", method="POST").respond_with_data("ok")
    run = run_factory(agent=agent, status="streaming", completed_at=None)

    _end_run(agent, run)
    assert WebhookDelivery.objects.get(run_id=run.id).status == "pending"
    loopback_worker.start()

    wait_for(lambda: received(receiver), timeout=30, message="the worker never posted")
    [request] = received(receiver)
    payload = StandardWebhook(webhook.secret).verify(request.get_data(), dict(request.headers))
    assert payload["type"] == "run.completed"
    assert payload["data"]["id"] == run.id
    assert payload["data"]["status"] == "completed"
    delivery = wait_for(
        lambda: WebhookDelivery.objects.filter(run_id=run.id, status="succeeded").first()
    )
    assert delivery.attempts == 1


def test_worker_killed_mid_send_is_recorded_once_and_sent_again(agent, receiver, loopback_worker):
    webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    first_arrived, release = threading.Event(), threading.Event()
    calls = []

    def handler(request):
        calls.append(request)
        if len(calls) == 1:
            first_arrived.set()
            release.wait(10)
        return Response("ok")

    receiver.expect_request("/hook").respond_with_handler(handler)
    loopback_worker.start()
    run = run_factory(agent=agent, status="streaming", completed_at=None)
    _end_run(agent, run, status="failed")

    wait_for(first_arrived.is_set, timeout=30, message="the worker never posted")
    loopback_worker.kill()
    release.set()
    delivery = WebhookDelivery.objects.get(run_id=run.id)
    assert delivery.status == "sending"
    assert delivery.attempt_rows.count() == 0

    with time_machine.travel(timezone.now() + timedelta(minutes=2), tick=False) as clock:
        assert deliveries_dispatch_due()["reclaimed"] == 1
        clock.shift(timedelta(seconds=10))
        assert deliveries_dispatch_due()["sent"] == 1
        assert deliveries_dispatch_due() == {"reclaimed": 0, "held": 0, "sent": 0}

    delivery.refresh_from_db()
    assert delivery.status == "succeeded"
    assert [(a.attempt, a.status) for a in delivery.attempt_rows.all()] == [
        (1, "error"),
        (2, "succeeded"),
    ]
    assert len(calls) == 2
    assert calls[0].headers["webhook-id"] == calls[1].headers["webhook-id"] == delivery.pk
