"""Knowledge console pages, with and without HX-Request."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from apps.knowledge import embedding_jobs
from apps.knowledge.models import KnowledgeDocument
from tests.knowledge.conftest import make_file_document, upload

HX = {"HX-Request": "true"}
MARKDOWN = b"# Opening hours\n\nThe shop opens at nine.\n\n<script>alert('x')</script>\n"


@pytest.fixture
def console(owner, agent):
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def document(agent):
    return make_file_document(agent, MARKDOWN, "hours.md")


def _csrf_client(owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    page = client.get(reverse("knowledge:document_list"))
    token = page.context["csrf_token"]
    return client, str(token)


@pytest.mark.smoke
def test_list_page_shows_documents_and_forms(console, document):
    response = console.get(reverse("knowledge:document_list"))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="upload-form"' in html and 'id="url-form"' in html
    assert f'id="document-row-{document.pk}"' in html
    assert 'aria-current="page"' in html  # the Knowledge nav entry is highlighted
    assert "css/knowledge.css" in html and "js/knowledge.js" in html


def test_table_partial_for_htmx(console, document):
    # htmx names the swapped element (the table itself, refreshed on `knowledge-changed`).
    response = console.get(
        reverse("knowledge:document_list"), headers={**HX, "HX-Target": "document-table"}
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="document-table"')
    assert "<html" not in html


def test_list_page_requires_login(client):
    response = client.get(reverse("knowledge:document_list"))
    assert response.status_code == 302


def test_upload_endpoint_creates_document_with_csrf(owner, agent):
    client, token = _csrf_client(owner)
    response = client.post(
        reverse("knowledge:document_upload"),
        {"file": upload(MARKDOWN, "hours.md")},
        headers={"X-CSRFToken": token},
    )
    assert response.status_code == 201
    assert KnowledgeDocument.objects.get(pk=response.json()["id"]).agent == agent


def test_upload_endpoint_refuses_missing_csrf(owner):
    client, _token = _csrf_client(owner)
    response = client.post(reverse("knowledge:document_upload"), {"file": upload(MARKDOWN)})
    assert response.status_code == 403
    assert not KnowledgeDocument.objects.exists()


def test_upload_endpoint_reports_errors_as_json(owner, document, settings):
    client, token = _csrf_client(owner)
    headers = {"X-CSRFToken": token}
    url = reverse("knowledge:document_upload")
    duplicate = client.post(url, {"file": upload(MARKDOWN, "again.md")}, headers=headers)
    assert duplicate.status_code == 409 and document.pk in duplicate.json()["message"]
    png = client.post(
        url, {"file": upload(b"\x89PNG\r\n\x1a\n" + bytes(40), "x.pdf")}, headers=headers
    )
    assert png.status_code == 415 and "PNG" in png.json()["message"]
    settings.KNOWLEDGE_MAX_UPLOAD_BYTES = 100
    big = client.post(url, {"file": upload(b"x" * 5000, "big.txt")}, headers=headers)
    assert big.status_code == 413


def test_add_url_with_htmx_renders_form_and_triggers_table(console, settings):
    settings.NETGUARD_ALLOW_LOOPBACK = True
    response = console.post(
        reverse("knowledge:document_add_url"),
        {"url": "localhost", "refresh_interval_hours": "6"},
        headers=HX,
    )
    assert response.status_code == 200
    assert response["HX-Trigger"] == "knowledge-changed"
    document = KnowledgeDocument.objects.get()
    assert document.source_url == "https://localhost/" and document.refresh_interval_hours == 6


def test_add_private_url_shows_error_in_form(console):
    response = console.post(
        reverse("knowledge:document_add_url"),
        {"url": "http://10.0.0.1/", "refresh_interval_hours": "24"},
        headers=HX,
    )
    html = response.content.decode()
    assert 'id="url-error"' in html and "not public" in html
    assert "HX-Trigger" not in response
    assert not KnowledgeDocument.objects.exists()


def test_row_of_processing_document_keeps_polling(console, agent):
    processing = make_file_document(agent, b"# A\n\nb", "a.md", ingest=False)
    response = console.get(reverse("knowledge:document_row", args=[processing.pk]), headers=HX)
    assert response.status_code == 200
    assert 'hx-trigger="every 2s"' in response.content.decode()


def test_row_of_settled_document_stops_polling(console, document):
    # Ready but not embedded yet: the row keeps polling to show the embedding progress.
    response = console.get(reverse("knowledge:document_row", args=[document.pk]), headers=HX)
    assert response.status_code == 200
    assert "Embedding 0/" in response.content.decode()
    assert embedding_jobs.document_embed(document_id=document.pk, max_batches=100) == "done"
    response = console.get(reverse("knowledge:document_row", args=[document.pk]), headers=HX)
    assert response.status_code == 286
    html = response.content.decode()
    assert 'data-status="ready"' in html and "every 2s" not in html
    assert "Searchable by meaning" in html


def test_rename_toggle_and_delete_in_place(console, document):
    rename = console.post(
        reverse("knowledge:document_rename", args=[document.pk]), {"name": "Hours"}, headers=HX
    )
    assert 'value="Hours"' in rename.content.decode()
    toggle = console.post(
        reverse("knowledge:document_toggle", args=[document.pk]),
        {"is_enabled": "false"},
        headers=HX,
    )
    # The button names what it does next; the state is a badge beside it.
    toggled = toggle.content.decode()
    assert ">Enable</button>" in toggled and "Not searched" in toggled
    document.refresh_from_db()
    assert document.name == "Hours" and document.is_enabled is False
    delete = console.post(reverse("knowledge:document_delete", args=[document.pk]), headers=HX)
    assert delete.status_code == 200 and delete.content == b""
    assert not KnowledgeDocument.objects.filter(pk=document.pk).exists()


def test_refresh_of_file_shows_error_in_row(console, document):
    response = console.post(reverse("knowledge:document_refresh", args=[document.pk]), headers=HX)
    assert "Only URL documents can be refreshed" in response.content.decode()


def test_schedule_select_updates_url_document(console, agent):
    document = KnowledgeDocument.objects.create(
        agent=agent,
        name="Docs",
        source_type="url",
        source_url="https://example.com/",
        normalized_url="https://example.com/",
        status="ready",
        refresh_interval_hours=24,
    )
    console.post(
        reverse("knowledge:document_schedule", args=[document.pk]),
        {"refresh_interval_hours": "168"},
        headers=HX,
    )
    document.refresh_from_db()
    assert document.refresh_interval_hours == 168


def test_non_htmx_post_redirects(console, document):
    response = console.post(reverse("knowledge:document_rename", args=[document.pk]), {"name": "X"})
    assert response.status_code == 302


def test_detail_page_renders_sanitized_markdown(console, document):
    response = console.get(reverse("knowledge:document_detail", args=[document.pk]))
    html = response.content.decode()
    assert "<h1>Opening hours</h1>" in html
    assert "<script>alert" not in html
    assert 'data-status="ready"' in html


def test_detail_of_other_agents_document_is_404(console, other_agent):
    theirs = make_file_document(other_agent, MARKDOWN)
    assert console.get(reverse("knowledge:document_detail", args=[theirs.pk])).status_code == 404


def test_search_partial_shows_highlighted_hits(console, document):
    response = console.get(reverse("knowledge:document_search"), {"q": "shop opens"}, headers=HX)
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="search-results"')
    assert "<mark>shop</mark>" in html and "hours.md" in html


def test_search_hit_names_its_section_once_under_the_document(console, agent):
    titled = make_file_document(agent, b"# Refunds\n\n## How long\n\nA refund takes days.\n")
    other = make_file_document(agent, b"# Opening\n\n## Weekdays\n\nA refund desk.\n")
    for document in (titled, other):  # one named after its title, one not
        document.name = "Refunds"
        document.save(update_fields=["name"])
    html = console.get(reverse("knowledge:document_search"), {"q": "refund"}, headers=HX).content
    html = html.decode()
    # "Refunds › Refunds › How long" said the title twice.
    assert '<span class="muted">› How long</span>' in html
    assert '<span class="muted">› Opening › Weekdays</span>' in html


def test_status_partial_of_a_settled_document_stops_polling_and_reloads(console, document):
    response = console.get(
        reverse("knowledge:document_detail", args=[document.pk]),
        headers={**HX, "HX-Target": "document-status"},
    )
    assert response.status_code == 286  # htmx: stop polling
    assert response["HX-Refresh"] == "true"
    assert response.content.decode().lstrip().startswith('<div id="document-status"')


def test_missing_document_page_is_the_styled_404(console):
    response = console.get(reverse("knowledge:document_detail", args=["doc_missing"]))
    assert response.status_code == 404
    html = response.content.decode()
    assert "Not found" in html and 'class="sidebar' in html


# --- the document page's actions, retry, download and raw markdown -------------------------------

BROKEN_PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << >>\n%%EOF\n"


def test_list_toggle_names_the_action_not_the_state(console, document):
    html = console.get(reverse("knowledge:document_list")).content.decode()
    assert ">Disable</button>" in html and "Searched" in html
    assert ">Enabled</button>" not in html


def test_detail_page_offers_every_action(console, document):
    html = console.get(reverse("knowledge:document_detail", args=[document.pk])).content.decode()
    for action in ("rename", "toggle", "delete", "download", "markdown"):
        assert reverse(f"knowledge:document_{action}", args=[document.pk]) in html, action
    assert "Disable for search" in html
    assert reverse("knowledge:document_retry", args=[document.pk]) not in html  # not failed
    assert 'data-confirm="Delete' in html


def test_plain_forms_on_the_detail_page_come_back_to_it_and_nowhere_else(console, document):
    here = reverse("knowledge:document_detail", args=[document.pk])
    response = console.post(
        reverse("knowledge:document_rename", args=[document.pk]), {"name": "Hours", "next": here}
    )
    assert response.status_code == 302 and response["Location"] == here
    response = console.post(
        reverse("knowledge:document_toggle", args=[document.pk]),
        {"is_enabled": "false", "next": "https://evil.example/"},
    )
    assert response["Location"] == reverse("knowledge:document_list")
    document.refresh_from_db()
    assert (document.name, document.is_enabled) == ("Hours", False)


def test_download_gives_back_the_uploaded_bytes_as_an_attachment(console, document):
    response = console.get(reverse("knowledge:document_download", args=[document.pk]))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == MARKDOWN
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment;")
    assert 'filename="hours.md"' in response["Content-Disposition"]


def test_download_of_another_agents_or_a_url_document_is_404(console, other_agent, agent):
    theirs = make_file_document(other_agent, MARKDOWN, "theirs.md")
    assert console.get(reverse("knowledge:document_download", args=[theirs.pk])).status_code == 404
    url_document = KnowledgeDocument.objects.create(
        agent=agent, name="Help", source_type="url", source_url="https://example.com/"
    )
    response = console.get(reverse("knowledge:document_download", args=[url_document.pk]))
    assert response.status_code == 404
    assert "added from a URL" in response.content.decode()


def test_raw_markdown_is_plain_text_never_html(console, document):
    response = console.get(reverse("knowledge:document_markdown", args=[document.pk]))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    body = response.content.decode()
    assert body.startswith("# Opening hours") and "<script>alert('x')</script>" in body


def test_a_failed_document_is_retried_once_however_often_it_is_asked(console, agent):
    failed = make_file_document(agent, BROKEN_PDF, "broken.pdf")
    assert failed.status == "failed"
    html = console.get(reverse("knowledge:document_detail", args=[failed.pk])).content.decode()
    assert reverse("knowledge:document_retry", args=[failed.pk]) in html
    first = console.post(reverse("knowledge:document_retry", args=[failed.pk]), headers=HX)
    assert 'data-status="processing"' in first.content.decode()
    failed.refresh_from_db()
    assert (failed.status, failed.error_message) == ("processing", None)
    second = console.post(reverse("knowledge:document_retry", args=[failed.pk]), headers=HX)
    assert "Only a failed document can be retried." in second.content.decode()


def test_add_url_error_keeps_the_typed_url_and_name(console):
    response = console.post(
        reverse("knowledge:document_add_url"),
        {"url": "http://10.0.0.1/", "name": "Intranet help", "refresh_interval_hours": "24"},
        headers=HX,
    )
    html = response.content.decode()
    assert 'value="http://10.0.0.1/"' in html and 'value="Intranet help"' in html


def test_a_retried_document_is_ingested_again_from_its_stored_file(agent):
    from apps.common.errors import Conflict
    from apps.knowledge import pipeline, services

    document = make_file_document(agent, MARKDOWN, "hours.md", ingest=False)
    KnowledgeDocument.objects.filter(pk=document.pk).update(
        status="failed", error_message="The worker ran out of time."
    )
    services.document_retry(agent=agent, document_id=document.pk)
    assert pipeline.document_ingest(document_id=document.pk) == "ready"
    document.refresh_from_db()
    assert (document.status, document.error_message, document.chunk_count) == ("ready", None, 1)
    with pytest.raises(Conflict):
        services.document_retry(agent=agent, document_id=document.pk)


def test_documents_page_back_with_newer(console, agent):
    from tests.paging import assert_older_then_newer_retraces

    for n in range(27):
        make_file_document(agent, f"# Note {n}\n\nText {n}.\n".encode(), f"note-{n}.md")
    assert_older_then_newer_retraces(
        console,
        "/knowledge/",
        older_id="older-documents",
        newer_id="newer-documents",
        row_pattern=r'id="document-row-(\w+)"',
    )
