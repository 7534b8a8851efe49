"""GET /v1/usage and /v1/agents/{agentId}/usage: exact shapes, defaults, validation, tenancy
and numbers equal to the sums over the runs."""

from datetime import UTC, datetime, timedelta

import pytest

from apps.activity.models import Run
from apps.common.credits import credits_decimal
from apps.workspaces.models import Agent, Workspace
from tests.usage.helpers import record_run

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 5, 20, 12, 0, tzinfo=UTC)
FIGURE_KEYS = {
    "runs", "completed_runs", "failed_runs", "aborted_runs", "streaming_runs", "tokens",
    "credits_charged", "latency_ms",
}  # fmt: skip
TOKEN_KEYS = {"input", "output", "total", "cache_read", "cache_write"}


@pytest.fixture(autouse=True)
def _now(time_machine):
    time_machine.move_to(NOW, tick=False)


def get(api, path="/v1/usage", **params):
    return api.get(path, params=params)


def assert_figures(figures):
    assert set(figures) == FIGURE_KEYS
    assert set(figures["tokens"]) == TOKEN_KEYS
    assert set(figures["latency_ms"]) == {"p50", "p95"}


def test_usage_has_exact_keys_and_defaults_to_this_month_to_date(api, agent, sibling_agent):
    response = get(api)
    assert response.status == 200
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert list(body) == [
        "object", "workspace_id", "agent_id", "period", "totals", "limits", "agents", "series",
    ]  # fmt: skip
    assert body["object"] == "usage"
    assert body["workspace_id"] == agent.workspace_id and body["agent_id"] is None
    assert body["period"] == {"from": "2026-05-01", "to": "2026-05-20", "granularity": "day"}
    assert_figures(body["totals"])
    assert body["totals"]["runs"] == 0 and body["totals"]["latency_ms"] == {
        "p50": None,
        "p95": None,
    }
    assert body["limits"] == {
        "month": "2026-05",
        "monthly_credit_limit": None,
        "credits_used_this_month": 0.0,
        "percent_used": None,
        "state": "none",
        "rate_limit": {"requests": 600, "window_seconds": 60, "per": "api_key"},
    }
    assert [a["agent_id"] for a in body["agents"]] == sorted([agent.pk, sibling_agent.pk])
    for entry in body["agents"]:
        assert set(entry) == {"agent_id", "name"} | FIGURE_KEYS
    assert len(body["series"]) == 20
    assert body["series"][0]["start"] == body["series"][0]["end"] == "2026-05-01"
    for entry in body["series"]:
        assert set(entry) == {"start", "end"} | FIGURE_KEYS


@pytest.mark.smoke
def test_figures_equal_the_sums_over_the_runs(api, agent, sibling_agent):
    statuses = ["completed", "failed", "aborted", "streaming", "completed"]
    for i in range(30):
        record_run(
            agent if i % 3 else sibling_agent,
            at=NOW - timedelta(hours=13 * i),
            status=statuses[i % 5],
            input_tokens=100 * i,
            output_tokens=7 * i,
            total_tokens=107 * i,
            cache_read_tokens=i,
            cache_write_tokens=2 * i,
            credits_charged=0.37 * i,
            total_turn_latency_ms=None if i % 5 == 3 else 120.0 + 10 * i,
        )
    body = get(api, **{"from": "2026-05-01", "to": "2026-05-20"}).json()
    runs = Run.objects.filter(created_at__gte=datetime(2026, 5, 1, tzinfo=UTC))
    totals = body["totals"]
    assert totals["runs"] == runs.count()
    assert totals["failed_runs"] == runs.filter(status="failed").count()
    assert totals["streaming_runs"] == runs.filter(status="streaming").count()
    for key, column in [
        ("input", "input_tokens"), ("output", "output_tokens"), ("total", "total_tokens"),
        ("cache_read", "cache_read_tokens"), ("cache_write", "cache_write_tokens"),
    ]:  # fmt: skip
        assert totals["tokens"][key] == sum(getattr(run, column) or 0 for run in runs)
    assert totals["credits_charged"] == float(sum(credits_decimal(r.credits_charged) for r in runs))
    for entry in body["agents"]:
        assert entry["runs"] == runs.filter(agent_id=entry["agent_id"]).count()
    for entry in body["series"]:
        day_runs = [r for r in runs if r.created_at.date().isoformat() == entry["start"]]
        assert entry["runs"] == len(day_runs)
        assert entry["credits_charged"] == float(
            sum(credits_decimal(r.credits_charged) for r in day_runs)
        )
    assert sum(entry["runs"] for entry in body["series"]) == totals["runs"]
    # The agents are ordered by credits, most first.
    credits = [entry["credits_charged"] for entry in body["agents"]]
    assert credits == sorted(credits, reverse=True)


