"""The recording service: upserts by id, idempotency, references and run transitions."""

from datetime import UTC, datetime, timedelta

import pytest

from apps.activity.models import Conversation, EndUser, Message, Run
from apps.activity.records import record_parse, records_parse
from apps.activity.services import RecordResult, activity_record
from apps.common.errors import BadRequest
from tests.activity.factories import conversation_factory, end_user_factory, run_factory

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 1, 31, 12, 0, tzinfo=UTC)


def record(agent, *raw):
    return activity_record(agent=agent, records=records_parse(list(raw)))


def base_records():
    return [
        {"type": "user", "id": "usr_1", "external_id": "ext-1", "identity_type": "user",
         "display_name": "Ada", "email": "ada@example.com", "last_seen_at": "2025-01-31T12:00:00Z"},
        {"type": "conversation", "id": "conv_1", "user_id": "usr_1", "title": "Refund",
         "source": "embed", "status": "streaming", "created_at": "2025-01-31T12:00:00Z"},
        {"type": "message", "id": "msg_1", "conversation_id": "conv_1", "role": "user",
         "parts": [{"type": "text", "text": "Hi"}], "created_at": "2025-01-31T12:00:01Z"},
        {"type": "run", "id": "run_1", "conversation_id": "conv_1", "request_id": "req_1",
         "sdk_version": "5.0.0", "protocol_version": 1, "created_at": "2025-01-31T12:00:01Z"},
    ]  # fmt: skip


@pytest.mark.smoke
def test_records_create_rows_then_the_same_records_change_nothing(agent):
    result = record(agent, *base_records())
    assert result.as_dict() == {
        "object": "ingest_result", "created": 4, "updated": 0, "unchanged": 0,
    }  # fmt: skip
    run = Run.objects.get(id="run_1")
    assert run.status == "streaming"
    assert run.user_id == "usr_1"  # taken from the conversation
    assert Message.objects.get(id="msg_1").parts == [{"type": "text", "text": "Hi"}]
    before = {m.__name__: list(m.objects.values()) for m in (EndUser, Conversation, Message, Run)}

    again = record(agent, *base_records())

    assert again.as_dict()["unchanged"] == 4
    after = {m.__name__: list(m.objects.values()) for m in (EndUser, Conversation, Message, Run)}
    assert after == before


def test_user_upsert_by_external_id_updates_profile_and_moves_last_seen_forward(agent):
    user = end_user_factory(
        agent=agent, external_id="ext-9", display_name="Old", last_seen_at=T0, first_seen_at=T0
    )
    result = record(
        agent,
        {"type": "user", "external_id": "ext-9", "display_name": "New", "identity_type": "user",
         "email": "new@example.com", "avatar_url": "https://img.example/a.png",
         "last_seen_at": "2025-02-01T00:00:00Z"},
    )  # fmt: skip
    assert result.updated == 1
    user.refresh_from_db()
    assert (user.display_name, user.email) == ("New", "new@example.com")
    assert user.avatar_url == "https://img.example/a.png"
    assert user.last_seen_at == datetime(2025, 2, 1, tzinfo=UTC)
    record(agent, {"type": "user", "external_id": "ext-9", "last_seen_at": "2025-01-01T00:00:00Z"})
    user.refresh_from_db()
    assert user.last_seen_at == datetime(2025, 2, 1, tzinfo=UTC)
    assert user.first_seen_at == datetime(2025, 1, 1, tzinfo=UTC)
    assert EndUser.objects.filter(agent=agent).count() == 1


def test_user_without_id_gets_a_prefixed_id(agent):
    record(agent, {"type": "user", "external_id": "abc"})
    user = EndUser.objects.get(agent=agent, external_id="abc")
    assert user.id.startswith("usr_")
    assert user.identity_type == "unknown"


def test_external_id_of_another_user_is_bad_request(agent):
    end_user_factory(agent=agent, id="usr_a", external_id="shared")
    with pytest.raises(BadRequest, match=r"records\[0\]\.external_id"):
        record(agent, {"type": "user", "id": "usr_b", "external_id": "shared"})


def test_run_streaming_to_completed_updates_usage(agent):
    record(agent, *base_records())
    result = record(
        agent,
        {"type": "run", "id": "run_1", "status": "completed", "input_tokens": 10,
         "output_tokens": 5, "total_tokens": 15, "credits_charged": 0.5,
         "tool_names": ["search"], "completed_at": "2025-01-31T12:00:04Z",
         "total_turn_latency_ms": 3000},
    )  # fmt: skip
    assert result.updated == 1
    run = Run.objects.get(id="run_1")
    assert run.status == "completed"
    assert (run.total_tokens, run.credits_charged, run.tool_names) == (15, 0.5, ["search"])
    assert run.total_turn_latency_ms == 3000.0


