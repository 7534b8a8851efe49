"""Writing a content version: its chunks, their language and search vectors, inside the
caller's transaction."""

from __future__ import annotations

import hashlib

from apps.common.lexical import detect_language, index_text, passage_config
from apps.knowledge.extraction import chunk_markdown
from apps.knowledge.models import KnowledgeChunk, KnowledgeContentVersion, KnowledgeDocument
from apps.knowledge.pipeline.producing import Content
from apps.knowledge.search.fts import index_chunks

CHUNK_MAX_CHARS = 1800


# Set on the document by _write_version; the callers save them.
SEARCH_FIELDS = ["language", "search_configs", "chunk_count", "embedded_chunk_count"]


def _write_version(document: KnowledgeDocument, content: Content, sha256: str):
    """Create a version with its chunks and search vectors (inside the caller's transaction).
    The chunks are searchable at once when the document is enabled: the caller makes the
    version current in the same transaction."""
    document.language = detect_language(content.markdown)
    version = KnowledgeContentVersion.objects.create(
        document=document, markdown=content.markdown, sha256=sha256, page_count=content.page_count
    )
    rows = []
    for chunk in chunk_markdown(content.markdown, max_chars=CHUNK_MAX_CHARS):
        rows.append(
            KnowledgeChunk(
                version=version,
                document=document,
                agent_id=document.agent_id,
                heading_path=chunk.heading_path,
                text=chunk.text,
                position=chunk.position,
                search_config=passage_config(chunk.text, document_config=document.language),
                index_text=index_text(chunk.text),
                is_searchable=document.is_enabled,
            )
        )
    document.search_configs = ",".join(
        sorted({row.search_config for row in rows} or {document.language})
    )
    chunks = KnowledgeChunk.objects.bulk_create(rows, batch_size=500)
    index_chunks(chunks)
    document.chunk_count = len(chunks)
    document.embedded_chunk_count = 0
    return version


def _sha256(markdown: str) -> str:
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()
