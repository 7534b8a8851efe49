"""The Runs, Conversations and Users lists' bulk actions, as Django admin has them (issue 38,
defect 10): tick rows, then tag, score or export them; an owner deletes a user's data on
request (asked first, audited); a member is not offered that."""

import csv
import io
from pathlib import Path

import pytest

from apps.activity.models import Conversation, EndUser, Message, Run
from apps.scores.models import Score
from apps.workspaces.models import AuditEvent
from tests.activity.factories import (
    conversation_factory,
    end_user_factory,
    message_factory,
    run_factory,
)
from tests.browser.conftest import log_in
from tests.scores.factories import score_config_factory, score_factory

pytestmark = pytest.mark.django_db(transaction=True)


def _tick(page, table: str, ids) -> None:
    for row_id in ids:
        page.locator(f"#{table} input[name=ids][value='{row_id}']").check()


def test_tag_score_and_export_the_ticked_runs(console_page, agent):
    page = console_page
    score_config_factory(agent=agent, name="quality")
    runs = [run_factory(agent=agent) for _ in range(3)]
    ticked = [runs[0].id, runs[2].id]
    page.goto(f"{page.live_server_url}/runs/")
    _tick(page, "run-table", ticked)
    assert page.locator("#bulk-runs [data-bulk-count]").inner_text() == "2 selected"

    page.fill("#bulk-runs input[name=tag]", "needs-review")
    page.get_by_role("button", name="Add tag").click()
    page.get_by_text("Tagged “needs-review”: 2 runs.").wait_for()
    assert {run.id: run.tags for run in Run.objects.all()} == {
        runs[0].id: ["needs-review"],
        runs[1].id: [],
        runs[2].id: ["needs-review"],
    }
    assert page.locator("#run-table [data-tag]").count() == 2

    _tick(page, "run-table", ticked)
    page.get_by_role("button", name="Score…").click()
    assert page.locator("#bulk-question").inner_text() == "Score 2 runs"
    page.fill("#bulk-score-name", "quality")
    page.fill("#bulk-score-value", "7")  # out of the config's 0–1: refused, nothing written
    page.click("#bulk-confirm")
    assert "quality" in page.locator("#bulk-score-error").inner_text()
    assert Score.objects.count() == 0
    page.fill("#bulk-score-value", "0.8")
    page.click("#bulk-confirm")
    page.get_by_text("Scored 2 runs: quality = 0.8.").wait_for()
    assert sorted(Score.objects.values_list("run_id", "number_value", "source")) == sorted(
        [(run_id, 0.8, "console") for run_id in ticked]
    )

    _tick(page, "run-table", [runs[1].id])
    with page.expect_download() as download:
        page.get_by_role("button", name="Export CSV").click()
    text = Path(download.value.path()).read_text()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [row["id"] for row in rows] == [runs[1].id]


def test_an_owner_deletes_a_users_data_and_a_member_is_not_offered_it(
    console_page, browser, live_server, agent, member
):
    page = console_page
    leaving, staying = end_user_factory(agent=agent), end_user_factory(agent=agent)
    for user in (leaving, staying):
        conversation = conversation_factory(agent=agent, user=user)
        answer = message_factory(conversation=conversation, role="assistant")
        run = run_factory(conversation=conversation, user=user)
        score_factory(agent=agent, run=run)
        score_factory(agent=agent, message=answer, source="end_user", end_user_id=user.id,
                      name="user_feedback", data_type="boolean", boolean_value=True,
                      number_value=None)  # fmt: skip

    page.goto(f"{page.live_server_url}/users/")
    _tick(page, "user-table", [leaving.id])
    page.get_by_role("button", name="Delete their data…").click()
    assert page.locator("#bulk-question").inner_text() == "Delete the data of 1 user?"
    assert EndUser.objects.count() == 2  # nothing deleted before the confirmation
    page.click("#bulk-confirm")
    page.get_by_text("Deleted the data of 1 user.").wait_for()

    assert list(EndUser.objects.values_list("id", flat=True)) == [staying.id]
    for model in (Conversation, Run):
        assert list(model.objects.values_list("user_id", flat=True)) == [staying.id]
    assert Message.objects.count() == 1
    assert Score.objects.filter(conversation_id__in=Conversation.objects.values("id")).count() == 2
    assert Score.objects.count() == 2
    event = AuditEvent.objects.get(action="end_user.data_deleted")
    assert event.target_id == leaving.id
    assert event.changes == {"conversations": 1, "messages": 1, "runs": 1}

    # A member: export, but no deletion offered.
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    member_page = context.new_page()
    log_in(member_page, live_server, member)
    member_page.goto(f"{live_server.url}/users/")
    bar = member_page.locator("#bulk-users")
    assert bar.get_by_role("button", name="Export CSV").count() == 1
    assert bar.get_by_role("button", name="Delete their data…").count() == 0
    context.close()
