"""The Knowledge page in Chromium: upload through the form and watch the row become ready
(a real Celery worker does the work), then manage the document in place."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from apps.knowledge.models import KnowledgeDocument
from tests.knowledge.conftest import make_file_document, start_knowledge_worker


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def worker(settings, media_root, transactional_db):
    from config.celery import app

    if not settings.REDIS_URL:
        pytest.skip("a real worker needs Redis (REDIS_URL)")
    app.control.purge()
    process = start_knowledge_worker(media_root)
    yield process
    process.stop()


@pytest.mark.worker
def test_upload_through_the_form_becomes_ready(console_page, worker, tmp_path):
    page = console_page
    first = tmp_path / "kettles.md"
    first.write_text("# Kettles\n\nEvery kettle carries a two-year warranty.\n")
    second = tmp_path / "picture.pdf"
    second.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    page.goto(f"{page.live_server_url}/knowledge/")
    page.set_input_files("#upload-input", [str(first), str(second)])

    items = page.locator("#upload-list .upload-item")
    expect(page.locator("#upload-list .upload-item")).to_have_count(2)
    page.locator("#upload-list .upload-item.done").wait_for()
    # The upload line follows its document to the end: ready, not "extracting" for ever.
    expect(items.nth(0).locator(".upload-message")).to_have_text(
        "Ready: indexed and searchable.", timeout=60_000
    )
    page.locator("#upload-list .upload-item.error").wait_for()
    assert "PNG image" in page.locator("#upload-list .upload-item.error").inner_text()
    assert page.locator(".upload-item.done .progress").get_attribute("aria-valuenow") == "100"

    document = KnowledgeDocument.objects.get()
    row = page.locator(f"#document-row-{document.pk}")
    row.wait_for()
    # The row polls until the worker has indexed and then embedded the document, then stops.
    row.locator('[data-status="ready"]').wait_for(timeout=60_000)
    expect(row.locator(".embedding-progress")).to_have_text("Searchable by meaning", timeout=60_000)
    expect(row).not_to_have_attribute("hx-trigger", re.compile(".*"))

    page.fill("#search-q", "warranty")
    page.locator("#search-results mark").first.wait_for()
    assert "kettles.md" in page.locator("#search-results").inner_text()


def test_manage_a_document_in_place(console_page, agent, media_root):
    page = console_page
    document = make_file_document(agent, b"# Hours\n\nThe shop opens at nine.\n", "hours.md")
    page.goto(f"{page.live_server_url}/knowledge/")
    row = page.locator(f"#document-row-{document.pk}")

    row.locator("input[name=name]").fill("Opening hours")
    row.locator(".rename-form button").click()
    page.locator(f'#document-row-{document.pk} input[value="Opening hours"]').wait_for()

    toggle = row.locator(".toggle-button")
    expect(toggle).to_have_text("Disable")  # the button names the action, not the state
    toggle.click()
    expect(page.locator(f"#document-row-{document.pk} .toggle-button")).to_have_text("Enable")
    expect(page.locator(f"#document-row-{document.pk} [data-enabled]")).to_have_text("Not searched")
    document.refresh_from_db()
    assert document.name == "Opening hours" and document.is_enabled is False

    page.fill("#search-q", "shop")
    page.locator("#search-results .empty").wait_for()  # disabled: the Agent finds nothing

    row.locator("a", has_text="Details").click()
    page.locator("#document-content h1", has_text="Hours").wait_for()
    assert "The shop opens at nine." in page.locator("#document-content").inner_text()

    page.go_back()
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator(f"#document-row-{document.pk} .btn-danger").click()
    page.locator(f"#document-row-{document.pk}").wait_for(state="detached")
    assert not KnowledgeDocument.objects.filter(pk=document.pk).exists()


def test_url_document_schedule_and_refresh(console_page, agent, media_root):
    page = console_page
    document = KnowledgeDocument.objects.create(
        agent=agent,
        name="Help centre",
        source_type="url",
        source_url="https://example.com/help",
        normalized_url="https://example.com/help",
        status="ready",
        refresh_interval_hours=24,
    )
    page.goto(f"{page.live_server_url}/knowledge/")
    row = page.locator(f"#document-row-{document.pk}")
    # Wait for the server's answer, not just the select's new value in the page.
    with page.expect_response(lambda response: response.url.endswith("/schedule/")):
        row.locator("select[name=refresh_interval_hours]").select_option("168")
    document.refresh_from_db()
    assert document.refresh_interval_hours == 168

    row.locator(".refresh-button").click()
    page.locator(f'#document-row-{document.pk} [data-refresh-status="refreshing"]').wait_for()
    # Polling: the row is refreshed in place once the refresh settles.
    KnowledgeDocument.objects.filter(pk=document.pk).update(
        refresh_status="failed",
        refresh_error_message="The server answered 503 Service Unavailable.",
    )
    page.locator(f'#document-row-{document.pk} [data-refresh-status="failed"]').wait_for(
        timeout=10_000
    )
    assert "503" in page.locator(f"#document-row-{document.pk}").inner_text()


@pytest.mark.worker
def test_an_upload_that_fails_in_the_worker_turns_its_line_red_and_can_be_retried(
    console_page, worker, tmp_path
):
    page = console_page
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << >>\n%%EOF\n")
    page.goto(f"{page.live_server_url}/knowledge/")
    page.set_input_files("#upload-input", [str(broken)])
    line = page.locator("#upload-list .upload-item")
    expect(line).to_have_class(re.compile(r"\berror\b"), timeout=60_000)
    expect(line.locator(".upload-message")).to_contain_text("Failed:")
    fill = line.locator(".progress > span")
    assert fill.evaluate("e => getComputedStyle(e).backgroundColor") == line.locator(
        ".upload-message"
    ).evaluate("e => getComputedStyle(e).color")  # the bar is the error colour, not blue

    document = KnowledgeDocument.objects.get()
    page.goto(f"{page.live_server_url}/knowledge/{document.pk}/")
    page.locator("#document-actions .retry-button").click()
    expect(page.locator("#document-status [data-status]")).to_have_attribute(
        "data-status", re.compile("processing|failed")
    )
    document.refresh_from_db()
    assert document.attempts <= 1  # queued again once


def test_the_document_page_renames_disables_downloads_and_deletes(console_page, agent, media_root):
    page = console_page
    data = b"# Hours\n\nThe shop opens at nine.\n"
    document = make_file_document(agent, data, "hours.md")
    page.goto(f"{page.live_server_url}/knowledge/{document.pk}/")
    actions = page.locator("#document-actions")

    actions.locator("#id_rename").fill("Opening hours")
    actions.locator(".rename-form button").click()
    expect(page.locator("#document-name")).to_have_text("Opening hours")

    actions.locator(".toggle-button").click()
    expect(page.locator("#document-actions .toggle-button")).to_have_text("Enable for search")

    with page.expect_download() as download:
        page.locator("#download-original").click()
    assert download.value.suggested_filename == "hours.md"
    assert Path(download.value.path()).read_bytes() == data

    page.locator("#raw-markdown").click()
    assert page.locator("body").inner_text().startswith("# Hours")
    page.go_back()

    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#document-actions .btn-danger").click()
    expect(page).to_have_url(f"{page.live_server_url}/knowledge/")
    assert not KnowledgeDocument.objects.filter(pk=document.pk).exists()


def test_the_document_page_searches_that_document_alone_and_explains_each_hit(
    console_page, agent, media_root
):
    from apps.knowledge import embedding_jobs

    page = console_page
    kettles = make_file_document(
        agent,
        b"# Kettles\n\nEvery kettle carries a two-year warranty against limescale damage.\n\n"
        b"## Cleaning\n\nDescale the kettle once a month with white vinegar.\n",
        "kettles.md",
    )
    toasters = make_file_document(
        agent, b"# Toasters\n\nToasters carry a one-year warranty.\n", "toasters.md"
    )
    for document in (kettles, toasters):
        embedding_jobs.document_embed(document_id=document.pk, max_batches=100)
    page.goto(f"{page.live_server_url}/knowledge/{kettles.pk}/")
    box = page.locator("#document-search")
    expect(box.locator("#search-min-score")).to_have_value("0.2")  # the calibrated default

    box.locator("#search-q").fill("warranty")
    results = page.locator("#search-results")
    results.locator("mark").first.wait_for()
    # The Agent's retrieval over this document only: the toasters' warranty is not shown.
    hits = results.locator(".hit")
    expect(hits).to_have_count(1)
    assert "kettles.md" in hits.first.locator(".hit-head").inner_text()
    assert "toasters" not in results.inner_text().casefold()
    expect(hits.first.locator("mark").first).to_have_text(re.compile("warranty", re.I))
    why = hits.first.locator(".hit-why").inner_text()
    assert "keyword rank 1" in why and "semantic rank" in why and "similarity" in why, why
    assert re.search(r"query words held 1\.00", why), why

    # Meaning alone, in the same box: found without any of the question's words.
    box.locator("#search-mode").select_option("semantic")
    box.locator("#search-q").fill("how do I get scale out of it")
    expect(results.locator(".hit-why").first).to_contain_text("keyword rank —", timeout=20_000)
    expect(results.locator(".hit-why").first).to_contain_text("semantic rank 1")
    expect(results.locator(".hit")).to_have_count(1)

    # A question only the other document answers finds nothing here.
    box.locator("#search-mode").select_option("keyword")
    box.locator("#search-q").fill("toasters")
    expect(results.locator(".empty")).to_contain_text("Nothing found for “toasters”")

    # Disabled, the document is not searched by the Agent, and the box says so.
    page.locator("#document-actions .toggle-button").click()
    expect(page.locator("#document-actions .toggle-button")).to_have_text("Enable for search")
    page.locator("#document-search #search-q").fill("warranty")
    expect(page.locator("#search-results .empty")).to_contain_text("disabled")

    # Without scripts the form is a plain GET of the same view: the whole page with the hits.
    page.goto(f"{page.live_server_url}/knowledge/{toasters.pk}/search/?q=warranty&mode=keyword")
    expect(page.locator("#document-name")).to_have_text("toasters.md")
    expect(page.locator("#search-results .hit")).to_have_count(1)
    expect(page.locator("#document-search #search-q")).to_have_value("warranty")
