"""The webhook queue with real worker and beat processes (issue 34 §3): deliveries go to a queue
of their own, the dispatcher runs one at a time, and what the broker holds stays bounded."""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.conf import settings
from django.db import transaction

from apps.common import singleflight
from apps.webhooks import tasks
from apps.webhooks.models import WebhookAttempt, WebhookDelivery
from apps.webhooks.services import deliveries_record_for_runs
from config.celery import app
from tests.activity.factories import run_factory
from tests.http_thread import serve_in_thread
from tests.webhooks.factories import delivery_factory, webhook_factory
from tests.workers import (
    BeatProcess,
    WorkerProcess,
    process_queues,
    purge_test_queues,
    wait_for,
    webhook_queue,
)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


class SlowReceiver:
    """A local endpoint that answers 200 after `delay` seconds and records how many requests
    it was serving at once."""

    def __init__(self, delay: float) -> None:
        receiver = self
        self.delay = delay
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_at_once = 0
        self.ids: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    receiver.in_flight += 1
                    receiver.most_at_once = max(receiver.most_at_once, receiver.in_flight)
                    receiver.ids.append(self.headers["webhook-id"])
                time.sleep(receiver.delay)
                with receiver.lock:
                    receiver.in_flight -= 1
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = serve_in_thread(self.server)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def slow_receiver():
    receiver = SlowReceiver(delay=1.0)
    yield receiver
    receiver.stop()


@pytest.fixture
def clean_queues(transactional_db):
    if not settings.REDIS_URL:
        pytest.skip("real workers need Redis (REDIS_URL)")
    purge_test_queues()
    yield
    purge_test_queues()


def _messages(queue: str) -> list[str]:
    """The task names of the messages waiting on `queue`."""
    with app.connection_for_read() as conn:
        raw = conn.default_channel.client.lrange(queue, 0, -1)
    return [json.loads(item)["headers"]["task"] for item in raw]


def _wait_up(*workers: WorkerProcess) -> None:
    names = {worker.hostname for worker in workers}
    wait_for(
        lambda: names <= {name for reply in app.control.ping(timeout=0.5) for name in reply},
        timeout=90,
        message="workers not up",
    )


def test_deliveries_are_sent_by_the_webhook_queues_worker_only(agent, slow_receiver, clean_queues):
    """A worker of the interactive and bulk queues leaves deliveries alone; the webhook
    queue's worker sends them."""
    webhook_factory(agent=agent, url=slow_receiver.url)
    other = WorkerProcess(queues=",".join(process_queues()), name="other").start()
    hooks = None
    try:
        runs = [run_factory(agent=agent, status="completed") for _ in range(3)]
        with transaction.atomic():
            deliveries_record_for_runs(runs=runs)
        assert _messages(webhook_queue()) == ["webhooks.deliver"] * 3
        _wait_up(other)
        time.sleep(2)
        assert slow_receiver.ids == []
        assert _messages(webhook_queue()) == ["webhooks.deliver"] * 3

        hooks = WorkerProcess(
            queues=webhook_queue(), name="hooks", NETGUARD_ALLOW_LOOPBACK_FOR_TESTS="1"
        ).start()
        wait_for(
            lambda: not WebhookDelivery.objects.exclude(status="succeeded").exists(),
            timeout=60,
            message="the webhook worker did not send the deliveries",
        )
        assert sorted(slow_receiver.ids) == sorted(
            WebhookDelivery.objects.values_list("pk", flat=True)
        )
    finally:
        other.stop()
        if hooks is not None:
            hooks.stop()


