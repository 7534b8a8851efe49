"""Migration 0003 (record ids per Agent) keeps every record and link of the previous schema."""

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.activity.models import Conversation, EndUser, Message, Run

BEFORE = [("activity", "0002_run_model_and_error_indexes")]
AFTER = [("activity", "0003_record_ids_per_agent")]
T0 = datetime(2025, 1, 31, 12, 0, tzinfo=UTC)


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _latest():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes("activity")


@pytest.mark.django_db(transaction=True)
def test_records_and_links_survive_the_move_to_per_agent_ids(agent, other_agent):
    old = _migrate(BEFORE)
    try:
        old_user = old.get_model("activity", "EndUser")
        old_conversation = old.get_model("activity", "Conversation")
        old_message = old.get_model("activity", "Message")
        old_run = old.get_model("activity", "Run")
        user = old_user.objects.create(
            id="usr_1", agent_id=agent.pk, display_name="Ada", first_seen_at=T0, last_seen_at=T0
        )
        conversation = old_conversation.objects.create(
            id="conv_1", agent_id=agent.pk, user=user, title="Refund", created_at=T0, updated_at=T0
        )
        old_message.objects.create(
            id="msg_1", agent_id=agent.pk, conversation=conversation, role="user",
            parts=[{"type": "text", "text": "Hi"}], created_at=T0,
        )  # fmt: skip
        old_run.objects.create(
            id="run_1", agent_id=agent.pk, conversation=conversation, user=user,
            request_id="req_1", sdk_version="5", credits_charged=1.5, created_at=T0, updated_at=T0,
        )  # fmt: skip
    finally:
        _migrate(AFTER)
        # The models are today's: read through them once the later migrations ran too.
        _migrate(_latest())

    run = Run.objects.select_related("conversation", "user").get(agent=agent, id="run_1")
    assert (run.conversation.title, run.user.display_name, run.credits_charged) == (
        "Refund",
        "Ada",
        1.5,
    )
    message = Message.objects.get(agent=agent, id="msg_1")
    assert message.conversation_id == "conv_1"
    assert message.parts == [{"type": "text", "text": "Hi"}]
    assert Conversation.objects.get(agent=agent, id="conv_1").user_id == "usr_1"

    # After the move, another workspace's Agent may use the very same ids.
    twin = EndUser.objects.create(id="usr_1", agent=other_agent, first_seen_at=T0, last_seen_at=T0)
    assert twin.row != EndUser.objects.get(agent=agent, id="usr_1").row


@pytest.mark.skipif(connection.vendor != "postgresql", reason="composite keys are PostgreSQL's")
@pytest.mark.django_db(transaction=True)
def test_postgresql_keeps_links_whole_with_composite_foreign_keys(agent):
    from django.db import IntegrityError, transaction

    conversation = Conversation.objects.create(
        agent=agent, id="conv_1", created_at=T0, updated_at=T0
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        Run.objects.create(
            agent=agent, conversation_id="conv_missing", request_id="r", sdk_version="5",
            created_at=T0, updated_at=T0,
        )  # fmt: skip
        connection.check_constraints()
    Run.objects.create(
        agent=agent, conversation=conversation, request_id="r", sdk_version="5",
        created_at=T0, updated_at=T0,
    )  # fmt: skip
    assert Run.objects.filter(agent=agent, conversation_id="conv_1").count() == 1
