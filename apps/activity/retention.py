"""Deleting expired activity for the retention policy (apps.retention), in bounded batches.

A conversation is the unit: it expires once its last activity is older than the cut-off — its
own `updated_at`, and the `created_at` of its newest message and run (a runtime may record a
message into a conversation without touching the conversation itself). An expired conversation
goes with all of its messages and runs (and the runs' steps, by the database's cascade); one
still alive keeps all of its history, so its transcript and totals never lose a middle.

Each batch is one short transaction of a few statements whatever its size: pick up to
`batch_size` expired conversations of one Agent (an index range of `conv_agent_updated`, oldest
first, their rows locked so that recording into one of them waits and then finds it gone), and
delete their messages, their runs and themselves, each table in one statement on the index the
lists already use (`msg_conv_created`, `run_agent_conv`). Locks are row locks on expired rows
only; the API keeps serving. The usage rollup (apps.usage) is a table of its own and is not
touched: usage history survives. The analytics rollup, which the Overview and the Performance
page read, describes the activity kept: the deleted runs' and steps' contributions are taken
away from it in the same transaction (apps.activity.analytics.rows_deleted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.db.models import Exists, OuterRef

from apps.activity import analytics
from apps.activity.models import Conversation, Message, Run


@dataclass
class Purged:
    conversations: int = 0
    messages: int = 0
    runs: int = 0
    # The conversations this batch deleted, and the last activity of the newest of them: the
    # next batch of the same pass starts there (what lies before it is gone or still alive).
    ids: list[str] = field(default_factory=list, repr=False)
    resume_at: datetime | None = field(default=None, repr=False)

    def add(self, other: Purged) -> None:
        self.conversations += other.conversations
        self.messages += other.messages
        self.runs += other.runs

    def __bool__(self) -> bool:
        return bool(self.ids)

    def counts(self) -> dict[str, int]:
        return {"conversations": self.conversations, "messages": self.messages, "runs": self.runs}


def _active_since(model: type[Message] | type[Run], before: datetime) -> Exists:
    """The conversation has a row of `model` made at or after the cut-off."""
    return Exists(
        model.objects.filter(
            agent_id=OuterRef("agent_id"), conversation_id=OuterRef("id"), created_at__gte=before
        )
    )


def conversations_purge_batch(
    *,
    agent_id: str,
    before: datetime,
    batch_size: int = 500,
    resume_at: datetime | None = None,
) -> Purged:
    """Delete up to `batch_size` of the Agent's conversations whose last activity is older than
    `before`, with their messages and runs, in one transaction. `resume_at` is the previous
    batch's (None for the first); an empty result (false) means nothing is left to delete."""
    expired = Conversation.objects.filter(agent_id=agent_id, updated_at__lt=before)
    if resume_at is not None:
        expired = expired.filter(updated_at__gte=resume_at)
    with transaction.atomic():
        # Locked rows are being recorded into right now: skipped, the next pass sees them again.
        picked = list(
            expired.exclude(_active_since(Message, before))
            .exclude(_active_since(Run, before))
            .order_by("updated_at", "id")
            .select_for_update(skip_locked=True)
            .values_list("row", "id", "updated_at")[:batch_size]
        )
        if not picked:
            return Purged()
        ids = [conversation_id for _row, conversation_id, _at in picked]
        # One DELETE per table (Django's fast delete: no reverse links it cascades itself).
        messages = Message.objects.filter(agent_id=agent_id, conversation_id__in=ids).delete()[0]
        doomed = Run.objects.filter(agent_id=agent_id, conversation_id__in=ids)
        # The analytics and Overview rollups count the rows kept: take these runs and their
        # steps away from them first (the usage rollup keeps its history).
        analytics.rows_deleted(agent_id, doomed)
        runs = doomed.delete()[0]
        conversations = Conversation.objects.filter(
            row__in=[row for row, _id, _at in picked]
        ).delete()[0]
    return Purged(
        conversations=conversations,
        messages=messages,
        runs=runs,
        ids=ids,
        resume_at=picked[-1][2],
    )
