"""Lost work settles in seconds, shown with real worker and beat processes and real time (no
clock travel): a worker SIGKILLed mid-task, a task that outlives its lease, a document uploaded
while the broker is down.

Each test runs its own redis-server as the broker (tests/redis_server.py), so it can stop it and
so the sweeper's tasks (which beat queues) stay private. The intervals are shortened through the
same settings production reads: a 4 s claim lease and a 1 s sweep here, against 30 s and 15 s by
default (figures in docs/performance.md).
"""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

from apps.knowledge.models import KnowledgeDocument
from tests.knowledge.conftest import html_page, upload
from tests.redis_server import RedisServer
from tests.workers import BeatProcess, WorkerProcess, broker_at, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

LEASE_SECONDS = 4
SWEEP_SECONDS = 1


@pytest.fixture
def broker(settings):
    """A private redis-server as the Celery broker of this process, its workers and beat."""
    server = RedisServer().start()
    with broker_at(server.url(0)):
        yield server
    server.stop()


@pytest.fixture
def processes(broker, media_root, tmp_path):
    """Start workers and a beat on the private broker; all are stopped at the end."""
    env = {
        "REDIS_URL": broker.url(0),
        "MEDIA_ROOT": str(media_root),
        "NETGUARD_ALLOW_LOOPBACK_FOR_TESTS": "1",
        "KNOWLEDGE_CLAIM_LEASE_SECONDS": str(LEASE_SECONDS),
        "KNOWLEDGE_RECOVER_INTERVAL_SECONDS": str(SWEEP_SECONDS),
    }
    started: list = []

    def worker(concurrency: int = 1, name: str = "celery") -> WorkerProcess:
        process = WorkerProcess(concurrency=concurrency, name=name, **env).start()
        started.append(process)
        return process

    def beat() -> BeatProcess:
        process = BeatProcess(tmp_path, **env).start()
        started.append(process)
        return process

    yield worker, beat
    for process in reversed(started):
        process.stop()


def _workers_answering() -> int:
    from config.celery import app

    return len(app.control.ping(timeout=0.5) or [])


def _busy_worker() -> str | None:
    from config.celery import app

    active = app.control.inspect(timeout=1).active() or {}
    ingesting = (
        name
        for name, tasks in active.items()
        if any(task["name"] == "knowledge.ingest" for task in tasks)
    )
    return next(ingesting, None)


def _document(document_id: str) -> KnowledgeDocument | None:
    return KnowledgeDocument.objects.filter(pk=document_id).first()


def _status(document_id: str) -> str | None:
    document = _document(document_id)
    return document.status if document else None


def test_worker_sigkilled_mid_task_settles_within_lease_and_sweep(
    api, settings, page_server, processes
):
    worker, beat = processes
    settings.NETGUARD_ALLOW_LOOPBACK = True
    page_server.set_page("/slow", html_page("Slow page", "Recovered after a worker crash."))
    page_server.hold.clear()  # the first fetch hangs until its worker is dead
    # Two workers, both up before the work starts: their start-up is not what is measured.
    workers = {w.hostname: w for w in (worker(name="first"), worker(name="second"))}
    beat()
    wait_for(lambda: _workers_answering() == 2, timeout=90, message="workers not up")
    response = api.post("/v1/knowledge/urls", json={"url": page_server.url("/slow")})
    document_id = response.json()["id"]
    assert page_server.arrived.wait(60), "no worker fetched the page"

    busy = wait_for(_busy_worker, timeout=10, message="no worker reports the task")
    workers[busy].kill()  # SIGKILL: no warm shutdown, the message is never acked
    killed_at = time.monotonic()
    page_server.hold.set()
    try:
        wait_for(lambda: _status(document_id) == "ready", timeout=45)
    except AssertionError:
        document = _document(document_id)
        assert document is not None
        raise AssertionError(
            f"not recovered: {document.status}, claimed until {document.claimed_until}, "
            f"queued at {document.queued_at}, {document.attempts} attempts, "
            f"{len(page_server.requests)} fetches, now {timezone.now()}"
        ) from None
    settled_after = time.monotonic() - killed_at

    # The claim runs out within one lease, the next sweep queues the work again at once.
    assert settled_after < LEASE_SECONDS + SWEEP_SECONDS + 10, settled_after
    document = _document(document_id)
    assert document is not None and document.versions.count() == 1
    assert document.claimed_until is None
    assert len(page_server.requests) == 2


def test_task_longer_than_its_lease_keeps_its_claim_by_heartbeat(
    api, settings, page_server, processes
):
    worker, beat = processes
    settings.NETGUARD_ALLOW_LOOPBACK = True
    page_server.set_page("/long", html_page("Long page", "Fetched once."))
    page_server.hold.clear()
    worker(concurrency=2)  # a free process that would take a duplicate task
    beat()
    response = api.post("/v1/knowledge/urls", json={"url": page_server.url("/long")})
    document_id = response.json()["id"]
    assert page_server.arrived.wait(60), "the worker never fetched the page"

    time.sleep(LEASE_SECONDS * 2.5)  # the sweeper runs every second meanwhile
    document = _document(document_id)
    assert document is not None and document.status == "processing"
    assert document.attempts == 1, "the claim was taken over while its worker was alive"
    page_server.hold.set()
    wait_for(lambda: _status(document_id) == "ready", timeout=30, message="never became ready")
    assert len(page_server.requests) == 1


def test_upload_while_the_broker_is_down_settles_soon_after_it_is_back(api, broker, processes):
    worker, beat = processes
    worker()
    beat()
    broker.stop()
    response = api.post(
        "/v1/knowledge/files", data={"file": upload(b"# Outage\n\nUploaded during it.\n")}
    )
    assert response.status == 201  # the upload itself does not need the broker
    document_id = response.json()["id"]
    document = _document(document_id)
    assert document is not None and document.status == "processing"
    assert document.queued_at is None, "not marked for the next sweep"

    time.sleep(5)
    broker.start()
    back_at = time.monotonic()
    wait_for(lambda: _status(document_id) == "ready", timeout=60, message="never processed")
    settled_after = time.monotonic() - back_at
    assert settled_after < 30, settled_after
    print(f"settled {settled_after:.1f} s after the broker came back")


def test_broker_down_at_enqueue_marks_the_document_for_the_next_sweep(api, broker):
    """In-process: the enqueue failure alone clears queued_at, so the sweeper picks it up."""
    from apps.knowledge import pipeline

    broker.stop()
    response = api.post("/v1/knowledge/files", data={"file": upload(b"# Lost\n\nNot queued.\n")})
    document_id = response.json()["id"]
    document = _document(document_id)
    assert document is not None and document.queued_at is None
    broker.start()
    assert pipeline.documents_recover_stalled() == [document_id]
