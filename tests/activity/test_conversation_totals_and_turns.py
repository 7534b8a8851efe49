"""The conversation list's message/run/credit columns, and runs tied to the turn they produced."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.activity import selectors
from apps.activity.transcript import runs_by_turn, turn_usage
from tests.activity.factories import conversation_factory, message_factory, run_factory

pytestmark = pytest.mark.django_db
T0 = datetime(2025, 1, 31, 12, 0, tzinfo=UTC)


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture
def signed_in(client, owner):
    client.force_login(owner)
    return client


def test_totals_count_each_conversations_own_messages_and_runs(agent, other_agent):
    busy = conversation_factory(agent=agent, id="conv_busy")
    quiet = conversation_factory(agent=agent, id="conv_quiet")
    for n in range(3):
        message_factory(conversation=busy, created_at=at(n))
    run_factory(conversation=busy, credits_charged=1.25)
    run_factory(conversation=busy, credits_charged=0.5)
    run_factory(conversation=busy, credits_charged=None)
    # Another workspace's conversation with the same id must not add to ours.
    theirs = conversation_factory(agent=other_agent, id="conv_busy")
    message_factory(conversation=theirs)
    run_factory(conversation=theirs, credits_charged=100)

    totals = selectors.conversation_totals(
        agent=agent, conversation_ids=["conv_busy", "conv_quiet"]
    )
    assert totals["conv_busy"] == selectors.ConversationTotals(messages=3, runs=3, credits=1.75)
    assert totals[quiet.id] == selectors.ConversationTotals(messages=0, runs=0, credits=None)


def test_totals_cost_two_queries_whatever_the_page_size(agent):
    small = [conversation_factory(agent=agent).id for _ in range(2)]
    large = [conversation_factory(agent=agent).id for _ in range(20)]
    for ids in (small, large):
        with CaptureQueriesContext(connection) as queries:
            selectors.conversation_totals(agent=agent, conversation_ids=ids)
        assert len(queries) == 2


def test_conversation_list_shows_the_columns(signed_in, agent):
    conversation = conversation_factory(agent=agent, title="Refund")
    message_factory(conversation=conversation)
    run_factory(conversation=conversation, credits_charged=2.5)
    html = signed_in.get(reverse("activity:conversation_list")).content.decode()
    assert '<th class="num">Messages</th>' in html
    assert '<td data-label="Messages" class="num" data-column="messages">1</td>' in html
    assert '<td data-label="Runs" class="num" data-column="runs">1</td>' in html
    assert '<td data-label="Credits" class="num" data-column="credits">2.5</td>' in html


def test_each_run_belongs_to_the_answer_recorded_after_it_started(agent):
    conversation = conversation_factory(agent=agent)
    question = message_factory(conversation=conversation, role="user", created_at=at(0))
    answer = message_factory(conversation=conversation, role="assistant", created_at=at(5))
    follow_up = message_factory(conversation=conversation, role="user", created_at=at(10))
    second_answer = message_factory(conversation=conversation, role="assistant", created_at=at(20))
    first = run_factory(conversation=conversation, created_at=at(1), total_tokens=100)
    retry = run_factory(conversation=conversation, created_at=at(11), total_tokens=40)
    final = run_factory(conversation=conversation, created_at=at(12), total_tokens=60)
    unanswered = run_factory(conversation=conversation, created_at=at(30), status="failed")
    messages = [question, answer, follow_up, second_answer]

    turns = runs_by_turn(messages, [final, unanswered, first, retry])
    assert turns[answer.id] == [first]
    # A run with no answer after it stays with the last message before it, never dropped.
    assert turns[second_answer.id] == [retry, final, unanswered]
    assert set(turns) == {answer.id, second_answer.id}
    usage = turn_usage([retry, final])
    assert (usage["tokens"], usage["runs"]) == (100, [retry, final])


def test_transcript_shows_tokens_and_credits_under_each_answer(signed_in, agent):
    conversation = conversation_factory(agent=agent)
    message_factory(conversation=conversation, role="user", created_at=at(0))
    answer = message_factory(conversation=conversation, role="assistant", created_at=at(5))
    run_factory(
        conversation=conversation,
        created_at=at(1),
        model_id="gpt-test",
        total_tokens=1234,
        credits_charged=0.75,
        total_turn_latency_ms=850,
    )
    html = signed_in.get(
        reverse("activity:conversation_detail", args=[conversation.id])
    ).content.decode()
    answer_html = html.split(f'id="message-{answer.id}"', 1)[1].split("</article>", 1)[0]
    assert 'data-turn-tokens="1234"' in answer_html
    assert "1234 tokens" in answer_html and "0.75 credits" in answer_html
    assert "gpt-test" in answer_html and "850 ms" in answer_html
