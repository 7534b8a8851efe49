"""Factories for the knowledge models.

A document worth searching is made through the real services and pipeline
(`file_document_factory`), so its chunks, versions and index are what ingestion writes; a URL
document in a given state (due for a refresh, stalled, failed) is a row with that state
(`url_document_factory`), for the scheduling and listing code that only reads it.
"""

import itertools

from django.core.files.uploadedfile import SimpleUploadedFile

from apps.knowledge import pipeline, services
from apps.knowledge.models import KnowledgeDocument

_counter = itertools.count(1)


def upload(data: bytes, name: str = "notes.md") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def file_document_factory(agent, data: bytes, name: str = "notes.md", *, ingest: bool = True):
    """An uploaded document, extracted and chunked by the pipeline unless `ingest=False`."""
    document = services.document_create_from_upload(agent=agent, upload=upload(data, name))
    if ingest:
        pipeline.document_ingest(document_id=document.pk)
        document.refresh_from_db()
    return document


def url_document_factory(*, agent, url: str | None = None, **fields) -> KnowledgeDocument:
    """A URL document row, `ready` unless told otherwise; nothing is fetched."""
    n = next(_counter)
    url = url or f"https://example.com/page-{n}"
    defaults = {
        "name": f"Page {n}",
        "source_type": "url",
        "source_url": url,
        "normalized_url": url,
        "status": "ready",
    }
    defaults.update(fields)
    return KnowledgeDocument.objects.create(agent=agent, **defaults)
