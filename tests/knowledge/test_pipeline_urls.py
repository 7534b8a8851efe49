"""URL documents: fetch through the network guard, refresh with versions, schedules and the
beat sweepers. Pages come from a real local HTTP server (NETGUARD_ALLOW_LOOPBACK on)."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
import time_machine
from django.db import connection, connections
from django.utils import timezone

from apps.knowledge import pipeline, services, tasks
from apps.knowledge.models import KnowledgeChunk, KnowledgeContentVersion, KnowledgeDocument
from tests.knowledge.conftest import html_page
from tests.knowledge.factories import url_document_factory


def _add_url(api, url: str, **extra) -> str:
    response = api.post("/v1/knowledge/urls", json={"url": url, **extra})
    assert response.status == 201, response.body
    return response.json()["id"]


def test_url_document_is_fetched_and_indexed(api, loopback, page_server):
    page_server.set_page(
        "/guide", html_page("Shipping guide", "Parcels leave the warehouse daily at noon.")
    )
    document_id = _add_url(api, page_server.url("/guide"))
    assert tasks.ingest.run(document_id) == "ready"
    document = api.get(f"/v1/knowledge/{document_id}").json()
    assert document["status"] == "ready"
    assert document["last_checked_at"] == document["last_synced_at"]
    assert document["next_refresh_at"] is not None  # 24 h after the fetch
    content = api.get(f"/v1/knowledge/{document_id}/content").body.decode()
    assert "Parcels leave the warehouse daily at noon." in content
    assert page_server.requests == ["/guide"]


def test_redirect_to_private_address_fails_with_clear_message(api, loopback, page_server):
    page_server.set_redirect("/moved", "http://10.0.0.1/")
    document_id = _add_url(api, page_server.url("/moved"))
    assert tasks.ingest.run(document_id) == "failed"
    document = api.get(f"/v1/knowledge/{document_id}").json()
    assert document["status"] == "failed"
    assert document["error_message"].startswith("Blocked by the network guard")
    assert "10.0.0.1" in document["error_message"]


def test_loopback_is_refused_at_fetch_time_without_the_test_setting(
    api, loopback, page_server, settings
):
    page_server.set_page("/p", html_page("T", "text"))
    document_id = _add_url(api, page_server.url("/p"))
    settings.NETGUARD_ALLOW_LOOPBACK = False
    assert tasks.ingest.run(document_id) == "failed"
    assert "not public" in KnowledgeDocument.objects.get(pk=document_id).error_message
    assert page_server.requests == []


def test_http_error_page_fails_the_document(api, loopback, page_server):
    document_id = _add_url(api, page_server.url("/missing"))
    assert tasks.ingest.run(document_id) == "failed"
    assert KnowledgeDocument.objects.get(pk=document_id).error_message == (
        "The server answered 404 Not Found."
    )


@pytest.fixture
def ready_url_document(api, loopback, page_server):
    page_server.set_page("/faq", html_page("FAQ", "The first version mentions aardvarks."))
    document_id = _add_url(api, page_server.url("/faq"))
    assert tasks.ingest.run(document_id) == "ready"
    return document_id


def _refresh(api, document_id):
    response = api.post(f"/v1/knowledge/{document_id}/refresh")
    assert response.status == 202
    return tasks.refresh.run(document_id)


def _search(api, query: str) -> list[str]:
    return [
        h["document_id"]
        for h in api.post("/v1/knowledge/search", json={"query": query}).json()["data"]
    ]


def test_refresh_replaces_content_and_search(api, page_server, ready_url_document):
    page_server.set_page("/faq", html_page("FAQ", "The second version mentions zebras."))
    old_version = KnowledgeDocument.objects.get(pk=ready_url_document).current_version_id
    assert _refresh(api, ready_url_document) == "refreshed"
    content = api.get(f"/v1/knowledge/{ready_url_document}/content").body.decode()
    assert "zebras" in content and "aardvarks" not in content
    assert _search(api, "zebras") == [ready_url_document]
    assert _search(api, "aardvarks") == []
    assert not KnowledgeContentVersion.objects.filter(pk=old_version).exists()
    assert not KnowledgeChunk.objects.filter(version_id=old_version).exists()
    document = api.get(f"/v1/knowledge/{ready_url_document}").json()
    assert document["refresh_status"] == "idle"


def test_unchanged_refresh_only_moves_last_checked_at(api, ready_url_document):
    before = KnowledgeDocument.objects.get(pk=ready_url_document)
    with time_machine.travel(timezone.now() + timedelta(hours=1)):
        assert _refresh(api, ready_url_document) == "unchanged"
    after = KnowledgeDocument.objects.get(pk=ready_url_document)
    assert after.current_version_id == before.current_version_id
    assert after.last_synced_at == before.last_synced_at
    assert after.last_checked_at > before.last_checked_at
    assert after.refresh_status == "idle"


def test_failed_refresh_keeps_previous_content(api, page_server, ready_url_document):
    page_server.pages["/faq"] = (500, {"Content-Type": "text/plain"}, b"down")
    assert _refresh(api, ready_url_document) == "failed"
    document = api.get(f"/v1/knowledge/{ready_url_document}").json()
    assert document["status"] == "ready"
    assert document["refresh_status"] == "failed"
    assert document["refresh_error_message"] == "The server answered 500 Internal Server Error."
    assert "aardvarks" in api.get(f"/v1/knowledge/{ready_url_document}/content").body.decode()
    assert _search(api, "aardvarks") == [ready_url_document]


@pytest.mark.django_db(transaction=True)
def test_content_and_search_serve_previous_version_until_refresh_commits(
    api, page_server, ready_url_document
):
    """While a refresh is fetching (the server holds its answer), readers see version one."""
    page_server.set_page("/faq", html_page("FAQ", "The second version mentions zebras."))
    assert api.post(f"/v1/knowledge/{ready_url_document}/refresh").status == 202
    page_server.hold.clear()
    page_server.arrived.clear()
    outcome: list[str] = []
    worker = threading.Thread(
        target=lambda: (outcome.append(tasks.refresh.run(ready_url_document)), connection.close())
    )
    worker.start()
    assert page_server.arrived.wait(10)
    for _ in range(5):
        response = api.get(f"/v1/knowledge/{ready_url_document}/content")
        assert response.status == 200 and b"aardvarks" in response.body
        assert _search(api, "aardvarks") == [ready_url_document]
    page_server.hold.set()
    worker.join(20)
    assert outcome == ["refreshed"]


@pytest.mark.django_db(transaction=True)
def test_content_read_in_a_loop_during_refreshes_never_fails(
    api, page_server, ready_url_document, settings
):
    """A reader hammering the content endpoint across several version swaps always gets a
    complete version: never a 409, never an empty body."""
    # The reader sends hundreds of requests a second: the rate limit is not what this is about.
    settings.API_RATE_LIMIT = "1000000/minute"
    stop = threading.Event()
    seen: list[tuple[int, bytes]] = []

    def read_loop() -> None:
        from tests.conftest import ApiClient

        reader = ApiClient(api.raw_key)
        try:
            while not stop.is_set():
                response = reader.get(f"/v1/knowledge/{ready_url_document}/content")
                seen.append((response.status, response.body))
        finally:
            connection.close()

    reader = threading.Thread(target=read_loop)
    reader.start()
    try:
        for n in range(4):
            page_server.set_page("/faq", html_page("FAQ", f"Version {n} mentions creature{n}."))
            assert api.post(f"/v1/knowledge/{ready_url_document}/refresh").status == 202
            assert tasks.refresh.run(ready_url_document) == "refreshed"
        # Let the reader finish a request that began after the last version was committed
        # (the one in flight at this moment may have started before it).
        settled = len(seen) + 2
        deadline = time.monotonic() + 20
        while len(seen) < settled and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        reader.join(20)
    assert len(seen) > 10
    assert {status for status, _ in seen} == {200}
    assert all(body.strip() for _, body in seen)
    assert b"creature3" in seen[-1][1]


def test_refresh_of_deleted_document_leaves_nothing_behind(
    api, agent, page_server, ready_url_document
):
    assert api.post(f"/v1/knowledge/{ready_url_document}/refresh").status == 202
    services.document_delete(agent=agent, document_id=ready_url_document)
    assert tasks.refresh.run(ready_url_document) == "obsolete"
    assert not KnowledgeContentVersion.objects.filter(document_id=ready_url_document).exists()
    assert not KnowledgeChunk.objects.filter(document_id=ready_url_document).exists()


def test_refresh_of_a_failed_url_document_can_make_it_ready(api, loopback, page_server):
    document_id = _add_url(api, page_server.url("/later"))
    assert tasks.ingest.run(document_id) == "failed"
    page_server.set_page("/later", html_page("Later", "Now the page exists."))
    assert _refresh(api, document_id) == "refreshed"
    document = api.get(f"/v1/knowledge/{document_id}").json()
    assert document["status"] == "ready" and document["error_message"] is None


# --- scheduled refresh -----------------------------------------------------------------------


def test_refresh_due_claims_due_documents_once(api, page_server, ready_url_document):
    document = KnowledgeDocument.objects.get(pk=ready_url_document)
    assert pipeline.documents_refresh_due() == []  # due in 24 h
    with time_machine.travel(document.next_refresh_at + timedelta(seconds=1)):
        assert pipeline.documents_refresh_due() == [ready_url_document]
        assert pipeline.documents_refresh_due() == []
        document.refresh_from_db()
        assert document.refresh_status == "refreshing"
        assert tasks.refresh.run(ready_url_document) == "unchanged"
        document.refresh_from_db()
        assert document.next_refresh_at > timezone.now() + timedelta(hours=23)


def test_interval_zero_is_never_due(api, ready_url_document):
    api.patch(f"/v1/knowledge/{ready_url_document}/schedule", json={"refresh_interval_hours": 0})
    with time_machine.travel(timezone.now() + timedelta(days=30)):
        assert pipeline.documents_refresh_due() == []


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_claimers_refresh_each_due_document_once(agent):
    if connection.vendor != "postgresql":
        pytest.skip("SKIP LOCKED needs PostgreSQL")
    past = timezone.now() - timedelta(minutes=1)
    ids = {
        url_document_factory(
            agent=agent,
            url=f"https://example.com/{n}",
            refresh_interval_hours=6,
            next_refresh_at=past,
        ).pk
        for n in range(60)
    }
    barrier = threading.Barrier(2)
    results: list[list[str]] = [[], []]

    def claim(slot: int) -> None:
        try:
            barrier.wait(5)
            for _ in range(6):
                results[slot] += pipeline.documents_refresh_due(batch_size=10)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=claim, args=(slot,)) for slot in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    claimed = results[0] + results[1]
    assert sorted(claimed) == sorted(ids)  # every due document, none twice
    assert results[0] and results[1]  # both claimers did work
    assert set(
        KnowledgeDocument.objects.filter(pk__in=ids).values_list("refresh_status", flat=True)
    ) == {"refreshing"}


# --- recovery --------------------------------------------------------------------------------


def test_recover_stalled_requeues_expired_leases_only(agent, django_capture_on_commit_callbacks):
    now = timezone.now()
    expired = KnowledgeDocument.objects.create(
        agent=agent,
        name="a",
        source_type="file",
        status="processing",
        queued_at=now,
        claimed_until=now - timedelta(seconds=1),
    )
    running = KnowledgeDocument.objects.create(
        agent=agent,
        name="b",
        source_type="file",
        status="processing",
        queued_at=now,
        claimed_until=now + timedelta(minutes=4),
    )
    never_picked = KnowledgeDocument.objects.create(
        agent=agent,
        name="c",
        source_type="file",
        status="processing",
        queued_at=now - timedelta(minutes=10),
    )
    just_queued = KnowledgeDocument.objects.create(
        agent=agent,
        name="d",
        source_type="file",
        status="processing",
        queued_at=now,
    )
    with django_capture_on_commit_callbacks() as callbacks:
        recovered = pipeline.documents_recover_stalled()
    assert sorted(recovered) == sorted([expired.pk, never_picked.pk])
    assert len(callbacks) == 2
    expired.refresh_from_db()
    assert expired.claimed_until is None
    assert running.pk not in recovered and just_queued.pk not in recovered


def test_work_interrupted_too_often_fails(agent, django_capture_on_commit_callbacks):
    from tests.knowledge.conftest import make_file_document

    document = make_file_document(agent, b"# T\n\ntext", ingest=False)
    KnowledgeDocument.objects.filter(pk=document.pk).update(attempts=pipeline.MAX_ATTEMPTS)
    assert pipeline.document_ingest(document_id=document.pk) == "failed"
    document.refresh_from_db()
    assert document.error_message == pipeline.INTERRUPTED
