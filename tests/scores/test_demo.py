"""The demo's scores: feedback on answers of the demo's own users, checks on runs, configs."""

import pytest

from apps.activity.demo import activity_seed_demo
from apps.activity.models import Conversation, Message
from apps.scores.demo import scores_seed_demo
from apps.scores.models import Score, ScoreConfig

pytestmark = pytest.mark.django_db


def test_the_demo_has_feedback_and_checks_once(agent):
    activity_seed_demo(agent=agent)
    made = scores_seed_demo(agent=agent)
    assert made > 0
    feedback = Score.objects.filter(agent=agent, name="user_feedback", source="end_user")
    assert feedback.filter(boolean_value=False).exists()
    assert feedback.filter(boolean_value=True).exists()
    for score in feedback[:50]:
        message = Message.objects.get(agent=agent, id=score.message_id)
        assert message.role == "assistant"
        owner = Conversation.objects.get(agent=agent, id=score.conversation_id).user_id
        assert score.end_user_id == owner
    assert set(ScoreConfig.objects.filter(agent=agent).values_list("name", flat=True)) == {
        "correctness",
        "grounded",
    }
    assert scores_seed_demo(agent=agent) == 0
