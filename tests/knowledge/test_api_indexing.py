"""GET /v1/knowledge/{id}/indexing: a document's semantic indexing progress, its own object
(the document object carries exactly the contract's fields), and the states the embedding task
leaves: waiting, running, retrying, done (issue 34 §4, issue 37 §1)."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.knowledge import embedding_jobs, embeddings, tasks
from apps.knowledge.models import KnowledgeDocument
from tests.knowledge.conftest import make_file_document
from tests.metrics import scrape, value
from tests.workers import WorkerProcess, purge_test_queues, wait_for

INDEXING_KEYS = {
    "object",
    "document_id",
    "state",
    "passages",
    "embedded",
    "model",
    "last_progress_at",
    "retry_at",
    "error_message",
}
POLICY = (
    "# Returns\n\nUnopened items may be returned within thirty days for a full refund.\n\n"
    "## Shipping\n\nOrders ship within two working days from our warehouse in Lyon.\n\n"
    "## Warranty\n\nEvery kettle carries a two-year warranty against manufacturing faults.\n"
)


def indexing(api, document_id: str) -> dict:
    response = api.get(f"/v1/knowledge/{document_id}/indexing")
    assert response.status == 200, response.body
    body = response.json()
    assert set(body) == INDEXING_KEYS
    return body


@pytest.mark.django_db
def test_indexing_says_how_many_passages_are_searchable_by_meaning(api, agent):
    document = make_file_document(agent, POLICY.encode(), "policy.md")
    body = indexing(api, document.pk)
    assert body["object"] == "knowledge_indexing"
    assert body["document_id"] == document.pk
    assert body["passages"] == document.chunk_count >= 2
    assert (body["embedded"], body["state"], body["last_progress_at"]) == (0, "waiting", None)
    assert body["model"] == embeddings.model_name()
    assert (body["retry_at"], body["error_message"]) == (None, None)

    assert embedding_jobs.document_embed(document_id=document.pk, max_batches=100) == "done"
    body = indexing(api, document.pk)
    assert body["embedded"] == body["passages"]
    assert body["state"] == "done"
    assert body["last_progress_at"].endswith("Z")
    # The document object itself carries no indexing fields (contract 2.6).
    assert "chunk_count" not in api.get(f"/v1/knowledge/{document.pk}").json()


@pytest.mark.django_db
def test_a_processing_document_is_waiting_and_a_held_one_running(api, agent):
    document = make_file_document(agent, POLICY.encode(), "policy.md", ingest=False)
    assert indexing(api, document.pk)["state"] == "waiting"
    document = make_file_document(agent, b"# Other\n\nAnother text about toasters.\n", "o.md")
    KnowledgeDocument.objects.filter(pk=document.pk).update(
        embedding_claimed_until=timezone.now() + timedelta(minutes=1)
    )
    assert indexing(api, document.pk)["state"] == "running"
    # A second run finds it held and leaves it to the first.
    assert embedding_jobs.document_embed(document_id=document.pk) == "busy"
    KnowledgeDocument.objects.filter(pk=document.pk).update(
        embedding_claimed_until=timezone.now() - timedelta(seconds=1)
    )
    assert indexing(api, document.pk)["state"] == "waiting"


@pytest.mark.django_db
def test_unknown_or_other_agents_document_is_not_found(api, other_agent):
    document = make_file_document(other_agent, POLICY.encode(), "policy.md")
    for document_id in (document.pk, "doc_missing"):
        response = api.get(f"/v1/knowledge/{document_id}/indexing")
        assert response.status == 404
        assert response.json()["name"] == "not_found"


@pytest.fixture
def broken_model(settings, tmp_path):
    """The embedding model setting points at a folder without a model: every batch fails."""
    settings.KNOWLEDGE_EMBEDDING_MODEL = str(tmp_path)
    embeddings._model.cache_clear()
    yield
    settings.KNOWLEDGE_EMBEDDING_MODEL = ""
    embeddings._model.cache_clear()


@pytest.mark.django_db
def test_a_failed_batch_is_retrying_with_its_error_and_time_on_api_and_page(
    api, agent, owner, broken_model, settings
):
    document = make_file_document(agent, POLICY.encode(), "policy.md")
    before = timezone.now()
    assert embedding_jobs.document_embed(document_id=document.pk) == "retry"
    body = indexing(api, document.pk)
    assert body["state"] == "retrying"
    assert "model" in body["error_message"]
    retry_at = KnowledgeDocument.objects.get(pk=document.pk).embedding_retry_at
    assert timedelta(seconds=9) <= retry_at - before <= timedelta(seconds=12)
    assert body["retry_at"].endswith("Z")
    # The next failure waits twice as long.
    assert embedding_jobs.document_embed(document_id=document.pk) == "retry"
    document.refresh_from_db()
    assert document.embedding_failures == 2
    assert document.embedding_retry_at - timezone.now() > timedelta(seconds=15)

    client = Client()
    client.force_login(owner)
    page = client.get(reverse("knowledge:document_detail", args=[document.pk])).content.decode()
    assert 'data-state="retrying"' in page
    assert "trying again at" in page

    # The model is back: the next run embeds everything and clears the error.
    settings.KNOWLEDGE_EMBEDDING_MODEL = ""
    embeddings._model.cache_clear()
    assert embedding_jobs.document_embed(document_id=document.pk, max_batches=100) == "done"
    body = indexing(api, document.pk)
    assert (body["state"], body["retry_at"], body["error_message"]) == ("done", None, None)


_TEXT = (
    "kettle warranty boiler filter descaling limescale thermostat switch element gasket lid "
    "spout handle base cord plug fuse socket voltage litre temperature steam whistle timer"
)
WORDS = tuple(_TEXT.split())


def _long_markdown(sections: int) -> bytes:
    rng = random.Random(7)
    parts = ["# Manual\n"]
    for number in range(sections):
        words = " ".join(rng.choice(WORDS) for _ in range(260))
        parts.append(f"## Section {number}\n\n{words}.\n")
    return "\n".join(parts).encode()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_embedding_hands_over_before_the_time_limit_instead_of_failing(api, agent, settings):
    """A worker whose soft time limit (10 s) is shorter than the document's embedding: each run
    stops after its budget (1 s here, at most a quarter of the limit) and queues its follow-up,
    so the document is fully embedded with no failed task, in runs that ended "more" before
    the one that ended "done" (the worker's task counts). Before, the run of 80 batches met the
    limit, failed and waited for the 5-minute stalled sweep."""
    if not settings.REDIS_URL:
        pytest.skip("a real worker needs Redis (REDIS_URL)")
    purge_test_queues()
    document = make_file_document(agent, _long_markdown(40), "manual.md")
    assert document.chunk_count >= 100
    before = scrape()
    worker = WorkerProcess(
        CELERY_TASK_SOFT_TIME_LIMIT="10",
        CELERY_TASK_TIME_LIMIT="30",
        # Over 100 passages in batches of 4: several seconds on any machine, so several runs.
        KNOWLEDGE_EMBED_TASK_SECONDS="1",
        MEDIA_ROOT=str(settings.MEDIA_ROOT),
    ).start()
    states = set()

    def runs(outcome: str) -> float:
        """knowledge.embed's runs that ended `outcome` since the test began: counts only grow
        here (other test processes share the metrics folder), so failures are checked on the
        document, not on the counts."""
        name, task = "celery_tasks_total", "knowledge.embed"
        return value(scrape(), name, task=task, outcome=outcome) - value(
            before, name, task=task, outcome=outcome
        )

    try:
        tasks.embed.apply_async(args=[document.pk])

        def finished() -> bool:
            body = indexing(api, document.pk)
            states.add(body["state"])
            return body["state"] == "done"

        wait_for(finished, timeout=400, interval=0.3, message="never fully embedded")
        # The worker counts a run once it returns, just after its last write.
        wait_for(lambda: runs("done") >= 1, timeout=30, message="the last run was not counted")
        handed_over = runs("more")
    finally:
        worker.stop()
        purge_test_queues()
    document.refresh_from_db()
    assert document.embedded_chunk_count == document.chunk_count
    assert (document.embedding_failures, document.embedding_error) == (0, None)
    assert document.embedding_claimed_until is None
    assert "running" in states
    assert "retrying" not in states
    assert handed_over >= 1, "embedded in one run: nothing was handed over"
