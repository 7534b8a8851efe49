"""Deleting scores for the retention policy (apps.retention), in bounded batches.

A score judges activity, so it is kept as long as that activity and never longer than the
workspace keeps activity: once it is older than the cut-off and its conversation is gone (expired
with its messages and runs, apps.activity.retention), it goes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Exists, OuterRef, Q

from apps.activity.events import EndUserDataDeleted
from apps.activity.models import Conversation
from apps.scores.models import Score


@dataclass
class ScoresPurged:
    scores: int = 0
    # Where the next batch of the same pass starts.
    resume_at: datetime | None = None

    def __bool__(self) -> bool:
        return bool(self.scores)


def scores_purge_batch(
    *,
    agent_id: str,
    before: datetime,
    batch_size: int = 1000,
    resume_at: datetime | None = None,
) -> ScoresPurged:
    """Delete up to `batch_size` of the Agent's expired scores, oldest first, in one
    transaction; an empty result (false) means nothing is left to delete."""
    conversation_kept = Exists(
        Conversation.objects.filter(agent_id=OuterRef("agent_id"), id=OuterRef("conversation_id"))
    )
    expired = Score.objects.filter(agent_id=agent_id, created_at__lt=before)
    if resume_at is not None:
        expired = expired.filter(created_at__gte=resume_at)
    with transaction.atomic():
        picked = list(
            expired.exclude(conversation_kept)
            .order_by("created_at", "id")
            .values_list("row", "created_at")[:batch_size]
        )
        if not picked:
            return ScoresPurged()
        deleted = Score.objects.filter(row__in=[row for row, _at in picked])._raw_delete(
            Score.objects.db
        )
    return ScoresPurged(scores=deleted, resume_at=picked[-1][1])


def scores_delete_on_end_user_data_deleted(event: EndUserDataDeleted) -> None:
    """An end user's data deleted on request (apps.activity.erasure): their own feedback, and
    every score on the conversations and runs going with them, in the same transaction."""
    Score.objects.filter(agent_id=event.agent_id).filter(
        Q(end_user_id=event.user_id)
        | Q(conversation_id__in=event.conversation_ids)
        | Q(run_id__in=event.run_ids)
    ).delete()
