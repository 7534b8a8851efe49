"""A member scores a run on its page (the panel HTMX loads, the form built from the Agent's
configs), sees an end user's thumbs down beside the message in the transcript, and finds the
run on the Runs list by "Has negative feedback"."""

import pytest
from playwright.sync_api import expect

from apps.scores.models import Score
from tests.activity.factories import (
    conversation_factory,
    end_user_factory,
    message_factory,
    run_factory,
)
from tests.browser.conftest import log_in
from tests.scores.factories import score_config_factory, score_factory

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_member_scores_a_run_and_finds_negative_feedback(page, live_server, member, agent):
    score_config_factory(agent=agent, name="verdict", data_type="categorical")
    user = end_user_factory(agent=agent)
    conversation = conversation_factory(agent=agent, user=user, title="Refund")
    run = run_factory(agent=agent, conversation=conversation)
    answer = message_factory(
        conversation=conversation, role="assistant", run_id=run.id,
        parts=[{"type": "text", "text": "Refunds take 30 days."}],
    )  # fmt: skip
    score_factory(
        agent=agent, message=answer, name="user_feedback", data_type="boolean",
        number_value=None, boolean_value=False, source="end_user", end_user_id=user.id,
        comment="It is 14 days",
    )  # fmt: skip
    run_factory(agent=agent)  # another run, without feedback
    log_in(page, live_server, member)

    page.goto(f"{live_server.url}/runs/{run.id}/")
    panel = page.locator("#scores-panel")
    panel.locator(".score-add").wait_for()
    assert "👎" in panel.inner_text()
    panel.get_by_label("Score", exact=True).fill("verdict")
    panel.get_by_label("Value", exact=True).fill("great")
    panel.get_by_role("button", name="Add score").click()
    page.locator("#scores-panel [role=alert]", has_text="allows the categories").wait_for()
    page.locator("#scores-panel").get_by_label("Value", exact=True).fill("wrong")
    page.locator("#scores-panel").get_by_role("button", name="Add score").click()
    page.locator("#scores-panel li", has_text="verdict").wait_for()
    assert Score.objects.get(name="verdict").string_value == "wrong"
    page.locator("#scores-panel").get_by_role("button", name="Remove verdict score").click()
    page.locator("#scores-panel li", has_text="verdict").wait_for(state="detached")
    assert not Score.objects.filter(name="verdict").exists()

    page.goto(f"{live_server.url}/conversations/{conversation.id}/")
    beside = page.locator(f"#message-scores-{answer.id}")
    beside.locator(".score-down").wait_for()
    assert "It is 14 days" in beside.inner_text()

    page.goto(f"{live_server.url}/runs/")
    page.get_by_label("End-user feedback").select_option("negative")
    page.wait_for_url("**feedback=negative**")
    page.locator("#run-table tbody tr").first.wait_for()
    assert page.locator("#run-table tbody tr").count() == 1
    expect(page.locator(f'#run-table tbody a[href$="/runs/{run.id}/"]')).to_have_count(1)
