"""Console: the Scores page, the scores panel beside runs and conversations, the lists' score
filter, column, order and exports, and the Overview's scores over time."""

import csv
import io
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from django.urls import reverse

from apps.scores.models import Score, ScoreConfig
from tests.activity.factories import (
    conversation_factory,
    end_user_factory,
    message_factory,
    run_factory,
)
from tests.scores.factories import score_config_factory, score_factory

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def judged(agent):
    """Three runs: one with a thumbs down and correctness 0.2, one with a thumbs up and
    correctness 0.9, one unscored."""
    user = end_user_factory(agent=agent)
    runs = []
    for n, (thumb, correctness) in enumerate([(False, 0.2), (True, 0.9), (None, None)]):
        conversation = conversation_factory(agent=agent, user=user, title=f"Chat {n}")
        run = run_factory(agent=agent, conversation=conversation)
        answer = message_factory(conversation=conversation, role="assistant", run_id=run.id)
        if thumb is not None:
            score_factory(
                agent=agent,
                message=answer,
                name="user_feedback",
                data_type="boolean",
                number_value=None,
                boolean_value=thumb,
                source="end_user",
                end_user_id=user.id,
            )
        if correctness is not None:
            score_factory(agent=agent, run=run, name="correctness", number_value=correctness)
        runs.append(run)
    return runs


def _ids_in(html: str, runs) -> list[str]:
    return [run.id for run in runs if run.id[:15] in html]


def test_runs_list_filters_by_negative_feedback(member_client, judged):
    html = member_client.get(
        reverse("activity:run_list"), {"feedback": "negative"}
    ).content.decode()
    assert _ids_in(html, judged) == [judged[0].id]


def test_runs_list_filters_by_score_name_and_value(member_client, judged):
    url = reverse("activity:run_list")
    html = member_client.get(url, {"score": "correctness", "score_value": ">=0.5"}).content.decode()
    assert _ids_in(html, judged) == [judged[1].id]
    html = member_client.get(url, {"score": "correctness"}).content.decode()
    assert _ids_in(html, judged) == [judged[0].id, judged[1].id]
    bad = member_client.get(url, {"score": "correctness", "score_value": ">=x"}).content.decode()
    assert "a number must follow &gt;=" in bad


def test_runs_list_shows_scores_and_sorts_by_the_chosen_score(member_client, judged):
    url = reverse("activity:run_list")
    html = member_client.get(
        url, {"score": "correctness", "sort": "score", "dir": "desc"}
    ).content.decode()
    assert html.index(judged[1].id[:15]) < html.index(judged[0].id[:15])
    assert "correctness: 0.9" in html
    assert "👎 1" in html
    html = member_client.get(
        url, {"score": "correctness", "sort": "score", "dir": "asc"}
    ).content.decode()
    assert html.index(judged[0].id[:15]) < html.index(judged[1].id[:15])


def test_conversations_list_filters_by_negative_feedback(member_client, judged):
    html = member_client.get(
        reverse("activity:conversation_list"), {"feedback": "negative"}
    ).content.decode()
    assert "Chat 0" in html
    assert "Chat 1" not in html and "Chat 2" not in html


def test_conversations_list_filters_sorts_and_exports_by_score(member_client, judged):
    url = reverse("activity:conversation_list")
    html = member_client.get(url, {"score": "correctness", "score_value": "<0.5"}).content.decode()
    assert "Chat 0" in html
    assert "Chat 1" not in html and "Chat 2" not in html
    html = member_client.get(
        url, {"score": "correctness", "sort": "score", "dir": "desc"}
    ).content.decode()
    assert "Chat 2" not in html
    assert html.index("Chat 1") < html.index("Chat 0")
    assert "correctness: 0.9" in html
    response = member_client.get(reverse("activity:conversation_export"), {"format": "json"})
    rows = orjson.loads(b"".join(response.streaming_content))
    by_id = {row["id"]: row["scores"] for row in rows}
    assert {(s["name"], s["value"]) for s in by_id[judged[1].conversation_id]} == {
        ("user_feedback", True),
        ("correctness", 0.9),
    }
    assert by_id[judged[2].conversation_id] == []


def test_runs_export_carries_scores(member_client, judged):
    response = member_client.get(reverse("activity:run_export"), {"format": "json"})
    rows = orjson.loads(b"".join(response.streaming_content))
    by_id = {row["id"]: row["scores"] for row in rows}
    assert {(s["name"], s["value"]) for s in by_id[judged[0].id]} == {
        ("user_feedback", False),
        ("correctness", 0.2),
    }
    assert by_id[judged[2].id] == []
    response = member_client.get(
        reverse("activity:run_export"), {"format": "csv", "feedback": "negative"}
    )
    table = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [row["id"] for row in table] == [judged[0].id]
    assert "correctness" in table[0]["scores"]


def test_the_run_page_loads_its_scores_panel(member_client, judged):
    run = judged[0]
    page = member_client.get(reverse("activity:run_detail", args=[run.id])).content.decode()
    assert reverse("scores:score_panel") in page
    panel = member_client.get(
        reverse("scores:score_panel"), {"target_type": "run", "target_id": run.id}, **HTMX
    ).content.decode()
    assert "correctness" in panel
    assert "Thumbs down" in panel  # the message's feedback, shown with the run it judges


