"""POST/GET/DELETE /v1/scores and /v1/score_configs: the contract of the extension."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.scores.models import Score
from tests.activity.factories import (
    conversation_factory,
    message_factory,
    run_factory,
    run_step_factory,
)
from tests.scores.factories import score_config_factory, score_factory

pytestmark = pytest.mark.django_db

SCORE_KEYS = {
    "object", "id", "target_type", "run_id", "step_id", "conversation_id", "message_id", "name",
    "data_type", "value", "comment", "source", "author_type", "author_id", "created_at",
    "updated_at",
}  # fmt: skip


def test_one_score_on_a_run_is_created_with_the_run_and_conversation(api, agent):
    run = run_factory(agent=agent)
    response = api.post("/v1/scores", json={"run_id": run.id, "name": "correctness", "value": 0.9})
    assert response.status == 201, response.body
    body = response.json()
    assert set(body) == SCORE_KEYS
    assert body["id"].startswith("score_")
    assert body["target_type"] == "run"
    assert (body["run_id"], body["conversation_id"]) == (run.id, run.conversation_id)
    assert (body["data_type"], body["value"], body["source"]) == ("numeric", 0.9, "api")
    assert (body["author_type"], body["author_id"]) == ("api_key", api.key.pk)
    assert api.get(f"/v1/scores/{body['id']}").json() == body


def test_a_message_score_stores_the_conversation_and_run_it_implies(api, agent):
    run = run_factory(agent=agent)
    message = message_factory(conversation=run.conversation, role="assistant", run_id=run.id)
    body = api.post(
        "/v1/scores", json={"message_id": message.id, "name": "tone", "value": "friendly"}
    ).json()
    assert (body["target_type"], body["data_type"], body["value"]) == (
        "message",
        "categorical",
        "friendly",
    )
    assert (body["conversation_id"], body["run_id"]) == (run.conversation_id, run.id)


def test_a_batch_with_invalid_items_names_each_and_keeps_none(api, agent):
    run = run_factory(agent=agent)
    score_config_factory(agent=agent, name="helpfulness")  # numeric 0..1
    batch = [
        {"run_id": run.id, "name": "ok", "value": True},
        {"run_id": run.id, "name": "helpfulness", "value": 3},
        {"run_id": "run_missing", "name": "ok", "value": True},
        {"run_id": run.id, "conversation_id": run.conversation_id, "name": "x", "value": 1},
        {"run_id": run.id, "name": "ok", "value": [1]},
    ]
    response = api.post("/v1/scores", json=batch)
    assert response.status == 400
    message = response.json()["message"]
    assert "4 of 5 scores are invalid; nothing was recorded" in message
    assert (
        "scores[1].value: score config 'helpfulness' allows 0 to 1; 3 is above the maximum"
        in message
    )
    assert "scores[2].run_id: no run 'run_missing' of this Agent" in message
    assert "scores[3]: name exactly one target" in message
    assert "scores[4].value: must be a number" in message
    assert Score.objects.count() == 0


def test_the_same_batch_twice_records_each_score_once(api, agent):
    run = run_factory(agent=agent)
    batch = [
        {"id": f"eval-{n}", "run_id": run.id, "name": "relevance", "value": n / 10}
        for n in range(10)
    ]
    first = api.post("/v1/scores", json=batch)
    assert first.status == 200
    assert (first.json()["created"], first.json()["unchanged"]) == (10, 0)
    second = api.post("/v1/scores", json=batch)
    assert (second.json()["created"], second.json()["unchanged"]) == (0, 10)
    assert [s["id"] for s in second.json()["data"]] == [f"eval-{n}" for n in range(10)]
    assert Score.objects.filter(agent=agent).count() == 10


def test_the_same_id_with_another_body_is_conflict_and_changes_nothing(api, agent):
    run = run_factory(agent=agent)
    assert (
        api.post("/v1/scores", json={"id": "s1", "run_id": run.id, "name": "a", "value": 1}).status
        == 201
    )
    again = api.post("/v1/scores", json={"id": "s1", "run_id": run.id, "name": "a", "value": 1})
    assert again.status == 200
    other = api.post("/v1/scores", json={"id": "s1", "run_id": run.id, "name": "a", "value": 2})
    assert other.status == 409
    assert "s1" in other.json()["message"]
    assert Score.objects.get(id="s1").number_value == 1.0


def test_categorical_and_boolean_configs_are_enforced_by_name(api, agent):
    run = run_factory(agent=agent)
    score_config_factory(agent=agent, name="verdict", data_type="categorical")
    score_config_factory(agent=agent, name="resolved", data_type="boolean")
    bad = api.post("/v1/scores", json={"run_id": run.id, "name": "verdict", "value": "great"})
    assert bad.status == 400
    assert "allows the categories correct, partially, wrong; got 'great'" in bad.json()["message"]
    wrong_type = api.post("/v1/scores", json={"run_id": run.id, "name": "resolved", "value": 1})
    assert wrong_type.status == 400
    assert "score config 'resolved' says boolean" in wrong_type.json()["message"]
    ok = api.post("/v1/scores", json={"run_id": run.id, "name": "verdict", "value": "partially"})
    assert ok.status == 201
    free = api.post("/v1/scores", json={"run_id": run.id, "name": "anything", "value": 42})
    assert free.status == 201


def test_an_archived_config_no_longer_applies(api, agent):
    run = run_factory(agent=agent)
    config = score_config_factory(agent=agent, name="helpfulness")
    assert api.post(f"/v1/score_configs/{config.id}/archive").json()["archived"] is True
    response = api.post("/v1/scores", json={"run_id": run.id, "name": "helpfulness", "value": 7})
    assert response.status == 201


def test_list_filters_and_is_newest_first(api, agent):
    run = run_factory(agent=agent)
    other_run = run_factory(agent=agent)
    first = score_factory(agent=agent, run=run, name="a")
    second = score_factory(agent=agent, run=run, name="b")
    score_factory(agent=agent, run=other_run, name="a")
    ids = [s["id"] for s in api.get(f"/v1/scores?run_id={run.id}").json()["data"]]
    assert ids == [second.id, first.id]
    named = api.get(f"/v1/scores?run_id={run.id}&name=a").json()["data"]
    assert [s["id"] for s in named] == [first.id]
    assert api.get("/v1/scores?source=end_user").json()["data"] == []


def test_a_batch_of_every_target_kind_stores_what_each_implies(api, agent, other_agent):
    run = run_factory(agent=agent)
    step = run_step_factory(run=run)
    answer = message_factory(conversation=run.conversation, role="assistant", run_id=run.id)
    lone = conversation_factory(agent=agent)
    batch = [
        {"run_id": run.id, "name": "a", "value": 1},
        {"step_id": step.id, "name": "b", "value": "ok"},
        {"message_id": answer.id, "name": "c", "value": True},
        {"conversation_id": lone.id, "name": "d", "value": 0.5},
    ]
    response = api.post("/v1/scores", json=batch)
    assert response.status == 200, response.body
    implied = [
        (s["target_type"], s["run_id"], s["step_id"], s["conversation_id"], s["message_id"])
        for s in response.json()["data"]
    ]
    assert implied == [
        ("run", run.id, None, run.conversation_id, None),
        ("run_step", run.id, step.id, run.conversation_id, None),
        ("message", run.id, None, run.conversation_id, answer.id),
        ("conversation", None, None, lone.id, None),
    ]
    stored = Score.objects.filter(agent=agent).values_list("target_type", "run_id", "step_id")
    assert sorted(stored, key=lambda row: row[0]) == [
        ("conversation", None, None),
        ("message", run.id, None),
        ("run", run.id, None),
        ("run_step", run.id, step.id),
    ]
    # Another Agent's step, with the same id as one of ours would have: refused by name.
    theirs = run_step_factory(run=run_factory(agent=other_agent))
    response = api.post("/v1/scores", json=[{"step_id": theirs.id, "name": "b", "value": 1}])
    assert response.status == 400
    assert (
        f"scores[0].step_id: no run step '{theirs.id}' of this Agent" in response.json()["message"]
    )


def test_list_filters_by_time_range_message_step_and_data_type(api, agent):
    run = run_factory(agent=agent)
    answer = message_factory(conversation=run.conversation, role="assistant", run_id=run.id)
    step = run_step_factory(run=run)
    long_ago = timezone.now() - timedelta(days=3)
    old = score_factory(agent=agent, run=run, created_at=long_ago, updated_at=long_ago)
    on_message = score_factory(
        agent=agent, message=answer, data_type="boolean", number_value=None, boolean_value=True
    )
    on_step = score_factory(
        agent=agent,
        run=run,
        target_type="run_step",
        step_id=step.id,
        data_type="categorical",
        number_value=None,
        string_value="partially",
    )

    def ids(query: str) -> set[str]:
        response = api.get(f"/v1/scores?{query}")
        assert response.status == 200, response.body
        return {score["id"] for score in response.json()["data"]}

    yesterday = (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert ids(f"run_id={run.id}&created_before={yesterday}") == {old.id}
    assert ids(f"run_id={run.id}&created_after={yesterday}") == {on_message.id, on_step.id}
    assert ids(f"message_id={answer.id}") == {on_message.id}
    assert ids(f"step_id={step.id}") == {on_step.id}
    assert ids(f"run_id={run.id}&data_type=categorical") == {on_step.id}
    for bad, named in (
        ("created_after=yesterday", "created_after"),
        ("data_type=number", "data_type"),
        ("source=robot", "source"),
    ):
        response = api.get(f"/v1/scores?{bad}")
        assert response.status == 400
        assert named in response.json()["message"]


def test_list_refuses_unknown_parameters_naming_them(api):
    response = api.get("/v1/scores?run=run_1&nmae=x")
    assert response.status == 400
    assert "Unknown query parameters: nmae, run." in response.json()["message"]


def test_list_pages_with_a_keyset_cursor(api, agent):
    run = run_factory(agent=agent)
    made = [score_factory(agent=agent, run=run, name=f"n{i}") for i in range(5)]
    page = api.get("/v1/scores?limit=2").json()
    seen = [s["id"] for s in page["data"]]
    while page["has_more"]:
        page = api.get(f"/v1/scores?limit=2&after={page['next_cursor']}").json()
        seen += [s["id"] for s in page["data"]]
    assert seen == [s.id for s in reversed(made)]


def test_delete_removes_and_another_agents_score_is_not_found(api, agent, other_agent):
    run = run_factory(agent=agent)
    mine = score_factory(agent=agent, run=run)
    theirs = score_factory(agent=other_agent, run=run_factory(agent=other_agent))
    assert api.get(f"/v1/scores/{theirs.id}").status == 404
    assert api.delete(f"/v1/scores/{theirs.id}").status == 404
    assert api.delete(f"/v1/scores/{mine.id}").status == 204
    assert api.get(f"/v1/scores/{mine.id}").status == 404
    assert Score.objects.filter(id=theirs.id).exists()


def test_a_target_of_another_agent_is_refused(api, other_agent):
    run = run_factory(agent=other_agent)
    response = api.post("/v1/scores", json={"run_id": run.id, "name": "a", "value": 1})
    assert response.status == 400
    assert f"no run '{run.id}' of this Agent" in response.json()["message"]
    assert not Score.objects.exists()


@pytest.mark.parametrize(
    ("method", "path", "scope"),
    [
        ("get", "/v1/scores", "scores:read"),
        ("get", "/v1/scores/score_x", "scores:read"),
        ("post", "/v1/scores", "scores:write"),
        ("delete", "/v1/scores/score_x", "scores:write"),
        ("get", "/v1/score_configs", "scores:read"),
        ("post", "/v1/score_configs", "scores:write"),
        ("patch", "/v1/score_configs/scfg_x", "scores:write"),
        ("post", "/v1/score_configs/scfg_x/archive", "scores:write"),
    ],
)
def test_every_operation_needs_its_scope(make_api, method, path, scope):
    client = make_api(["runs:read", "conversations:read"])
    kwargs = {"json": {}} if method in ("post", "patch") else {}
    response = getattr(client, method)(path, **kwargs)
    assert response.status == 403
    assert f'scope="{scope}"' in response.headers["WWW-Authenticate"]


def test_score_configs_are_created_listed_updated_and_archived(api):
    created = api.post(
        "/v1/score_configs",
        json={"name": "helpfulness", "data_type": "numeric", "min_value": 0, "max_value": 5},
    )
    assert created.status == 201
    config = created.json()
    assert (config["min_value"], config["max_value"], config["archived"]) == (0.0, 5.0, False)
    assert (
        api.post("/v1/score_configs", json={"name": "helpfulness", "data_type": "boolean"}).status
        == 409
    )
    patched = api.patch(
        f"/v1/score_configs/{config['id']}", json={"max_value": 10, "description": "1-10"}
    )
    assert patched.json()["max_value"] == 10.0
    assert (
        api.patch(f"/v1/score_configs/{config['id']}", json={"data_type": "boolean"}).status == 400
    )
    assert api.patch(f"/v1/score_configs/{config['id']}", json={"min_value": 11}).status == 400
    assert [c["name"] for c in api.get("/v1/score_configs").json()["data"]] == ["helpfulness"]
    api.patch(f"/v1/score_configs/{config['id']}", json={"archived": True})
    assert api.get("/v1/score_configs").json()["data"] == []
    assert len(api.get("/v1/score_configs?archived=true").json()["data"]) == 1


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"name": "c", "data_type": "categorical"}, "needs at least one category"),
        (
            {"name": "c", "data_type": "boolean", "min_value": 0},
            "only a numeric config has a range",
        ),
        ({"name": "c", "data_type": "numeric", "categories": ["a"]}, "only a categorical config"),
        ({"name": "c", "data_type": "numeric", "min_value": 2, "max_value": 1}, "not be above"),
        ({"name": "", "data_type": "numeric"}, "name: required"),
        ({"name": "c", "data_type": "stars"}, "data_type: required, one of"),
        ({"name": "c", "data_type": "numeric", "colour": "red"}, "colour: unknown field"),
    ],
)
def test_a_bad_score_config_is_refused_naming_the_rule(api, body, says):
    response = api.post("/v1/score_configs", json=body)
    assert response.status == 400
    assert says in response.json()["message"]


def test_conversation_filter_finds_scores_of_its_runs_and_messages(api, agent):
    conversation = conversation_factory(agent=agent)
    run = run_factory(agent=agent, conversation=conversation)
    message = message_factory(conversation=conversation, role="assistant", run_id=run.id)
    on_run = score_factory(agent=agent, run=run)
    on_message = score_factory(agent=agent, message=message)
    on_conversation = score_factory(agent=agent, conversation=conversation)
    ids = {s["id"] for s in api.get(f"/v1/scores?conversation_id={conversation.id}").json()["data"]}
    assert ids == {on_run.id, on_message.id, on_conversation.id}


def test_a_batch_over_1000_or_empty_is_refused(api, agent):
    run = run_factory(agent=agent)
    item = {"run_id": run.id, "name": "a", "value": 1}
    too_many = api.post("/v1/scores", json=[item] * 1001)
    assert too_many.status == 400
    assert "At most 1000 scores per request; got 1001" in too_many.json()["message"]
    assert api.post("/v1/scores", json=[]).status == 400
    assert api.post("/v1/scores", json="a score").status == 400
    assert not Score.objects.exists()


def test_a_batch_of_1000_is_recorded_whole(api, agent):
    run = run_factory(agent=agent)
    batch = [{"run_id": run.id, "name": "n", "value": i} for i in range(1000)]
    response = api.post("/v1/scores", json=batch)
    assert response.status == 200
    assert response.json()["created"] == 1000
    assert [s["value"] for s in response.json()["data"]] == [float(i) for i in range(1000)]
    assert Score.objects.filter(agent=agent).count() == 1000
