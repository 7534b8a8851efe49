"""Uploads through the API and the ingest task, end to end, for every format of the corpus,
plus the broken and disguised files of corpus/bad/."""

from __future__ import annotations

import re

import pytest

from apps.knowledge import tasks
from apps.knowledge.models import KnowledgeChunk, KnowledgeDocument
from tests.knowledge.conftest import corpus_file, upload

# One file per format (and a few with a twist), with phrases from corpus/MANIFEST.tsv.
FILES = [
    ("pdf/multilang.pdf", ["Hello World", "Привет, мир", "你好世界"]),
    ("pdf/copy-protected.pdf", ["Document Image Analysis", "Zejiang Shen"]),
    ("docx/docx-tables.docx", ["Header Col 1", "Nested Table", "Table with merged cells"]),
    ("docx/docx-hdrftr.docx", ["Main document", "First header para"]),
    ("xlsx/merge_cells.xlsx", ["Row Merge", "Column Merge", "Not Merged"]),
    ("pptx/SampleShow.pptx", ["I am the notes of the first slide"]),
    ("pptx/fake-power-point-table.pptx", ["A Slide with a Table", "Tangerine"]),
    ("html/example-steelJIS-datasheet.html", ["SteelJIS: Japanese Steels and Alloys"]),
    ("csv/semicolon-delimited.csv", ["Lorem, ipsum", "tempor incididunt"]),
    ("csv/test_mskanji.csv", ["佐藤太郎", "名古屋"]),
    ("json/markitdown-test.json", ["5b64c88c-b3c3-4510-bcb8-da0b200602d8"]),
    ("md/codeblock.md", ["HTML Example", "<!DOCTYPE html>"]),
    ("txt/book-war-and-peace-1p.txt", ["Genoa and Lucca"]),
    # A legacy Word 97 .doc, named .docx: read as what its bytes are.
    ("bad/legacy-word97-doc-named-as.docx", ["These are a few of my favorite things"]),
]

# Refused at upload: the type is decided from the bytes.
REFUSED = [
    ("bad/smile-png-named-as.pdf", "PNG"),
    ("bad/zip-archive-named-as.pdf", "ZIP"),
    ("bad/empty.pdf", "empty"),
    ("bad/empty.docx", "empty"),
    ("bad/password_protected.xlsx", "encrypted"),
    ("bad/random-bytes-named-as.docx", "binary"),
]

# Accepted (they are what they claim to be) but cannot be extracted: a failed document.
FAILING = [
    "bad/fake-incomplete-json.json",
    "bad/GHOSTSCRIPT-698804-1-fuzzed.pdf",
    "pdf/libreoffice-writer-password.pdf",
]
SCAN = "pdf/MEDRPT-2024-PAT-3847_medical_report_scan.pdf"


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _upload_and_ingest(api, relative: str):
    path = corpus_file(relative)
    response = api.post("/v1/knowledge/files", data={"file": upload(path.read_bytes(), path.name)})
    assert response.status == 201, response.body
    document_id = response.json()["id"]
    outcome = tasks.ingest.run(document_id)
    return document_id, outcome


@pytest.mark.parametrize(("relative", "phrases"), FILES, ids=[f for f, _ in FILES])
def test_corpus_file_becomes_ready_markdown_with_its_phrases(api, relative, phrases):
    document_id, outcome = _upload_and_ingest(api, relative)
    assert outcome == "ready"
    document = api.get(f"/v1/knowledge/{document_id}").json()
    assert document["status"] == "ready"
    assert document["error_message"] is None
    content = api.get(f"/v1/knowledge/{document_id}/content")
    assert content.status == 200
    markdown = _collapse(content.body.decode())
    for phrase in phrases:
        assert _collapse(phrase) in markdown, phrase
    assert document["character_count"] == len(content.body.decode())
    assert KnowledgeChunk.objects.filter(document_id=document_id).exists()


@pytest.mark.parametrize(("relative", "detected"), REFUSED, ids=[f for f, _ in REFUSED])
def test_disguised_or_empty_file_is_refused_with_415(api, relative, detected):
    path = corpus_file(relative)
    response = api.post("/v1/knowledge/files", data={"file": upload(path.read_bytes(), path.name)})
    assert response.status == 415, response.body
    body = response.json()
    assert body["name"] == "unsupported_media_type"
    assert detected.lower() in body["message"].lower()
    assert not KnowledgeDocument.objects.exists()


@pytest.mark.parametrize("relative", FAILING)
def test_unextractable_file_ends_failed_with_short_message(api, relative):
    document_id, outcome = _upload_and_ingest(api, relative)
    assert outcome == "failed"
    document = api.get(f"/v1/knowledge/{document_id}").json()
    assert document["status"] == "failed"
    message = document["error_message"]
    assert message and len(message) < 200
    assert "Traceback" not in message and "/" not in message.replace("w/o", "")
    assert api.get(f"/v1/knowledge/{document_id}/content").status == 409


def test_scanned_pdf_is_read_by_ocr_and_its_content_says_which_pages(api):
    document_id, outcome = _upload_and_ingest(api, SCAN)
    assert outcome == "ready"
    content = api.get(f"/v1/knowledge/{document_id}/content").body.decode()
    for page in (1, 2, 3):
        assert f"## Page {page}\n\n_Text read by OCR from the page image._" in content
    assert "SEATTLE GENERAL HOSPITAL" in content
    assert KnowledgeChunk.objects.filter(document_id=document_id).exists()


def test_with_ocr_off_a_scanned_pdf_fails_saying_it_looks_scanned(api, settings):
    settings.KNOWLEDGE_OCR = False
    document_id, outcome = _upload_and_ingest(api, SCAN)
    assert outcome == "failed"
    message = api.get(f"/v1/knowledge/{document_id}").json()["error_message"]
    assert "scanned image" in message


def test_password_protected_pdf_says_so(api):
    document_id, _ = _upload_and_ingest(api, "pdf/libreoffice-writer-password.pdf")
    assert "password" in api.get(f"/v1/knowledge/{document_id}").json()["error_message"].lower()


@pytest.mark.parametrize(
    "relative", ["bad/truncated-pdflatex-4-pages.pdf", "bad/helloworld-bad.pdf"]
)
def test_damaged_pdf_ends_ready_or_failed_never_stuck(api, relative):
    document_id, outcome = _upload_and_ingest(api, relative)
    assert outcome in ("ready", "failed")
    assert api.get(f"/v1/knowledge/{document_id}").json()["status"] == outcome


def test_ingest_is_idempotent(api):
    document_id, outcome = _upload_and_ingest(api, "md/codeblock.md")
    assert outcome == "ready"
    assert tasks.ingest.run(document_id) == "obsolete"
    assert KnowledgeDocument.objects.get(pk=document_id).versions.count() == 1


def test_ingest_of_deleted_document_is_obsolete(api, agent):
    from apps.knowledge import services

    path = corpus_file("md/codeblock.md")
    document = services.document_create_from_upload(
        agent=agent, upload=upload(path.read_bytes(), path.name)
    )
    services.document_delete(agent=agent, document_id=document.pk)
    assert tasks.ingest.run(document.pk) == "obsolete"