@pytest.mark.parametrize("new_status", ["streaming", "failed"])
def test_ended_run_cannot_change_status(agent, new_status):
    run = run_factory(agent=agent, id="run_done", status="completed")
    with pytest.raises(BadRequest, match=r"records\[0\]\.status.*already ended"):
        record(agent, {"type": "run", "id": run.id, "status": new_status})
    run.refresh_from_db()
    assert run.status == "completed"


def test_a_bad_record_keeps_nothing_of_the_request(agent):
    records = base_records()
    records.append({"type": "run", "id": "run_2", "conversation_id": "conv_missing",
                    "request_id": "r", "sdk_version": "5"})  # fmt: skip
    with pytest.raises(BadRequest, match=r"records\[4\]\.conversation_id"):
        record(agent, *records)
    assert not EndUser.objects.exists()
    assert not Conversation.objects.exists()
    assert not Run.objects.exists()


def test_unknown_user_reference_is_bad_request(agent):
    with pytest.raises(BadRequest, match=r"records\[0\]\.user_id"):
        record(agent, {"type": "conversation", "id": "c", "user_id": "usr_nobody"})


def test_reference_to_another_agents_conversation_is_bad_request(agent, other_agent):
    theirs = conversation_factory(agent=other_agent)
    with pytest.raises(BadRequest, match="no conversation"):
        record(agent, {"type": "message", "conversation_id": theirs.id, "role": "user"})


def test_an_id_used_by_another_agent_is_recorded_as_if_unused(agent, other_agent):
    """Ids are per Agent: recording reveals nothing about another workspace's records."""
    mine = record(agent, *base_records())
    theirs = record(other_agent, *base_records())
    assert mine == theirs == RecordResult(created=4)
    for model in (EndUser, Conversation, Message, Run):
        assert set(model.objects.values_list("agent_id", flat=True)) == {agent.pk, other_agent.pk}
    run = Run.objects.get(agent=other_agent, id="run_1")
    assert (run.conversation.agent_id, run.user.agent_id) == (other_agent.pk, other_agent.pk)


def test_new_run_needs_its_required_fields(agent):
    conversation = conversation_factory(agent=agent)
    with pytest.raises(BadRequest, match=r"records\[0\]\.request_id: required"):
        record(agent, {"type": "run", "conversation_id": conversation.id, "sdk_version": "5"})


def test_message_cannot_move_to_another_conversation(agent):
    record(agent, *base_records())
    other = conversation_factory(agent=agent)
    with pytest.raises(BadRequest, match="cannot move"):
        record(agent, {"type": "message", "id": "msg_1", "conversation_id": other.id})


def test_conversation_update_without_timestamp_moves_updated_at(agent):
    conversation = conversation_factory(agent=agent, updated_at=T0, status="streaming")
    record(agent, {"type": "conversation", "id": conversation.id, "status": "completed"})
    conversation.refresh_from_db()
    assert conversation.status == "completed"
    assert conversation.updated_at > T0 + timedelta(days=1)


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ({"type": "run", "input_tokens": "12"}, "records[3].input_tokens"),
        ({"type": "run", "input_tokens": -1}, "records[3].input_tokens"),
        ({"type": "run", "input_tokens": True}, "records[3].input_tokens"),
        ({"type": "run", "credits_charged": "1.0"}, "records[3].credits_charged"),
        ({"type": "run", "status": "done"}, "records[3].status"),
        ({"type": "run", "tool_names": "search"}, "records[3].tool_names"),
        ({"type": "run", "tool_names": ["ok", 3]}, "records[3].tool_names[1]"),
        ({"type": "run", "created_at": "yesterday"}, "records[3].created_at"),
        ({"type": "run", "surprise": 1}, "records[3].surprise"),
        ({"type": "message", "parts": {"type": "text"}}, "records[3].parts"),
        ({"type": "user", "email": "not-an-email"}, "records[3].email"),
        ({"type": "user", "avatar_url": "javascript:alert(1)"}, "records[3].avatar_url"),
        ({"type": "user", "id": "bad id!"}, "records[3].id"),
        ({"type": "alien"}, "records[3].type"),
        ({"type": "conversation", "object": "conversation"}, "records[3].object"),
    ],
)
def test_invalid_field_is_named_with_its_record_index(raw, where):
    with pytest.raises(BadRequest) as caught:
        record_parse(raw, label="records[3]")
    assert caught.value.message.startswith(f"{where}:"), caught.value.message


def test_body_must_be_a_non_empty_array():
    for body in ({"type": "user"}, [], "x"):
        with pytest.raises(BadRequest):
            records_parse(body)
