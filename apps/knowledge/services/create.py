"""New documents: an uploaded file or a public URL, stored and queued for ingestion."""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import get_valid_filename

from apps.common.errors import BadRequest, Conflict, PayloadTooLarge, UnsupportedMediaType
from apps.common.netguard import BlockedURL, check_url
from apps.knowledge.extraction import UnsupportedType, detect_kind
from apps.knowledge.models import DEFAULT_REFRESH_INTERVAL, KnowledgeDocument
from apps.knowledge.services.common import (
    MAX_NAME_LENGTH,
    SourceType,
    Status,
    audit,
    check_interval,
    check_name,
    delete_stored_files,
    enqueue_after_commit,
)
from apps.knowledge.uploads import too_large_message
from apps.workspaces.models import Agent

SUPPORTED_TEXT = (
    "PDF, Word (.docx, .doc), Excel (.xlsx, .xls), PowerPoint (.pptx, .ppt), text, Markdown, "
    "HTML, CSV or JSON"
)


def max_upload_bytes() -> int:
    return settings.KNOWLEDGE_MAX_UPLOAD_BYTES


def _sha256_of(upload: UploadedFile) -> str:
    digest = hashlib.sha256()
    upload.seek(0)
    for piece in upload.chunks():
        digest.update(piece)
    upload.seek(0)
    return digest.hexdigest()


def document_create_from_upload(
    *, agent: Agent, upload: UploadedFile, name: str | None = None
) -> KnowledgeDocument:
    """Store an uploaded file as a new document and queue its ingestion.

    The type comes from the bytes (`detect_kind`), never from the name or the client's
    content type. The file is moved (or streamed) into storage, not copied through memory.
    """
    limit = max_upload_bytes()
    if upload.size is not None and upload.size > limit:
        raise PayloadTooLarge(too_large_message(limit))
    file_name = (upload.name or "").strip() or "upload"
    name = check_name(name) or file_name[:MAX_NAME_LENGTH].strip() or "upload"
    upload.seek(0)
    head = upload.read(limit + 1)  # bounded by the limit checked while streaming
    try:
        kind = detect_kind(head, file_name=file_name)
    except UnsupportedType as exc:
        raise UnsupportedMediaType(
            f"Unsupported file type: {exc.detected}. Upload {SUPPORTED_TEXT}."
        ) from None
    del head
    sha256 = _sha256_of(upload)
    existing = KnowledgeDocument.objects.filter(
        agent=agent, source_type=SourceType.FILE, content_sha256=sha256
    ).first()
    if existing is not None:
        raise _duplicate_file(existing)

    document = KnowledgeDocument(
        agent=agent,
        name=name,
        source_type=SourceType.FILE,
        file_name=file_name[:255],
        file_size_bytes=upload.size,
        content_sha256=sha256,
        kind=kind,
        status=Status.PROCESSING,
        queued_at=timezone.now(),
    )
    stored_name = get_valid_filename(Path(file_name).name)[:100] or "upload"
    document.file.save(stored_name, upload, save=False)
    try:
        with transaction.atomic():
            document.save(force_insert=True)
            audit(
                agent,
                document,
                "document.created",
                {
                    "source_type": SourceType.FILE,
                    "file_name": document.file_name,
                    "file_size_bytes": document.file_size_bytes,
                },
            )
            enqueue_after_commit("ingest", document.pk)
    except IntegrityError:
        delete_stored_files(document)
        existing = KnowledgeDocument.objects.filter(
            agent=agent, source_type=SourceType.FILE, content_sha256=sha256
        ).first()
        if existing is not None:
            raise _duplicate_file(existing) from None
        raise
    except BaseException:
        delete_stored_files(document)
        raise
    return document


def _duplicate_file(existing: KnowledgeDocument) -> Conflict:
    return Conflict(
        f"This file is already uploaded for this Agent as “{existing.name}” ({existing.pk})."
    )


def document_create_from_url(
    *,
    agent: Agent,
    url: str,
    name: str | None = None,
    refresh_interval_hours: int = DEFAULT_REFRESH_INTERVAL,
) -> KnowledgeDocument:
    """Add a public URL as a document and queue its first fetch.

    The network guard normalizes the URL (a bare host becomes https://host/) and refuses
    anything that is not public http(s), including hosts that resolve to private addresses;
    the fetch checks every redirect hop again.
    """
    try:
        normalized, _addresses = check_url(url)
    except BlockedURL as exc:
        raise BadRequest(f"url: {exc}") from None
    name = check_name(name) or normalized[:MAX_NAME_LENGTH]
    interval = check_interval(refresh_interval_hours)
    existing = KnowledgeDocument.objects.filter(
        agent=agent, source_type=SourceType.URL, normalized_url=normalized
    ).first()
    if existing is not None:
        raise _duplicate_url(existing)
    try:
        with transaction.atomic():
            document = KnowledgeDocument.objects.create(
                agent=agent,
                name=name,
                source_type=SourceType.URL,
                source_url=normalized,
                normalized_url=normalized,
                refresh_interval_hours=interval,
                status=Status.PROCESSING,
                queued_at=timezone.now(),
            )
            audit(
                agent,
                document,
                "document.created",
                {
                    "source_type": SourceType.URL,
                    "source_url": normalized,
                    "refresh_interval_hours": interval,
                },
            )
            enqueue_after_commit("ingest", document.pk)
    except IntegrityError:
        existing = KnowledgeDocument.objects.filter(
            agent=agent, source_type=SourceType.URL, normalized_url=normalized
        ).first()
        if existing is not None:
            raise _duplicate_url(existing) from None
        raise
    return document


def _duplicate_url(existing: KnowledgeDocument) -> Conflict:
    return Conflict(
        f"This URL is already a document of this Agent: “{existing.name}” ({existing.pk})."
    )