@pytest.mark.smoke
def test_weekly_series_are_iso_weeks_cut_to_the_period(api, agent):
    record_run(agent, at=datetime(2026, 5, 4, 9, tzinfo=UTC))  # a Monday
    record_run(agent, at=datetime(2026, 5, 10, 9, tzinfo=UTC))  # the Sunday after
    body = get(api, **{"from": "2026-05-01", "to": "2026-05-20", "granularity": "week"}).json()
    weeks = [(entry["start"], entry["end"], entry["runs"]) for entry in body["series"]]
    assert weeks == [
        ("2026-05-01", "2026-05-03", 0),
        ("2026-05-04", "2026-05-10", 2),
        ("2026-05-11", "2026-05-17", 0),
        ("2026-05-18", "2026-05-20", 0),
    ]


def test_agent_filter_and_agent_scoped_path_give_that_agents_figures(api, agent, sibling_agent):
    record_run(agent, at=NOW)
    record_run(sibling_agent, at=NOW, credits_charged=4.0)
    record_run(sibling_agent, at=NOW, credits_charged=4.0)
    by_query = get(api, agent_id=sibling_agent.pk).json()
    by_path = get(api, f"/v1/agents/{sibling_agent.pk}/usage").json()
    assert by_query == by_path
    assert by_query["agent_id"] == sibling_agent.pk
    assert by_query["totals"]["runs"] == 2 and by_query["totals"]["credits_charged"] == 8.0
    assert [a["agent_id"] for a in by_query["agents"]] == [sibling_agent.pk]
    # The month's credits and the limit stay the workspace's.
    assert by_query["limits"]["credits_used_this_month"] == 9.25


def test_archived_agents_usage_still_counts_and_can_be_filtered(api, agent, workspace):
    archived = Agent.objects.create(workspace=workspace, name="Retired")
    record_run(archived, at=NOW)
    Agent.objects.filter(pk=archived.pk).update(status="archived")
    body = get(api).json()
    assert archived.pk in [a["agent_id"] for a in body["agents"]]
    assert get(api, f"/v1/agents/{archived.pk}/usage").json()["totals"]["runs"] == 1


def test_another_workspaces_agent_is_not_found(api, other_agent):
    for response in (
        get(api, agent_id=other_agent.pk),
        get(api, f"/v1/agents/{other_agent.pk}/usage"),
        get(api, agent_id="agt_nope"),
    ):
        assert response.status == 404
        assert set(response.json()) == {"name", "message"}
        assert response.json()["name"] == "not_found"


def test_other_workspaces_usage_is_never_counted(api, agent, other_agent):
    record_run(other_agent, at=NOW, credits_charged=99.0)
    body = get(api).json()
    assert body["totals"]["runs"] == 0 and body["limits"]["credits_used_this_month"] == 0.0
    assert other_agent.pk not in [a["agent_id"] for a in body["agents"]]


def test_limit_state_follows_the_months_credits(api, agent, workspace):
    Workspace.objects.filter(pk=workspace.pk).update(monthly_credit_limit=10)
    record_run(agent, at=NOW, credits_charged=8.5)
    limits = get(api).json()["limits"]
    assert limits["monthly_credit_limit"] == 10.0
    assert (limits["percent_used"], limits["state"]) == (85.0, "warning")
    record_run(agent, at=NOW, credits_charged=2.0)
    limits = get(api).json()["limits"]
    assert (limits["percent_used"], limits["state"]) == (105.0, "exceeded")


