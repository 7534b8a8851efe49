"""End to end with real Celery worker processes: upload -> queued task -> ready, and a worker
SIGKILLed mid-task whose document a second worker finishes after the sweeper re-queues it."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from apps.knowledge import pipeline
from apps.knowledge.models import KnowledgeDocument
from tests.knowledge.conftest import html_page, start_knowledge_worker, upload
from tests.workers import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def _status(document_id: str) -> str | None:
    document = KnowledgeDocument.objects.filter(pk=document_id).first()
    return document.status if document else None


def test_uploaded_file_is_ingested_by_a_real_worker(api, knowledge_worker):
    data = b"# Warranty\n\nEvery kettle carries a two-year warranty.\n"
    response = api.post("/v1/knowledge/files", data={"file": upload(data, "warranty.md")})
    assert response.status == 201
    document_id = response.json()["id"]
    wait_for(lambda: _status(document_id) == "ready", timeout=60, message="never became ready")
    content = api.get(f"/v1/knowledge/{document_id}/content").body.decode()
    assert "two-year warranty" in content


def test_worker_killed_mid_task_is_recovered_by_sweeper_and_next_worker(
    api, settings, page_server, knowledge_worker, media_root
):
    settings.NETGUARD_ALLOW_LOOPBACK = True
    page_server.set_page("/slow", html_page("Slow page", "Recovered after a worker crash."))
    page_server.hold.clear()  # the first fetch hangs until we release it
    document_id = api.post("/v1/knowledge/urls", json={"url": page_server.url("/slow")}).json()[
        "id"
    ]
    assert page_server.arrived.wait(60), "the worker never fetched the page"
    document = KnowledgeDocument.objects.get(pk=document_id)
    assert document.status == "processing" and document.claimed_until is not None

    knowledge_worker.kill()  # SIGKILL: no warm shutdown, the message is never acked
    page_server.hold.set()
    assert _status(document_id) == "processing"

    # Before the lease expires the sweeper leaves the document alone...
    assert pipeline.documents_recover_stalled() == []
    # ...after it, the sweeper re-queues it and a new worker finishes it.
    with time_machine.travel(document.claimed_until + timedelta(seconds=1)):
        assert pipeline.documents_recover_stalled() == [document_id]
    second = start_knowledge_worker(media_root)
    try:
        wait_for(lambda: _status(document_id) == "ready", timeout=60, message="not recovered")
    finally:
        second.stop()
    document.refresh_from_db()
    assert document.claimed_until is None
    assert document.versions.count() == 1
    assert "Recovered after a worker crash." in document.current_version.markdown
    assert len(page_server.requests) == 2
    assert document.last_synced_at <= timezone.now()


def test_real_worker_embeds_a_ready_document_in_batches_after_ingestion(api, knowledge_worker):
    sections = "".join(
        f"## Part {n}\n\nParagraph {n} about kettles and toasters.\n\n" for n in range(12)
    )
    response = api.post(
        "/v1/knowledge/files", data={"file": upload(f"# Manual\n\n{sections}".encode(), "m.md")}
    )
    document_id = response.json()["id"]
    wait_for(lambda: _status(document_id) == "ready", timeout=60, message="never became ready")

    def embedded() -> bool:
        document = KnowledgeDocument.objects.get(pk=document_id)
        return document.chunk_count > 0 and document.embedded_chunk_count == document.chunk_count

    # knowledge.embed was queued on commit of the ingestion and queues itself batch after batch.
    wait_for(embedded, timeout=120, message="never fully embedded")
    body = api.post(
        "/v1/knowledge/search",
        json={"query": "household appliances for boiling water", "mode": "semantic"},
    ).json()
    assert body["data"] and body["data"][0]["document_id"] == document_id
