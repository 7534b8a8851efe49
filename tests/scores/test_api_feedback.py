"""End users' feedback with their browser token: PUT/DELETE /v1/me/messages/{id}/feedback and
GET /v1/me/conversations/{id}/feedback, and every refusal (nothing written)."""

import pytest

from apps.scores.models import Score
from apps.workspaces.services import api_key_revoke
from tests.activity.factories import (
    conversation_factory,
    end_user_factory,
    message_factory,
    run_factory,
)
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

ORIGIN = "https://shop.example.com"


@pytest.fixture
def widget(agent, make_api):
    """A browser token of end user cust-7, whose conversation holds an assistant answer."""
    agent.allowed_origins = [ORIGIN]
    agent.save(update_fields=["allowed_origins"])
    me = end_user_factory(agent=agent, external_id="cust-7")
    conversation = conversation_factory(agent=agent, user=me)
    run = run_factory(agent=agent, conversation=conversation)
    question = message_factory(conversation=conversation, role="user")
    answer = message_factory(conversation=conversation, role="assistant", run_id=run.id)
    minter = make_api(["auth_tokens:create"])
    token = minter.post("/v1/auth_tokens", json={"external_id": "cust-7"}).json()["token"]
    client = ApiClient(token)
    client.minter, client.me, client.run = minter, me, run
    client.conversation, client.question, client.answer = conversation, question, answer
    return client


def _deep(levels: int):
    value: list = []
    for _ in range(levels):
        value = [value]
    return value


def _put(client, message_id, body, origin=ORIGIN):
    return client.request(
        "PUT",
        f"/v1/me/messages/{message_id}/feedback",
        json=body,
        headers={"Origin": origin} if origin else None,
    )


def test_thumbs_down_is_a_user_feedback_score_on_the_message(widget):
    response = _put(widget, widget.answer.id, {"value": False, "comment": "Wrong refund date"})
    assert response.status == 201, response.body
    body = response.json()
    assert (body["name"], body["source"], body["data_type"], body["value"]) == (
        "user_feedback",
        "end_user",
        "boolean",
        False,
    )
    assert (body["target_type"], body["message_id"]) == ("message", widget.answer.id)
    assert (body["run_id"], body["conversation_id"]) == (widget.run.id, widget.conversation.id)
    assert (body["author_type"], body["author_id"]) == ("end_user", widget.me.id)
    assert body["comment"] == "Wrong refund date"
    assert response.headers["Access-Control-Allow-Origin"] == ORIGIN


def test_a_new_vote_changes_the_one_feedback(widget):
    first = _put(widget, widget.answer.id, {"value": False}).json()
    second = _put(widget, widget.answer.id, {"value": True, "comment": "ok now"})
    assert second.status == 200
    assert second.json()["id"] == first["id"]
    assert second.json()["value"] is True
    assert Score.objects.count() == 1
    listed = widget.get(f"/v1/me/conversations/{widget.conversation.id}/feedback").json()
    assert [(s["message_id"], s["value"]) for s in listed["data"]] == [(widget.answer.id, True)]


def test_feedback_can_be_withdrawn(widget):
    _put(widget, widget.answer.id, {"value": True})
    response = widget.request(
        "DELETE", f"/v1/me/messages/{widget.answer.id}/feedback", headers={"Origin": ORIGIN}
    )
    assert response.status == 204
    assert not Score.objects.exists()


def test_another_users_message_is_not_found_and_nothing_is_written(widget, agent):
    stranger = end_user_factory(agent=agent)
    theirs = conversation_factory(agent=agent, user=stranger)
    answer = message_factory(conversation=theirs, role="assistant")
    assert _put(widget, answer.id, {"value": False}).status == 404
    assert widget.get(f"/v1/me/conversations/{theirs.id}/feedback").status == 404
    assert not Score.objects.exists()


def test_another_agents_message_is_not_found(widget, other_agent):
    conversation = conversation_factory(agent=other_agent)
    answer = message_factory(conversation=conversation, role="assistant")
    assert _put(widget, answer.id, {"value": False}).status == 404
    assert not Score.objects.exists()


def test_the_users_own_message_takes_no_feedback(widget):
    response = _put(widget, widget.question.id, {"value": True})
    assert response.status == 400
    assert "assistant" in response.json()["message"]
    assert not Score.objects.exists()


def test_a_revoked_token_is_refused_and_nothing_is_written(widget, agent, owner):
    api_key_revoke(agent=agent, key_id=widget.minter.key.pk, by_user=owner)
    response = _put(widget, widget.answer.id, {"value": False})
    assert response.status == 401
    assert not Score.objects.exists()


def test_a_foreign_origin_is_refused_and_nothing_is_written(widget):
    response = _put(widget, widget.answer.id, {"value": False}, origin="https://evil.example")
    assert response.status == 403
    assert "Access-Control-Allow-Origin" not in response.headers
    assert not Score.objects.exists()


def test_an_api_key_cannot_give_end_user_feedback(api, widget):
    response = _put(api, widget.answer.id, {"value": False})
    assert response.status == 403
    assert not Score.objects.exists()


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"value": "false"}, "value: required, true"),
        ({}, "value: required"),
        ({"value": True, "stars": 5}, "stars: unknown field"),
        ({"value": True, "comment": 5}, "comment: must be a string"),
        ({"value": True, "comment": "x" * 2001}, "at most 2000"),
        # Nested past the body's depth limit (tests/api/test_hostile_bodies.py sends the same
        # to every operation an API key reaches; this one takes browser tokens only).
        ({"value": True, "comment": _deep(80)}, "nested"),
    ],
)
def test_a_bad_body_is_refused(widget, body, says):
    response = _put(widget, widget.answer.id, body)
    assert response.status == 400
    assert says in response.json()["message"]
    assert not Score.objects.exists()


def test_the_preflight_allows_put_with_json_from_any_origin(widget):
    response = widget.client.options(
        f"/v1/me/messages/{widget.answer.id}/feedback",
        headers={
            "Origin": "https://anywhere.example",
            "Access-Control-Request-Method": "PUT",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert response.status_code == 204
    assert "PUT" in response["Access-Control-Allow-Methods"]
    assert "Content-Type" in response["Access-Control-Allow-Headers"]


def test_feedback_is_rate_limited_per_token(widget, settings, redis_store):
    settings.API_RATE_LIMIT = "2/minute"
    assert _put(widget, widget.answer.id, {"value": True}).status == 201
    assert _put(widget, widget.answer.id, {"value": False}).status == 200
    limited = _put(widget, widget.answer.id, {"value": True})
    assert limited.status == 429
    assert "Retry-After" in limited.headers
    assert Score.objects.get().boolean_value is False
