"""The /v1 lists on PostgreSQL build their pages from rows PostgreSQL has already formatted
(issue 14, apps.common.shapes): every item must come out exactly as the model path writes it
(GET of the one object), whatever its timestamps and JSON hold, and paging must stay exact to
the microsecond."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from apps.activity.models import Message
from apps.activity.rendering import message_to_dict
from tests.activity.factories import (
    conversation_factory,
    end_user_factory,
    message_factory,
    run_factory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("the fast path is PostgreSQL's; SQLite lists through the models")


def test_list_items_are_exactly_the_retrieved_runs(api, agent):
    conversation = conversation_factory(agent=agent)
    base = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    cases = [
        # microseconds that truncate (not round) to milliseconds, a whole second, None times
        {"created_at": base.replace(microsecond=999_999), "first_chunk_at": None,
         "completed_at": None, "total_turn_latency_ms": None},
        {"created_at": base.replace(microsecond=0), "first_chunk_at": base,
         "completed_at": base + timedelta(seconds=2)},
        {"created_at": base.replace(microsecond=1), "tool_names": ["search", 'fetch "x"'],
         "failed_tool_names": ["fetch"], "component_kinds": ["chart", "ü"], "error_code": "E1",
         "status": "failed", "credits_charged": 0.1 + 0.2, "effort": "high"},
        {"created_at": datetime(999, 1, 2, 3, 4, 5, 6000, tzinfo=UTC), "user_id": None},
    ]  # fmt: skip
    for fields in cases:
        run_factory(conversation=conversation, **fields)

    listed = api.get("/v1/runs?limit=100")
    assert listed.status == 200
    items = listed.json()["data"]
    assert len(items) == len(cases)
    for item in items:
        assert item == api.get(f"/v1/runs/{item['id']}").json()
    created = [item["created_at"] for item in items]
    assert created[0] == "2026-03-01T12:00:00.999Z"  # truncated, newest first
    assert "0999-01-02T03:04:05.006Z" in created


def test_paging_is_exact_across_runs_a_microsecond_apart(api, agent):
    conversation = conversation_factory(agent=agent)
    base = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    made = [
        run_factory(conversation=conversation, created_at=base + timedelta(microseconds=n % 3))
        for n in range(7)
    ]
    seen, cursor = [], None
    while True:
        answer = api.get("/v1/runs?limit=2" + (f"&after={cursor}" if cursor else ""))
        body = answer.json()
        seen += [item["id"] for item in body["data"]]
        if not body["has_more"]:
            break
        cursor = body["next_cursor"]
    assert sorted(seen) == sorted(run.id for run in made) and len(seen) == len(set(seen))


def test_users_conversations_and_messages_too(api, agent):
    base = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    quiet = end_user_factory(agent=agent, display_name="Zoë «Q»", email=None)
    talk = conversation_factory(agent=agent, user=quiet, title=None,
                                updated_at=base.replace(microsecond=123_999))  # fmt: skip
    conversation_factory(agent=agent, title="Second", updated_at=base)
    message_factory(conversation=talk, created_at=base,
                    parts=[{"type": "text", "text": "héllo"}, {"type": "tool-x", "input": {"b": 1, "a": [1.5, None]}}])  # fmt: skip
    message_factory(conversation=talk, created_at=base + timedelta(microseconds=1), parts=[])

    users = api.get("/v1/users?limit=100").json()["data"]
    assert users and all(u == api.get(f"/v1/users/{u['id']}").json() for u in users)
    conversations = api.get("/v1/conversations?limit=100").json()["data"]
    assert len(conversations) == 2
    for item in conversations:
        assert item == api.get(f"/v1/conversations/{item['id']}").json()
    assert conversations[0]["updated_at"] == "2026-03-01T12:00:00.123Z"
    messages = api.get(f"/v1/conversations/{talk.id}/messages?limit=1").json()
    rows = messages["data"]
    rows += api.get(
        f"/v1/conversations/{talk.id}/messages?limit=1&after={messages['next_cursor']}"
    ).json()["data"]
    expected = [
        message_to_dict(m) for m in Message.objects.filter(agent=agent).order_by("created_at")
    ]
    assert rows == expected
    assert rows[0]["parts"][1]["input"] == {"b": 1, "a": [1.5, None]}
