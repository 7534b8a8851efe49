"""End users' feedback (thumbs up or down through their browser tokens) and deleting scores.

Whatever changes a run's end-user feedback — a vote given, changed or withdrawn, a feedback
score deleted over the API or in the console, one or in bulk — announces `RunFeedbackChanged`
for that run in the same transaction, so what follows from a thumbs down (the Unanswered
questions, apps.knowledge.gaps.feedback) never disagrees with the scores.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.activity.models import Message
from apps.common.errors import BadRequest, Conflict, NotFound
from apps.scores.events import (
    RunFeedbackChanged,
    ScoresCreated,
    run_feedback_changed,
    scores_created,
)
from apps.scores.models import (
    FEEDBACK_NAME,
    ID_MAX_LENGTH,
    DataType,
    Score,
    Source,
    TargetType,
)
from apps.scores.rendering import score_to_dict
from apps.scores.services.parsing import MAX_BATCH
from apps.workspaces.audit import audit_record
from apps.workspaces.models import Agent


def _feedback_runs(scores) -> set[str]:
    """The runs whose end-user feedback is among `scores` (a queryset about to be deleted)."""
    return set(
        scores.filter(name=FEEDBACK_NAME, source=Source.END_USER, run_id__isnull=False)
        .values_list("run_id", flat=True)
        .distinct()
    )


def score_delete(*, agent: Agent, score_id: str) -> None:
    """One score removed over the API or the console; recorded like the bulk delete (who
    removed a judgement is worth knowing)."""
    with transaction.atomic():
        scores = Score.objects.filter(agent=agent, id=score_id)
        runs = _feedback_runs(scores)
        deleted, _ = scores.delete()
        if not deleted:
            raise NotFound(f"No score {score_id!r} of this Agent.")
        runs_feedback_announce(agent_id=agent.pk, run_ids=runs)
        audit_record(
            workspace_id=agent.workspace_id,
            agent_id=agent.pk,
            action="score.deleted",
            target_type="score",
            target_id=score_id,
            target_name=score_id,
            changes={"count": 1},
        )


def scores_delete(*, agent: Agent, score_ids: list[str]) -> int:
    """The console's bulk delete: the Agent's scores among `score_ids` (others are ignored)."""
    with transaction.atomic():
        scores = Score.objects.filter(agent=agent, id__in=score_ids[:MAX_BATCH])
        runs = _feedback_runs(scores)
        deleted, _ = scores.delete()
        if deleted:
            runs_feedback_announce(agent_id=agent.pk, run_ids=runs)
            audit_record(
                workspace_id=agent.workspace_id,
                agent_id=agent.pk,
                action="score.deleted",
                target_type="score",
                target_name=f"{deleted} score(s)",
                changes={"count": deleted},
            )
    return deleted


def feedback_give(
    *, agent: Agent, end_user_id: str, message_id: str, value: bool, comment: str | None
) -> tuple[Score, bool]:
    """An end user's thumbs up (true) or down on an assistant message of one of their own
    conversations: one per message and user, a new vote replaces the previous one. Another
    user's message, a user's own message, another Agent's: not found, nothing written.
    Returns the score and whether it is new."""
    message = (
        Message.objects.filter(agent=agent, id=message_id)
        .select_related("conversation")
        .only("id", "role", "run_id", "conversation_id", "conversation__user_id")
        .first()
        if 0 < len(message_id) <= ID_MAX_LENGTH and "\x00" not in message_id
        else None
    )
    if message is None or message.conversation.user_id != end_user_id:
        raise NotFound("No such message in your conversations.")
    if message.role != Message.Role.ASSISTANT:
        raise BadRequest("Feedback is given on the assistant's messages only.")
    now = timezone.now()
    for _attempt in (1, 2):
        try:
            with transaction.atomic():
                existing = (
                    Score.objects.select_for_update()
                    .filter(
                        agent=agent,
                        message_id=message.id,
                        end_user_id=end_user_id,
                        name=FEEDBACK_NAME,
                        source=Source.END_USER,
                    )
                    .first()
                )
                if existing is not None:
                    existing.boolean_value = value
                    existing.comment = comment or None
                    existing.updated_at = now
                    existing.save(update_fields=["boolean_value", "comment", "updated_at"])
                    runs_feedback_announce(agent_id=agent.pk, run_ids={existing.run_id})
                    return existing, False
                score = Score.objects.create(
                    agent=agent,
                    target_type=TargetType.MESSAGE,
                    message_id=message.id,
                    conversation_id=message.conversation_id,
                    run_id=message.run_id,
                    name=FEEDBACK_NAME,
                    data_type=DataType.BOOLEAN,
                    boolean_value=value,
                    comment=comment or None,
                    source=Source.END_USER,
                    end_user_id=end_user_id,
                    created_at=now,
                    updated_at=now,
                )
                scores_created.announce(
                    ScoresCreated(agent_id=agent.pk, data=[score_to_dict(score)])
                )
                runs_feedback_announce(agent_id=agent.pk, run_ids={score.run_id})
                return score, True
        except IntegrityError:  # the same user's other tab voted first: update that one
            continue
    raise Conflict("Your feedback changed concurrently; send it again.")


def feedback_withdraw(*, agent: Agent, end_user_id: str, message_id: str) -> None:
    with transaction.atomic():
        mine = Score.objects.filter(
            agent=agent,
            message_id=message_id,
            end_user_id=end_user_id,
            name=FEEDBACK_NAME,
            source=Source.END_USER,
        )
        run_ids = set(mine.values_list("run_id", flat=True))
        deleted, _ = mine.delete()
        if not deleted:
            raise NotFound("No feedback of yours on this message.")
        runs_feedback_announce(agent_id=agent.pk, run_ids=run_ids)


def runs_feedback_announce(*, agent_id: str, run_ids: Iterable[str | None]) -> None:
    """Tell listeners, per run, whether it now has any end user's thumbs down (in the
    transaction that gave, changed, withdrew or deleted feedback on it): one query for all."""
    runs = {run_id for run_id in run_ids if run_id is not None}
    if not runs:
        return
    negative = set(
        Score.objects.filter(
            agent_id=agent_id,
            run_id__in=runs,
            name=FEEDBACK_NAME,
            source=Source.END_USER,
            boolean_value=False,
        ).values_list("run_id", flat=True)
    )
    for run_id in sorted(runs):
        run_feedback_changed.announce(
            RunFeedbackChanged(agent_id=agent_id, run_id=run_id, negative=run_id in negative)
        )
