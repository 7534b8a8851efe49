"""The contract's objects (2.2 to 2.5): exact field sets, Z timestamps, nulls kept."""

import pytest

from apps.activity.rendering import conversation_to_dict, message_to_dict, run_to_dict, user_to_dict
from tests.activity.factories import (
    conversation_factory,
    end_user_factory,
    message_factory,
    run_factory,
)

pytestmark = [pytest.mark.django_db, pytest.mark.smoke]

USER_FIELDS = {
    "object", "id", "external_id", "identity_type", "display_name", "email", "avatar_url",
    "first_seen_at", "last_seen_at",
}  # fmt: skip
CONVERSATION_FIELDS = {
    "object", "id", "title", "status", "source", "user_id", "created_at", "updated_at",
}  # fmt: skip
MESSAGE_FIELDS = {"object", "id", "role", "parts", "source_id", "created_at", "updated_at"}
RUN_FIELDS = {
    "object", "id", "conversation_id", "user_id", "request_id", "status", "model_id", "effort",
    "sdk_version", "protocol_version", "input_tokens", "output_tokens", "total_tokens",
    "cache_read_tokens", "cache_write_tokens", "credits_charged", "tool_names",
    "failed_tool_names", "component_kinds", "error_code", "first_chunk_at", "completed_at",
    "total_turn_latency_ms", "created_at", "updated_at",
}  # fmt: skip


def test_user_object_has_exactly_the_contract_fields(agent):
    data = user_to_dict(end_user_factory(agent=agent, avatar_url=None))
    assert set(data) == USER_FIELDS
    assert data["object"] == "user"
    assert data["avatar_url"] is None
    assert data["last_seen_at"].endswith("Z")


def test_conversation_object_has_exactly_the_contract_fields(agent):
    user = end_user_factory(agent=agent)
    data = conversation_to_dict(conversation_factory(agent=agent, user=user, title=None))
    assert set(data) == CONVERSATION_FIELDS
    assert data["object"] == "conversation"
    assert data["title"] is None
    assert data["user_id"] == user.id


def test_message_object_keeps_parts_as_given(agent):
    parts = [{"type": "text", "text": "hi"}, {"type": "x-custom", "payload": {"n": [1, 2]}}]
    data = message_to_dict(
        message_factory(conversation=conversation_factory(agent=agent), parts=parts)
    )
    assert set(data) == MESSAGE_FIELDS
    assert data["parts"] == parts
    assert data["updated_at"] is None


def test_run_object_has_exactly_the_contract_fields(agent):
    run = run_factory(agent=agent, tool_names=["search"], effort=None, first_chunk_at=None)
    data = run_to_dict(run)
    assert set(data) == RUN_FIELDS
    assert data["object"] == "run"
    assert data["conversation_id"] == run.conversation_id
    assert data["tool_names"] == ["search"]
    assert data["first_chunk_at"] is None
    assert isinstance(data["credits_charged"], float)
    assert data["created_at"].endswith("Z")


def test_markdown_images_are_links_unless_remote_images_are_allowed():
    from apps.common.markdown import render_markdown

    text = "See ![the <pixel>](http://tracker.example/p.png?u=1&v=2)"
    as_link = str(render_markdown(text))
    assert "<img" not in as_link
    assert 'href="http://tracker.example/p.png?u=1&amp;v=2"' in as_link
    assert "Image: the &lt;pixel&gt;" in as_link

    shown = str(render_markdown(text, remote_images=True))
    assert '<img src="http://tracker.example/p.png?u=1&amp;v=2"' in shown
