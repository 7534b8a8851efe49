"""Announcements of new scores, so other apps can react without scores knowing them.

Webhooks listens (an outbox row per `score.created` for a subscribed Agent). Listeners run
inside the transaction that wrote the scores and do no network I/O. Only scores that did not
exist before are announced: sending the same batch twice announces nothing the second time.
"""

from dataclasses import dataclass

from apps.common.events import Announcement
from apps.scores.models import Score


@dataclass(frozen=True)
class ScoresCreated:
    agent_id: str
    scores: list[Score]


scores_created: Announcement[ScoresCreated] = Announcement()
on_scores_created = scores_created.listen
