"""Extraction never waits behind embedding: with production's two workers (one per queue), a
small upload is ready while the bulk queue is still flooded with the embedding of earlier
documents. Real worker processes, real tasks sent by the real routes, real embedding."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest
from django.conf import settings

from apps.knowledge import pipeline, services
from apps.knowledge.models import KnowledgeDocument
from config.celery import app
from tests.knowledge.conftest import upload
from tests.redis_server import RedisServer
from tests.workers import (
    ROOT,
    WorkerProcess,
    process_queues,
    purge_test_queues,
    wait_for,
    webhook_queue,
    worker_environment,
)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

_TEXT = (
    "kettle warranty boiler filter descaling limescale thermostat switch element gasket lid "
    "spout handle base cord plug fuse socket voltage litre temperature steam whistle timer"
)
WORDS = tuple(_TEXT.split())


def _markdown(seed: int, sections: int) -> bytes:
    """A distinct document of `sections` sections of about 1,700 characters (one chunk each)."""
    rng = random.Random(seed)
    parts = [f"# Manual {seed}\n"]
    for number in range(sections):
        words = " ".join(rng.choice(WORDS) for _ in range(260))
        parts.append(f"## Section {number}\n\n{words}.\n")
    return "\n".join(parts).encode()


def _queue_depth(queue: str) -> int:
    with app.connection_for_read() as conn:
        return conn.default_channel.client.llen(queue)


def test_small_upload_is_ready_while_the_bulk_queue_is_flooded(api, agent):
    if not settings.REDIS_URL:
        pytest.skip("real workers need Redis (REDIS_URL)")
    bulk, interactive = process_queues()
    purge_test_queues()
    media = {"MEDIA_ROOT": str(settings.MEDIA_ROOT)}
    workers = [
        WorkerProcess(queues=bulk, name="bulk", **media).start(),
        WorkerProcess(queues=interactive, name="interactive", **media).start(),
    ]
    try:
        names = {worker.hostname for worker in workers}
        wait_for(
            lambda: names <= {name for reply in app.control.ping(timeout=0.5) for name in reply},
            timeout=90,
            message="workers not up",
        )
        # The flood: six documents ingested, each of whose commit queues knowledge.embed (about
        # 300 chunks in all, 15-20 s of embedding for the one bulk process). Each upload's commit
        # also queued its knowledge.ingest: the interactive worker may claim it before this
        # process does (then this one is "busy", or "obsolete" once the worker is done), so the
        # flood is waited for, not assumed.
        flood = []
        for seed in range(6):
            document = services.document_create_from_upload(
                agent=agent, upload=upload(_markdown(seed, 50), f"manual-{seed}.md")
            )
            assert pipeline.document_ingest(document_id=document.pk) in (
                "ready",
                "busy",
                "obsolete",
            )
            flood.append(document.pk)
        wait_for(
            lambda: KnowledgeDocument.objects.filter(pk__in=flood, status="ready").count() == 6,
            timeout=60,
            message="the flood was not ingested",
        )
        wait_for(
            lambda: KnowledgeDocument.objects.filter(
                pk__in=flood, embedded_chunk_count__gt=0
            ).exists(),
            timeout=60,
            message="the bulk worker never started embedding",
        )

        response = api.post(
            "/v1/knowledge/files", data={"file": upload(b"# Tiny\n\nForty bytes or so.\n", "t.md")}
        )
        assert response.status == 201
        tiny = response.json()["id"]
        wait_for(
            lambda: KnowledgeDocument.objects.filter(pk=tiny, status="ready").exists(),
            timeout=30,
            message="the small upload was not ready within 30 s",
        )
        # At that moment the flood is still being embedded, with tasks waiting on the bulk
        # queue: the small upload did not wait behind it.
        unfinished = [
            document
            for document in KnowledgeDocument.objects.filter(pk__in=flood)
            if document.embedded_chunk_count < document.chunk_count
        ]
        assert len(unfinished) >= 3, [(d.embedded_chunk_count, d.chunk_count) for d in unfinished]
        assert _queue_depth(bulk) >= 1
        # Its own embedding went to the bulk queue, behind the flood.
        assert KnowledgeDocument.objects.get(pk=tiny).embedded_chunk_count == 0
    finally:
        for worker in workers:
            worker.stop()
        purge_test_queues()


def test_routes_send_interactive_work_to_its_own_queue():
    bulk, interactive = process_queues()
    router = app.amqp.router
    for name in (
        "knowledge.ingest",
        "knowledge.refresh",
        "knowledge.recover_stalled",
        "tools.discover",
    ):
        assert router.route({}, name)["queue"].name == interactive, name
    for name in ("webhooks.deliver", "webhooks.dispatch_due"):
        assert router.route({}, name)["queue"].name == webhook_queue(), name
    for name in (
        "knowledge.embed",
        "knowledge.embed_stalled",
        "mcp_server.clear_expired_tokens",
        "retention.apply",
    ):
        assert router.route({}, name)["queue"].name == bulk, name


SEND = """
import django
django.setup()
from apps.knowledge import tasks
tasks.ingest.apply_async(args=["doc_x"], retry=False)
tasks.embed.apply_async(args=["doc_x"], retry=False)
tasks.embed.apply_async(args=["doc_y"], retry=False)
from apps.webhooks import tasks as webhook_tasks
webhook_tasks.deliver.apply_async(args=["dlv_x"], retry=False)
"""


def test_each_task_lands_on_exactly_one_production_queue():
    """A fresh process configured as production (default queue names) on a private broker."""
    server = RedisServer().start()
    try:
        env = worker_environment(REDIS_URL=server.url(0))
        env.pop("CELERY_TASK_DEFAULT_QUEUE")
        env.pop("CELERY_INTERACTIVE_QUEUE")
        env.pop("CELERY_WEBHOOK_QUEUE")
        env["DJANGO_SETTINGS_MODULE"] = "config.settings"
        subprocess.run([sys.executable, "-c", SEND], cwd=ROOT, env=env, check=True, timeout=60)
        client = server.client()
        assert client.llen("interactive") == 1
        assert client.llen("celery") == 2
        assert client.llen("webhooks") == 1
    finally:
        server.stop()