@pytest.mark.parametrize(
    ("params", "names"),
    [
        ({"from": "2026-5-1"}, "from"),
        ({"from": "20260501"}, "from"),
        ({"to": "2026-02-30"}, "to"),
        ({"from": "2026-05-21", "to": "2026-05-20"}, "from"),
        ({"from": "2025-01-01", "to": "2026-01-02"}, "to"),
        ({"from": "0001-01-01"}, "from"),
        ({"to": "9999-12-31"}, "to"),
        ({"granularity": "month"}, "granularity"),
    ],
)
def test_bad_parameters_are_bad_request_naming_the_parameter(api, params, names):
    response = get(api, **params)
    assert response.status == 400
    assert response.json()["name"] == "bad_request"
    assert response.json()["message"].startswith(f"{names}:")


def test_a_period_of_366_days_is_accepted(api):
    body = get(api, **{"from": "2024-01-01", "to": "2024-12-31"}).json()
    assert len(body["series"]) == 366


def test_agent_id_differing_from_the_path_is_bad_request(api, agent, sibling_agent):
    response = get(api, f"/v1/agents/{agent.pk}/usage", agent_id=sibling_agent.pk)
    assert response.status == 400
    assert response.json()["message"].startswith("agent_id:")


def test_missing_scope_is_insufficient_scope_naming_usage_read(make_api):
    client = make_api(["runs:read"])
    response = client.get("/v1/usage")
    assert response.status == 403
    assert response.json()["name"] == "insufficient_scope"
    assert 'scope="usage:read"' in response.headers["WWW-Authenticate"]


def test_without_a_key_it_is_unauthorized(anonymous_api):
    response = anonymous_api.get("/v1/usage")
    assert response.status == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer realm=")


def test_a_key_created_by_a_member_may_read_usage(make_api, member):
    assert make_api(["usage:read"], created_by=member).get("/v1/usage").status == 200


def test_post_is_bad_request_with_allow(api):
    response = api.post("/v1/usage", json={})
    assert response.status == 400
    assert "GET" in response.headers["Allow"]


def test_the_openapi_document_marks_both_forms_as_extensions(client):
    document = client.get("/v1/openapi.json").json()
    for path in ("/v1/usage", "/v1/agents/{agentId}/usage"):
        operation = document["paths"][path]["get"]
        assert operation["x-extension"] is True
        assert operation["x-required-scope"] == "usage:read"
        assert operation["tags"] == ["Usage"]
        assert "404" in operation["responses"]


def test_the_request_costs_a_constant_number_of_queries(api, agent, sibling_agent):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for i in range(20):
        record_run(agent if i % 2 else sibling_agent, at=NOW - timedelta(days=i % 15))
    get(api)  # warm the key cache
    with CaptureQueriesContext(connection) as few:
        get(api, **{"from": "2026-05-19", "to": "2026-05-20"})
    with CaptureQueriesContext(connection) as many:
        get(api, **{"from": "2026-01-01", "to": "2026-05-20"})
    assert len(few) == len(many) <= 8


@pytest.mark.smoke
@pytest.mark.parametrize("granularity", ["day", "week"])
def test_latency_percentiles_equal_the_reference_over_the_runs_latencies(
    api, agent, sibling_agent, granularity
):
    import random

    from apps.usage.latency import bucket_of, percentiles

    rng = random.Random(7)
    for i in range(60):
        record_run(
            agent if i % 4 else sibling_agent,
            at=NOW - timedelta(hours=9 * i),
            total_turn_latency_ms=rng.lognormvariate(7, 1),
        )
    body = get(api, **{"from": "2026-05-01", "granularity": granularity}).json()
    runs = list(Run.objects.filter(created_at__gte=datetime(2026, 5, 1, tzinfo=UTC)))

    def reference(selected):
        histogram: dict[int, int] = {}
        for run in selected:
            bucket = bucket_of(run.total_turn_latency_ms)
            histogram[bucket] = histogram.get(bucket, 0) + 1
        p50, p95 = percentiles(histogram, (50, 95))
        return {"p50": p50, "p95": p95}

    assert body["totals"]["latency_ms"] == reference(runs)
    for entry in body["agents"]:
        assert entry["latency_ms"] == reference(
            [r for r in runs if r.agent_id == entry["agent_id"]]
        )
    for entry in body["series"]:
        selected = [
            r for r in runs if entry["start"] <= r.created_at.date().isoformat() <= entry["end"]
        ]
        assert entry["latency_ms"] == reference(selected)
