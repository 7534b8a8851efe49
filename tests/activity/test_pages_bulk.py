"""The bulk actions of the Conversations, Users and Runs lists, by their rules (the browser
flows are in tests/browser/test_list_bulk_actions.py)."""

import pytest
from django.contrib.messages import get_messages

from apps.activity.erasure import end_user_data_delete
from apps.activity.models import EndUser, Run
from apps.activity.tagging import runs_tag
from apps.common.errors import BadRequest, NotFound
from apps.workspaces.console import OWNERS_ONLY
from tests.activity.factories import end_user_factory, run_factory

pytestmark = pytest.mark.django_db


def _said(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def test_a_member_posting_delete_data_is_refused_with_the_reason(member_client, agent):
    user = end_user_factory(agent=agent)
    response = member_client.post(
        "/users/bulk/", {"action": "delete_data", "ids": [user.id], "confirm": "1"}
    )
    assert response.status_code == 302
    assert _said(response) == [OWNERS_ONLY]
    assert EndUser.objects.filter(pk=user.pk).exists()


def test_an_action_not_of_the_list_is_refused(owner_client, agent):
    run = run_factory(agent=agent)
    response = owner_client.post("/runs/bulk/", {"action": "delete_data", "ids": [run.id]})
    assert _said(response) == ["Choose one of the actions above the list."]
    assert Run.objects.filter(pk=run.pk).exists()


def test_export_of_ticked_conversations_has_the_api_fields_and_scores(owner_client, agent):
    run = run_factory(agent=agent)
    response = owner_client.post(
        "/conversations/bulk/", {"action": "export_json", "ids": [run.conversation_id]}
    )
    import orjson

    [row] = orjson.loads(b"".join(response.streaming_content))
    assert row["id"] == run.conversation_id and row["object"] == "conversation"
    assert row["scores"] == []


def test_tags_are_checked_bounded_and_removed(agent, sibling_agent):
    runs = [run_factory(agent=agent) for _ in range(2)]
    Run.objects.filter(pk=runs[1].pk).update(tags=[f"t{n}" for n in range(20)])
    other = run_factory(agent=sibling_agent)
    with pytest.raises(BadRequest, match="Tag"):
        runs_tag(agent=agent, run_ids=[runs[0].id], tag="x" * 65)
    outcome = runs_tag(agent=agent, run_ids=[r.id for r in runs] + [other.id], tag="vip")
    assert (outcome.changed, outcome.full, outcome.missing) == (1, 1, [other.id])
    assert Run.objects.get(pk=other.pk).tags == []
    again = runs_tag(agent=agent, run_ids=[runs[0].id], tag="vip")
    assert again.unchanged == 1
    runs_tag(agent=agent, run_ids=[runs[0].id], tag="vip", remove=True)
    assert Run.objects.get(pk=runs[0].pk).tags == []


def test_deleting_another_agents_user_is_not_found(agent, sibling_agent):
    user = end_user_factory(agent=sibling_agent)
    with pytest.raises(NotFound):
        end_user_data_delete(agent=agent, user_id=user.id)
    assert EndUser.objects.filter(pk=user.pk).exists()
