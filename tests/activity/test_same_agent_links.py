"""Links between records stay inside one Agent, whatever the Python code assigns."""

from datetime import UTC, datetime

import pytest

from apps.activity.models import Conversation, Run
from tests.activity.factories import conversation_factory, end_user_factory

pytestmark = pytest.mark.django_db
T0 = datetime(2025, 1, 31, 12, 0, tzinfo=UTC)


def test_unlinking_a_user_keeps_the_records_agent(agent):
    conversation = conversation_factory(agent=agent, user=end_user_factory(agent=agent))
    conversation.user = None
    conversation.save()
    conversation.refresh_from_db()
    assert (conversation.agent_id, conversation.user_id) == (agent.pk, None)


def test_a_record_cannot_be_linked_to_another_agents_record(agent, other_agent):
    theirs = conversation_factory(agent=other_agent)
    with pytest.raises(ValueError, match="its own Agent"):
        Run(agent=agent, conversation=theirs, request_id="r", sdk_version="5")


def test_a_link_follows_the_agent_and_the_id_together(agent, other_agent):
    for owner, title in ((agent, "Mine"), (other_agent, "Theirs")):
        Conversation.objects.create(
            agent=owner, id="conv_same", title=title, created_at=T0, updated_at=T0
        )
    run = Run.objects.create(
        agent=other_agent, conversation_id="conv_same", request_id="r", sdk_version="5",
        created_at=T0, updated_at=T0,
    )  # fmt: skip
    assert Run.objects.get(row=run.row).conversation.title == "Theirs"
    assert [r.row for r in Run.objects.filter(conversation__title="Mine")] == []
