"""Announcements of new scores, so other apps can react without scores knowing them.

Webhooks listens (an outbox row per `score.created` for a subscribed Agent). Listeners run
inside the transaction that wrote the scores and do no network I/O. Only scores that did not
exist before are announced: sending the same batch twice announces nothing the second time.
"""

from dataclasses import dataclass
from datetime import datetime

from apps.common.events import Announcement
from apps.common.time import iso
from apps.scores.models import FEEDBACK_NAME


@dataclass(frozen=True)
class ScoresCreated:
    """New scores, as the API shows them (`score.created`'s data): rendered once, for the
    answer and for whoever listens."""

    agent_id: str
    data: list[dict]


scores_created: Announcement[ScoresCreated] = Announcement()
on_scores_created = scores_created.listen


@dataclass(frozen=True)
class RunFeedbackChanged:
    """An end user's thumbs on a message of the run was given, changed or withdrawn; `negative`
    says whether the run now has any thumbs down. Knowledge listens: the questions of a disliked
    run that used retrieval join the Unanswered questions (apps.knowledge.gaps.feedback)."""

    agent_id: str
    run_id: str
    negative: bool


run_feedback_changed: Announcement[RunFeedbackChanged] = Announcement()
on_run_feedback_changed = run_feedback_changed.listen


def score_example(*, now: datetime) -> dict:
    """The `data` of a `score.created` event, for a webhook's test send (no row is written)."""
    return {
        "object": "score",
        "id": "score_example",
        "target_type": "message",
        "run_id": "run_example",
        "step_id": None,
        "conversation_id": "conv_example",
        "message_id": "msg_example",
        "name": FEEDBACK_NAME,
        "data_type": "boolean",
        "value": False,
        "comment": "This is a test event.",
        "source": "end_user",
        "author_type": "end_user",
        "author_id": "usr_example",
        "created_at": iso(now),
        "updated_at": iso(now),
    }
