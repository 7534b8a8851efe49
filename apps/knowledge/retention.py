"""Pruning knowledge content versions that no document points at (apps.retention).

A refresh replaces a document's version and deletes the old one in the same transaction
(pipeline.document_refresh), so a superseded version is left only by an interruption or by
older code; this is the safety net, in bounded batches. A version has no file of its own
(uploaded files belong to the document and go with it, services.document_delete).
"""

from __future__ import annotations

from apps.knowledge.models import KnowledgeContentVersion, KnowledgeDocument
from apps.knowledge.search.fts import unindex_chunks


def versions_prune_superseded(*, batch_size: int = 50) -> int:
    """Delete up to `batch_size` versions that are no document's current one; return how many.

    A new version becomes current in the transaction that writes it, so a version another
    transaction can see and that is not current is superseded for good."""
    current = KnowledgeDocument.objects.filter(current_version__isnull=False).values(
        "current_version_id"
    )
    superseded = list(
        KnowledgeContentVersion.objects.exclude(pk__in=current)
        .order_by("created_at")
        .values_list("pk", flat=True)[:batch_size]
    )
    if not superseded:
        return 0
    unindex_chunks(version_ids=superseded)
    KnowledgeContentVersion.objects.filter(pk__in=superseded).exclude(pk__in=current).delete()
    return len(superseded)
