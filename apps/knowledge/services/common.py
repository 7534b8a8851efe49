"""What every change to a document shares: its audit entry, its task queued after commit, the
checks of a name and a refresh interval, its next refresh, and the removal of its stored files.
"""

from __future__ import annotations

import logging
import shutil
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction

from apps.common.errors import BadRequest
from apps.knowledge.models import KnowledgeDocument
from apps.workspaces.audit import audit_record
from apps.workspaces.models import Agent

logger = logging.getLogger(__name__)

MAX_NAME_LENGTH = 120

Status = KnowledgeDocument.Status
RefreshStatus = KnowledgeDocument.RefreshStatus
SourceType = KnowledgeDocument.SourceType


def audit(
    agent: Agent, document: KnowledgeDocument, action: str, changes: dict | None = None
) -> None:
    """One audit entry about `document` (apps.workspaces.audit), in the caller's transaction."""
    audit_record(
        workspace_id=agent.workspace_id,
        agent_id=agent.pk,
        action=action,
        target_type="document",
        target_id=document.pk,
        target_name=document.name,
        changes=changes,
    )


def enqueue_after_commit(task_name: str, document_id: str) -> None:
    """Queue a knowledge task once the current transaction commits.

    A broker that is down is logged, not raised: the row's `queued_at` is cleared, which the
    `knowledge.recover_stalled` sweep (every few seconds) takes as "queue it now", so nothing is
    lost and nothing waits longer than the broker's outage plus one sweep.
    """

    def send() -> None:
        from apps.knowledge import tasks

        task = {"ingest": tasks.ingest, "refresh": tasks.refresh, "embed": tasks.embed}[task_name]
        try:
            task.apply_async(args=[document_id], retry=False)
        except Exception as exc:
            logger.warning(
                "could not queue knowledge.%s for %s (%r); recover_stalled will queue it",
                task_name,
                document_id,
                exc,
            )
            # No queued task exists: mark it for the sweeper's next run instead of letting it
            # wait out the grace period meant for tasks the broker lost after accepting them.
            KnowledgeDocument.objects.filter(pk=document_id, claimed_until__isnull=True).update(
                queued_at=None
            )

    transaction.on_commit(send)


def check_name(name: str | None) -> str | None:
    if name is None:
        return None
    name = name.strip()
    if not 1 <= len(name) <= MAX_NAME_LENGTH:
        raise BadRequest(f"name: must be 1 to {MAX_NAME_LENGTH} characters long.")
    return name


def check_interval(hours: int) -> int:
    from apps.knowledge.models import REFRESH_INTERVALS

    if isinstance(hours, bool) or hours not in REFRESH_INTERVALS:
        raise BadRequest(
            "refresh_interval_hours: must be one of " + ", ".join(map(str, REFRESH_INTERVALS)) + "."
        )
    return hours


def next_refresh_time(document: KnowledgeDocument, *, base=None):
    """When a URL document's scheduled refresh is due; None when it has none."""
    hours = document.refresh_interval_hours
    base = base or document.last_checked_at
    if document.source_type != SourceType.URL or not hours or base is None:
        return None
    return base + timedelta(hours=hours)


def delete_stored_files(document: KnowledgeDocument) -> None:
    """Remove the document's folder under MEDIA_ROOT (its file and anything else in it)."""
    if not document.file:
        return
    try:
        path = Path(document.file.path)
    except (ValueError, NotImplementedError):
        document.file.delete(save=False)
        return
    folder = path.parent
    media_root = Path(settings.MEDIA_ROOT).resolve()
    if folder.resolve().is_relative_to(media_root / "knowledge") and folder.name == document.pk:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
