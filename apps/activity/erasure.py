"""Deleting an end user's data on request (a GDPR erasure): the console's Users bulk action.

One transaction per user: the user's conversations with their messages, every run of the user
or in those conversations with its steps, what other apps keep about them (scores and feedback,
webhook payloads: they listen to `EndUserDataDeleted`), and the user record itself. Each table
is one DELETE over a subquery of ids, so a user with many runs is a handful of statements. The
usage rollup keeps its anonymous totals; the analytics and Overview rollup loses the runs. The deletion is audited (`end_user.data_deleted`, with
the counts; the user's id only, never their name or email).
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q

from apps.activity import analytics, events
from apps.activity.models import Conversation, EndUser, Message, Run, RunStep
from apps.common.errors import NotFound
from apps.workspaces.audit import audit_record
from apps.workspaces.models import Agent


def end_user_data_delete(*, agent: Agent, user_id: str) -> dict[str, int]:
    """Delete `user_id`'s data and record it in the audit log; the counts deleted.
    NotFound when the Agent has no such user (deleted already, or another Agent's)."""
    with transaction.atomic():
        user = EndUser.objects.select_for_update().filter(agent=agent, id=user_id).first()
        if user is None:
            raise NotFound(f"No user {user_id!r} for this Agent: deleted already?")
        conversations = Conversation.objects.filter(agent=agent, user_id=user_id)
        conversation_ids = conversations.values("id")
        run_ids = (
            Run.objects.filter(agent=agent)
            .filter(Q(user_id=user_id) | Q(conversation_id__in=conversation_ids))
            .values("id")
        )
        events.end_user_data_deleted.announce(
            events.EndUserDataDeleted(
                agent_id=agent.pk,
                user_id=user_id,
                conversation_ids=conversation_ids,
                run_ids=run_ids,
            )
        )
        # The analytics and Overview rollup show the activity kept, as after a retention purge
        # (the usage rollup keeps its anonymous totals: billing history).
        analytics.rows_deleted(agent.pk, Run.objects.filter(agent=agent, id__in=run_ids))
        RunStep.objects.filter(agent=agent, run_id__in=run_ids).delete()
        messages = Message.objects.filter(agent=agent).filter(
            Q(conversation_id__in=conversation_ids) | Q(run_id__in=run_ids)
        )
        counts = {"messages": messages.delete()[0]}
        # Two statements, each on its index (run_agent_user, run_agent_conv), while the
        # conversations the second reads are still there.
        counts["runs"] = Run.objects.filter(agent=agent, user_id=user_id).delete()[0]
        counts["runs"] += Run.objects.filter(
            agent=agent, conversation_id__in=conversation_ids
        ).delete()[0]
        counts["conversations"] = conversations.delete()[0]
        EndUser.objects.filter(pk=user.pk).delete()
        audit_record(
            workspace_id=agent.workspace_id,
            agent_id=agent.pk,
            action="end_user.data_deleted",
            target_type="end_user",
            target_id=user_id,
            changes=counts,
        )
    return counts
