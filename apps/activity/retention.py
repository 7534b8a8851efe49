"""Deleting expired activity for the retention policy (apps.retention), in bounded batches.

A conversation is the unit: once its last activity (`updated_at`) is older than the cut-off, it
goes with its messages and runs. A conversation still alive keeps all of its history, so its
transcript and totals never lose a middle. Each statement deletes at most `rows_per_statement`
rows by primary key in its own short transaction: no long lock, and the API keeps serving.
The usage rollup (apps.usage) is a table of its own and is not touched: usage history survives.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from apps.activity.models import Conversation, Message, Run


@dataclass
class Purged:
    conversations: int = 0
    messages: int = 0
    runs: int = 0
    ids: list[str] = field(default_factory=list, repr=False)

    def add(self, other: Purged) -> None:
        self.conversations += other.conversations
        self.messages += other.messages
        self.runs += other.runs


def conversations_purge_batch(
    *,
    agent_ids: list[str],
    before: datetime,
    batch_size: int = 100,
    rows_per_statement: int = 2000,
) -> Purged:
    """Delete up to `batch_size` conversations of these Agents last active before `before`,
    with their messages and runs. An empty result means nothing is left to delete."""
    purged = Purged()
    # conv_agent_updated serves this: each Agent's conversations by last activity.
    expired = list(
        Conversation.objects.filter(agent_id__in=agent_ids, updated_at__lt=before)
        .order_by("updated_at")
        .values_list("agent_id", "id")[:batch_size]
    )
    by_agent: dict[str, list[str]] = defaultdict(list)
    for agent_id, conversation_id in expired:
        by_agent[agent_id].append(conversation_id)
    for agent_id, conversation_ids in by_agent.items():
        for model in (Message, Run):
            # Rows made after the cut-off stay: a conversation revived meanwhile keeps them.
            deleted = _delete_in_statements(
                model.objects.filter(
                    agent_id=agent_id, conversation_id__in=conversation_ids, created_at__lt=before
                ),
                rows_per_statement,
            )
            if model is Message:
                purged.messages += deleted
            else:
                purged.runs += deleted
        purged.conversations += Conversation.objects.filter(
            agent_id=agent_id, id__in=conversation_ids, updated_at__lt=before
        ).delete()[0]
        purged.ids += conversation_ids
    return purged


def _delete_in_statements(queryset, rows_per_statement: int) -> int:
    total = 0
    while True:
        rows = list(queryset.values_list("row", flat=True)[:rows_per_statement])
        if not rows:
            return total
        deleted, _by_model = queryset.model.objects.filter(row__in=rows).delete()
        total += deleted