def test_the_transcript_shows_feedback_beside_the_message(member_client, judged):
    run = judged[0]
    panel = member_client.get(
        reverse("scores:score_panel"),
        {"target_type": "conversation", "target_id": run.conversation_id},
        **HTMX,
    ).content.decode()
    answer = Score.objects.get(run_id=run.id, name="user_feedback").message_id
    assert f'id="message-scores-{answer}" hx-swap-oob="true"' in panel
    page = member_client.get(
        reverse("activity:conversation_detail", args=[run.conversation_id])
    ).content.decode()
    assert f'id="message-scores-{answer}"' in page


def test_a_member_adds_a_score_from_the_configs_and_removes_it(
    member_client, member, agent, judged
):
    score_config_factory(agent=agent, name="verdict", data_type="categorical")
    run = judged[2]
    url = reverse("scores:score_add")
    form = {"panel_type": "run", "panel_id": run.id, "target_type": "run", "target_id": run.id}
    refused = member_client.post(url, {**form, "name": "verdict", "value": "great"}, **HTMX)
    assert "allows the categories correct, partially, wrong" in refused.content.decode()
    assert not Score.objects.filter(run_id=run.id).exists()
    added = member_client.post(url, {**form, "name": "verdict", "value": "partially"}, **HTMX)
    assert added.status_code == 200
    score = Score.objects.get(run_id=run.id)
    assert (score.source, score.created_by_id, score.string_value) == (
        "console",
        member.pk,
        "partially",
    )
    removed = member_client.post(
        reverse("scores:score_remove", args=[score.id]),
        {"panel_type": "run", "panel_id": run.id},
        **HTMX,
    )
    assert removed.status_code == 200
    assert not Score.objects.filter(run_id=run.id).exists()


def test_without_htmx_adding_redirects_back(member_client, judged):
    run = judged[2]
    back = reverse("activity:run_detail", args=[run.id])
    response = member_client.post(
        reverse("scores:score_add"),
        {"target_type": "run", "target_id": run.id, "name": "ok", "value": "yes", "next": back},
    )
    assert response.status_code == 302 and response["Location"] == back
    assert Score.objects.get(run_id=run.id).boolean_value is True


def test_scores_page_filters_and_bulk_deletes_after_confirming(
    owner_client, agent, judged, other_agent
):
    theirs = score_factory(agent=other_agent, run=run_factory(agent=other_agent))
    page = owner_client.get(reverse("scores:score_list"), {"name": "correctness"}).content.decode()
    assert page.count('name="ids"') == 2
    ids = list(Score.objects.filter(agent=agent, name="correctness").values_list("id", flat=True))
    confirm = owner_client.post(
        reverse("scores:score_bulk"), {"action": "delete", "ids": [*ids, theirs.id]}
    )
    assert confirm.status_code == 200 and "Delete 2 scores" in confirm.content.decode()
    assert Score.objects.filter(name="correctness").count() == 3
    done = owner_client.post(
        reverse("scores:score_bulk"), {"action": "delete", "ids": [*ids, theirs.id], "confirm": "1"}
    )
    assert done.status_code == 302
    assert not Score.objects.filter(agent=agent, name="correctness").exists()
    assert Score.objects.filter(id=theirs.id).exists()


def test_configs_are_created_and_archived_on_the_scores_page(member_client, agent):
    response = member_client.post(
        reverse("scores:config_create"),
        {"name": "helpfulness", "data_type": "numeric", "min_value": "1", "max_value": "5"},
    )
    assert response.status_code == 302
    config = ScoreConfig.objects.get(agent=agent)
    assert (config.min_value, config.max_value) == (1.0, 5.0)
    refused = member_client.post(
        reverse("scores:config_create"), {"name": "tone", "data_type": "categorical"}, follow=True
    )
    assert "needs at least one category" in refused.content.decode()
    member_client.post(reverse("scores:config_archive", args=[config.id]), {"archived": "1"})
    config.refresh_from_db()
    assert config.archived


def test_overview_charts_each_score_name_and_link_a_day_to_its_runs(member_client, agent, judged):
    today = datetime.now(UTC).date()
    html = member_client.get(
        reverse("scores:score_overview"),
        {"from": (today - timedelta(days=6)).isoformat(), "to": today.isoformat()},
        **HTMX,
    ).content.decode()
    assert "user_feedback" in html and "correctness" in html
    assert (
        f"score=user_feedback&amp;from={today.isoformat()}&amp;to={today.isoformat()}&amp;score_value=false"
        in html
    )
    assert "average per day" in html
    page = member_client.get(reverse("activity:overview")).content.decode()
    assert reverse("scores:score_overview") in page


def test_another_agents_run_cannot_be_scored_from_the_console(member_client, other_agent):
    run = run_factory(agent=other_agent)
    response = member_client.post(
        reverse("scores:score_add"),
        {"target_type": "run", "target_id": run.id, "name": "x", "value": "1"},
        follow=True,
    )
    assert "no run" in response.content.decode()
    assert not Score.objects.exists()
