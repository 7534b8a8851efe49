"""Valid files without text (a blank text file, a presentation without slides, a document
without paragraphs) are ready documents with empty content, never failures; blank bytes under
the name of a binary format are still refused."""

from __future__ import annotations

import io

import docx
import pytest
from django.urls import reverse
from pptx import Presentation

from apps.knowledge import tasks
from apps.knowledge.models import KnowledgeChunk, KnowledgeDocument
from tests.knowledge.conftest import make_file_document, upload


def empty_presentation() -> bytes:
    buffer = io.BytesIO()
    Presentation().save(buffer)
    return buffer.getvalue()


def empty_word_document() -> bytes:
    buffer = io.BytesIO()
    docx.Document().save(buffer)
    return buffer.getvalue()


EMPTY_FILES = [
    ("blank.txt", b"", "text"),
    ("spaces.txt", b"  \n\t\n ", "text"),
    ("notes.md", b"\n\n", "markdown"),
    ("table.csv", b"", "csv"),
    ("slides.pptx", empty_presentation(), "pptx"),
    ("letter.docx", empty_word_document(), "docx"),
]


@pytest.mark.parametrize(("name", "data", "kind"), EMPTY_FILES, ids=[n for n, _, _ in EMPTY_FILES])
def test_empty_valid_file_is_ready_with_empty_content(api, name, data, kind):
    response = api.post("/v1/knowledge/files", data={"file": upload(data, name)})
    assert response.status == 201, response.body
    document_id = response.json()["id"]
    assert tasks.ingest.run(document_id) == "ready"

    document = api.get(f"/v1/knowledge/{document_id}").json()
    assert document["status"] == "ready"
    assert document["error_message"] is None
    assert document["character_count"] == 0
    assert KnowledgeDocument.objects.get(pk=document_id).kind == kind

    content = api.get(f"/v1/knowledge/{document_id}/content")
    assert content.status == 200
    assert content.headers["Content-Type"].startswith("text/markdown")
    assert content.body == b""
    # Nothing is indexed, so search has nothing of it to find.
    assert not KnowledgeChunk.objects.filter(document_id=document_id).exists()
    assert api.post("/v1/knowledge/search", json={"query": "notes"}).json()["data"] == []


def test_detail_page_of_an_empty_document_says_it_has_no_text(owner, agent, client):
    document = make_file_document(agent, b"", "blank.txt")
    assert document.status == "ready"
    client.force_login(owner)
    page = client.get(reverse("knowledge:document_detail", args=[document.pk]))
    assert page.status_code == 200
    assert "The file has no text, so nothing of it is indexed" in page.content.decode()


@pytest.mark.parametrize("name", ["scan.pdf", "letter.docx", "sheet.xlsx", "data.json", "blob"])
def test_blank_bytes_named_as_a_binary_format_or_json_are_refused(api, name):
    response = api.post("/v1/knowledge/files", data={"file": upload(b"", name)})
    assert response.status == 415, response.body
    assert "empty file" in response.json()["message"]
    assert not KnowledgeDocument.objects.exists()


def test_the_list_shows_a_whitespace_only_file_as_without_text_not_plain_ready(
    owner, agent, client
):
    """Issue 26, item 9: a whitespace-only file showed as a plain "Ready" in the list."""
    empty = make_file_document(agent, b"  \n\t\n ", "spaces.txt")
    full = make_file_document(agent, b"Opening hours: nine to five.", "hours.txt")
    assert (empty.status, full.status) == ("ready", "ready")
    client.force_login(owner)

    html = client.get(reverse("knowledge:document_list")).content.decode()

    empty_row = html.split(f'id="document-row-{empty.pk}"', 1)[1].split("</tr>", 1)[0]
    assert 'data-empty="true">Ready · no text</span>' in empty_row
    assert "No text found in this file" in empty_row
    full_row = html.split(f'id="document-row-{full.pk}"', 1)[1].split("</tr>", 1)[0]
    assert ">Ready</span>" in full_row and "no text" not in full_row