def test_a_dispatch_tick_during_a_run_is_a_no_op(agent, slow_receiver, clean_queues):
    """Two dispatcher messages and two free worker processes: the second finds the first
    in progress and returns at once, so the endpoint never sees two dispatchers' requests at
    the same time and every delivery is sent once."""
    webhook = webhook_factory(agent=agent, url=slow_receiver.url)
    ids = {delivery_factory(webhook=webhook).pk for _ in range(4)}
    worker = WorkerProcess(
        queues=webhook_queue(), concurrency=2, name="hooks", NETGUARD_ALLOW_LOOPBACK_FOR_TESTS="1"
    ).start()
    try:
        _wait_up(worker)
        tasks.dispatch_due.apply_async()
        wait_for(
            lambda: singleflight.is_held(tasks.dispatch_running_lock()),
            timeout=30,
            message="the first dispatcher never started",
        )
        # The first run is sending (about a second per delivery); a second tick arrives.
        assert tasks.dispatch_due.apply_async() is not None
        wait_for(
            lambda: _messages(webhook_queue()) == [],
            timeout=10,
            message="the second tick was not taken by the free worker process",
        )
        wait_for(
            lambda: not singleflight.is_held(tasks.dispatch_running_lock()),
            timeout=60,
            message="the first dispatcher never finished",
        )
        assert slow_receiver.most_at_once == 1
        assert sorted(slow_receiver.ids) == sorted(ids)
        assert WebhookAttempt.objects.count() == 4
    finally:
        worker.stop()


def test_beat_keeps_one_dispatcher_message_on_a_busy_webhook_queue(tmp_path, clean_queues):
    """No worker serves the webhook queue (all busy, or down): beat ticks every second, and
    the queue still holds one dispatcher message, not one per tick."""
    beat = BeatProcess(tmp_path, WEBHOOK_DISPATCH_INTERVAL_SECONDS="1").start()
    try:
        wait_for(
            lambda: _messages(webhook_queue()) == ["webhooks.dispatch_due"],
            timeout=60,
            message="beat never queued the dispatcher",
        )
        time.sleep(6)  # six more ticks
        assert _messages(webhook_queue()) == ["webhooks.dispatch_due"]
        interactive = process_queues()[1]
        assert "webhooks.dispatch_due" not in _messages(interactive)
    finally:
        beat.stop()


def test_deliveries_past_the_queue_limit_wait_for_the_dispatcher(
    agent, slow_receiver, clean_queues, settings
):
    """A burst of 12 deliveries with a limit of 5: five `deliver` messages, the other seven
    due rows that the dispatcher sends."""
    settings.WEBHOOK_QUEUE_LIMIT = 5
    webhook_factory(agent=agent, url=slow_receiver.url)
    slow_receiver.delay = 0.0
    runs = [run_factory(agent=agent, status="completed") for _ in range(12)]
    with transaction.atomic():
        deliveries_record_for_runs(runs=runs)
    assert _messages(webhook_queue()) == ["webhooks.deliver"] * 5
    assert WebhookDelivery.objects.filter(status="pending").count() == 12

    worker = WorkerProcess(
        queues=webhook_queue(), name="hooks", NETGUARD_ALLOW_LOOPBACK_FOR_TESTS="1"
    ).start()
    try:
        tasks.dispatch_due.apply_async()
        wait_for(
            lambda: WebhookDelivery.objects.filter(status="succeeded").count() == 12,
            timeout=60,
            message="not every delivery was sent",
        )
        assert len(slow_receiver.ids) == 12
    finally:
        worker.stop()


def test_make_run_serves_every_queue_with_a_worker_of_its_own():
    """scripts/run_all.py (`make run`) starts one worker per queue of the settings."""
    import subprocess
    import sys

    from tests.workers import ROOT

    listed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, run_all; print(json.dumps(run_all.commands(port='8000')))",
        ],
        cwd=ROOT,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("CELERY_")},
            "PYTHONPATH": str(ROOT / "scripts"),
        },
        capture_output=True,
        text=True,
        check=True,
    )
    commands = json.loads(listed.stdout.strip().splitlines()[-1])
    served = [
        command[command.index("-Q") + 1] for name, command in commands.items() if "-Q" in command
    ]
    assert sorted(served) == sorted(queue.name for queue in settings.CELERY_TASK_QUEUES)
    assert "webhooks" in served
