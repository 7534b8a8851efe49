"""The Overview read from the rollup the recording keeps (apps.activity.overview_rollup) gives
every figure the runs give (apps.activity.overview_runs): after varied recordings over several
days, models, users and statuses, re-recordings that change a run, and a retention purge; and
the rollup stays what its SQL rebuild computes from the rows."""

from dataclasses import asdict
from datetime import UTC, date, datetime, timedelta

import pytest
from django.db import connection
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext

from apps.activity import analytics
from apps.activity.erasure import end_user_data_delete
from apps.activity.models import Rollup, RollupLatency, Run, RunStep
from apps.activity.overview import overview_get
from apps.activity.overview_rollup import overview_of_rollups
from apps.activity.overview_runs import overview_of_runs
from apps.activity.overview_types import OverviewScope
from apps.activity.retention import conversations_purge_batch
from tests.usage.helpers import conversation, iso, record, record_run

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 5, 20, 12, 0, tzinfo=UTC)
MODELS = ("big", "small", None, "tiny")
STATUSES = ("completed", "failed", "aborted", "streaming", "completed")
TOOLS = (["search"], ["search", "fetch"], [], ["fetch", "mail", "search"], ["mail"])


@pytest.fixture(autouse=True)
def _now(time_machine):
    time_machine.move_to(NOW, tick=False)


def _users(agent) -> list[str]:
    ids = []
    for n in range(4):
        ids.append(f"usr_ov{n}")
        record(agent, {"type": "user", "id": ids[-1], "display_name": f"User {n}",
                       "last_seen_at": iso(NOW - timedelta(days=40))})  # fmt: skip
    return ids


def _record_varied(agent) -> list[str]:
    """About 60 runs over 30 days in 12 conversations: every combination of model, status,
    tool set, user (or none), latency (or none) and credits; some with steps."""
    users = _users(agent)
    talks = []
    for n in range(12):
        at = NOW - timedelta(days=29 - n * 2, hours=3)
        user = users[n % 4] if n % 5 else None
        talks.append(
            (conversation(agent, at=at) if user is None else _conversation(agent, at, user), at)
        )
    run_ids = []
    for n in range(60):
        talk, start = talks[n % 12]
        at = start + timedelta(hours=n // 12, minutes=n)
        failed_tools = TOOLS[n % 5][-1:] if STATUSES[n % 5] == "failed" and TOOLS[n % 5] else []
        run_ids.append(
            record_run(
                agent, at=at, conversation_id=talk, model_id=MODELS[n % 4],
                status=STATUSES[n % 5], tool_names=TOOLS[(n // 2) % 5],
                failed_tool_names=failed_tools if set(failed_tools) <= set(TOOLS[(n // 2) % 5])
                else [],
                total_turn_latency_ms=None if n % 7 == 0 else 40.0 * (n + 1) ** 1.5,
                credits_charged=None if n % 9 == 0 else round(0.05 * n + 0.1, 2),
                input_tokens=100 + n, output_tokens=10 * n, total_tokens=100 + 11 * n,
                error_code="TimeoutError" if STATUSES[n % 5] == "failed" else None,
            )
        )  # fmt: skip
        if n % 6 == 0:
            record(agent, {"type": "step", "id": f"step_ov{n}", "run_id": run_ids[-1],
                           "kind": "tool", "name": "call", "tool_name": "search",
                           "started_at": iso(at), "duration_ms": 50 + n})  # fmt: skip
    return run_ids


def _conversation(agent, at: datetime, user_id: str) -> str:
    conversation_id = f"conv_ov{at:%d%H}"
    record(agent, {"type": "conversation", "id": conversation_id, "user_id": user_id,
                   "created_at": iso(at)})  # fmt: skip
    return conversation_id


def _rerecord(agent, run_ids: list[str]) -> None:
    """Recordings that change runs already counted: a streaming run ends failed with more
    tokens and another model, one moves to another user, one gains and loses tools."""
    streaming = [run_id for n, run_id in enumerate(run_ids) if STATUSES[n % 5] == "streaming"]
    for run_id in streaming[:3]:
        record(agent, {"type": "run", "id": run_id, "status": "failed", "model_id": "big",
                       "total_tokens": 9999, "credits_charged": 2.5,
                       "total_turn_latency_ms": 12345.0, "error_code": "Boom",
                       "tool_names": ["search", "mail"], "failed_tool_names": ["mail"]})  # fmt: skip
    record(agent, {"type": "run", "id": run_ids[1], "user_id": "usr_ov3"})
    record(agent, {"type": "run", "id": run_ids[2], "tool_names": ["fetch"],
                   "failed_tool_names": []})  # fmt: skip


SCOPES = [
    {},
    {"model_id": "big"},
    {"model_id": "small", "status": "failed"},
    {"status": "completed"},
    {"status": "streaming"},
    {"model_id": "absent"},
]


PERIODS = [
    (NOW.date() - timedelta(days=6), NOW.date()),
    (NOW.date() - timedelta(days=29), NOW.date()),
    (date(2026, 4, 25), date(2026, 5, 3)),
    (NOW.date() - timedelta(days=365), NOW.date()),
]
# Periods over the month tier (ov_user_m): whole months only, whole months and days at either
# end, partial months at both ends, inside one month, across one month's edge, up to today in
# the current month, and a whole year of 366 days; their periods before likewise.
MONTH_PERIODS = [
    (date(2026, 1, 1), date(2026, 3, 31)),
    (date(2025, 12, 31), date(2026, 2, 1)),
    (date(2026, 1, 15), date(2026, 4, 10)),
    (date(2026, 2, 2), date(2026, 2, 27)),
    (date(2026, 2, 28), date(2026, 3, 1)),
    (date(2026, 3, 1), NOW.date()),
    (date(2026, 2, 1), date(2026, 4, 30)),
    (NOW.date() - timedelta(days=365), NOW.date()),
]


def _assert_same_figures(agent, periods=PERIODS) -> None:
    for first, last in periods:
        for filters in SCOPES:
            scope = OverviewScope(first_day=first, last_day=last, **filters)
            from_rollups = asdict(overview_of_rollups(agent.pk, scope))
            from_runs = asdict(overview_of_runs(agent.pk, scope))
            for name, value in from_runs.items():
                assert from_rollups[name] == value, (first, last, filters, name)
            # Counts are integers (a Decimal equals its int but ranks percentiles otherwise).
            counts = [n for day in from_rollups["histograms"].values() for n in day.values()]
            counts += [from_rollups["totals"][name] for name in ("runs", "failed", "tokens")]
            assert all(type(n) is int for n in counts), (first, last, filters)


def _rollup_rows() -> tuple[list, list]:
    """Every rollup row, its stripes summed, sums of nothing left out."""
    counters = ("count", "failed", "input_tokens", "output_tokens", "total_tokens", "credits")
    rows = sorted(
        tuple(row.values())
        for row in Rollup.objects.values("agent_id", "group", "day", "key")
        .annotate(**{f"sum_{name}": Sum(name) for name in counters})
        .order_by()
        if any(row[f"sum_{name}"] for name in counters)
    )
    latency = sorted(
        RollupLatency.objects.values_list("agent_id", "group", "day", "key", "bucket")
        .annotate(Sum("count"))
        .exclude(count__sum=0)
        .order_by()
    )
    return rows, latency


def _assert_rollup_is_its_rebuild(agent) -> None:
    live = _rollup_rows()
    analytics.rollup_rebuild(agent_id=agent.pk)
    assert _rollup_rows() == live


def test_every_overview_figure_from_the_rollup_equals_the_runs(agent):
    run_ids = _record_varied(agent)
    _rerecord(agent, run_ids)
    figures = overview_of_rollups(agent.pk, OverviewScope.last_days(30))
    # The data is as varied as meant: every status, several models, users, tools, latencies.
    assert all(sum(series) for series in figures.runs_by_status.values())
    assert len(figures.credits_by_model) == 4 and figures.totals["users"] == 4
    assert len(figures.top_tools) == 3 and figures.failing_tools
    assert figures.totals["runs"] == 60 and figures.previous["runs"] == 0
    _assert_same_figures(agent)
    _assert_rollup_is_its_rebuild(agent)


def test_the_rollup_follows_the_retention_purge(agent):
    run_ids = _record_varied(agent)
    before = Run.objects.count()
    # Conversations whose last activity is more than 12 days old go, with their runs and steps.
    purged = conversations_purge_batch(agent_id=agent.pk, before=NOW - timedelta(days=12))
    assert purged.runs and Run.objects.count() == before - purged.runs > 0
    assert RunStep.objects.filter(run_id__in=run_ids).count() < len(run_ids) // 6 + 1
    _assert_same_figures(agent)
    _assert_rollup_is_its_rebuild(agent)
    old = overview_of_rollups(agent.pk, OverviewScope(first_day=date(2026, 4, 20),
                                                      last_day=date(2026, 5, 1)))  # fmt: skip
    assert old.totals["runs"] == 0 and old.credits_by_user == [] and old.top_tools == []


def test_the_rollup_follows_the_deletion_of_a_users_data(agent):
    _record_varied(agent)
    counts = end_user_data_delete(agent=agent, user_id="usr_ov1")
    assert counts["runs"] and not Run.objects.filter(user_id="usr_ov1").exists()
    _assert_same_figures(agent)
    _assert_rollup_is_its_rebuild(agent)


def test_the_overview_reads_no_runs_unless_filtered_by_user_model_or_status(agent):
    run_ids = _record_varied(agent)
    for scope, reads_runs in [(OverviewScope.last_days(90), False),
                              (OverviewScope.last_days(30, model_id="big"), True),
                              (OverviewScope.last_days(30, user_id="usr_ov1"), True)]:  # fmt: skip
        with CaptureQueriesContext(connection) as queries:
            overview_get(agent=agent, scope=scope)
        sql = " ".join(query["sql"] for query in queries.captured_queries)
        assert ("activity_run " in sql or '"activity_run"' in sql) == reads_runs, scope
        assert "activity_runstep" not in sql
        assert len(queries.captured_queries) <= 10
    by_user = overview_get(agent=agent, scope=OverviewScope.last_days(30, user_id="usr_ov1"))
    assert by_user.totals["runs"] == Run.objects.filter(user_id="usr_ov1").count() > 0
    assert run_ids


# Days at and near month edges from Dec 2025 to May 2026: each has three runs (hours 1, 8, 15)
# of varied users (one in five without), models, statuses and credits; a conversation spans
# two consecutive entries (across a month's edge for most).
MONTH_DAYS = [
    date(2025, 12, 31), date(2026, 1, 1), date(2026, 1, 31), date(2026, 2, 1), date(2026, 2, 14),
    date(2026, 2, 28), date(2026, 3, 1), date(2026, 3, 31), date(2026, 4, 1), date(2026, 4, 30),
    date(2026, 5, 1), date(2026, 5, 19),
]  # fmt: skip


def _record_months(agent) -> list[str]:
    users = _users(agent)
    run_ids = []
    for n, day in enumerate(MONTH_DAYS):
        talk = f"conv_om{n // 2}"
        if n % 2 == 0:
            record(agent, {"type": "conversation", "id": talk,
                           "created_at": iso(datetime(day.year, day.month, day.day, tzinfo=UTC))})  # fmt: skip
        for k in range(3):
            at = datetime(day.year, day.month, day.day, 1 + 7 * k, tzinfo=UTC)
            run_ids.append(
                record_run(
                    agent, at=at, conversation_id=talk,
                    user_id=users[(n + k) % 4] if (n + k) % 5 else None,
                    model_id=MODELS[(n + k) % 4], status=STATUSES[(3 * n + k) % 5],
                    credits_charged=round(0.3 * ((7 * n + 3 * k) % 11) + 0.1, 2),
                    total_tokens=100 * (n + k), tool_names=TOOLS[(n + k) % 5],
                )
            )  # fmt: skip
    return run_ids


def _months_of(user_id: str) -> set[date]:
    rows = Rollup.objects.filter(group="ov_user_m", key=user_id).exclude(count=0)
    return set(rows.values_list("day", flat=True))


def test_the_month_tier_gives_the_runs_figures_over_month_edges(agent):
    run_ids = _record_months(agent)
    # A user active in several months, so whole months and edge days both hold them.
    assert len(_months_of("usr_ov1")) >= 5
    # Re-recordings: a run moves to another user (and out of its month row), another loses
    # its user, a third gains one.
    record(agent, {"type": "run", "id": run_ids[3], "user_id": "usr_ov3"})
    record(agent, {"type": "run", "id": run_ids[7], "user_id": None})
    record(agent, {"type": "run", "id": run_ids[4], "user_id": "usr_ov0"})
    # And one moves from Feb 1 to Mar 1: out of one month's and day's rows, into others.
    assert Run.objects.get(id=run_ids[9]).created_at.date() == date(2026, 2, 1)
    record(agent, {"type": "run", "id": run_ids[9],
                   "created_at": iso(datetime(2026, 3, 1, 2, tzinfo=UTC))})  # fmt: skip
    figures = overview_of_rollups(agent.pk, OverviewScope(first_day=date(2026, 1, 15),
                                                          last_day=date(2026, 4, 10)))  # fmt: skip
    assert figures.totals["users"] == 4 and len(figures.credits_by_user) == 4
    assert figures.previous["users"] >= 2 and max(figures.active_users) >= 2
    _assert_same_figures(agent, MONTH_PERIODS)
    _assert_rollup_is_its_rebuild(agent)


def test_the_month_tier_follows_the_retention_purge(agent):
    _record_months(agent)
    before = Run.objects.count()
    # The conversations last active before March 1 go (their runs in Dec, Jan and Feb).
    purged = conversations_purge_batch(agent_id=agent.pk, before=datetime(2026, 3, 1, tzinfo=UTC))
    assert purged.runs and Run.objects.count() == before - purged.runs > 0
    assert Run.objects.filter(created_at__lt=datetime(2026, 2, 28, tzinfo=UTC)).count() == 0
    assert not Rollup.objects.filter(group="ov_user_m", day__lt=date(2026, 2, 1)).exists()
    _assert_same_figures(agent, MONTH_PERIODS)
    _assert_rollup_is_its_rebuild(agent)


def test_the_month_tier_follows_the_deletion_of_a_users_data(agent):
    _record_months(agent)
    assert _months_of("usr_ov2")
    counts = end_user_data_delete(agent=agent, user_id="usr_ov2")
    assert counts["runs"] and not Run.objects.filter(user_id="usr_ov2").exists()
    assert not _months_of("usr_ov2")
    _assert_same_figures(agent, MONTH_PERIODS)
    _assert_rollup_is_its_rebuild(agent)


def test_runs_and_steps_alike_in_one_batch_count_each(agent):
    """The recording sums the runs (and steps) of a batch that count under the same rollup rows
    (one day, status, model, tools, conversation, latency bucket) before adding them: each
    still counts, in its tokens, its credits and the latency histogram, when recorded, changed
    and purged."""
    at = NOW - timedelta(days=20)
    talk = _conversation(agent, at, _users(agent)[0])
    runs = [
        {"type": "run", "id": f"run_alike{n}", "conversation_id": talk, "request_id": f"r{n}",
         "sdk_version": "5", "created_at": iso(at + timedelta(minutes=n)),
         "status": ("streaming", "completed", "failed")[n // 3], "model_id": "big",
         "tool_names": ["search"], "failed_tool_names": ["search"] if n >= 6 else [],
         "credits_charged": 0.25 * n, "total_turn_latency_ms": 1000.0 + n}
        for n in range(9)
    ]  # fmt: skip
    steps = [
        {"type": "step", "id": f"step_alike{n}", "run_id": f"run_alike{n % 9}", "kind": "model",
         "name": "chat", "model_id": "big", "status": "failed" if n % 4 == 0 else "completed",
         "started_at": iso(at + timedelta(minutes=n % 9)), "duration_ms": 900 + n,
         "input_tokens": 10 * n, "output_tokens": n, "total_tokens": 11 * n}
        for n in range(12)
    ]  # fmt: skip
    record(agent, *runs, *steps)
    (row,) = RollupLatency.objects.filter(group="ov_all").values_list("count", flat=True)
    assert row == 9  # one bucket, nine runs
    (chat,) = analytics.rollup_read(agent_id=agent.pk, group="model", first_day=at.date(),
                                    last_day=at.date())  # fmt: skip
    assert (chat.count, chat.failed, chat.total_tokens) == (12, 3, 11 * sum(range(12)))
    assert sum(chat.histogram.values()) == 12
    figures = overview_of_rollups(agent.pk, OverviewScope.last_days(30))
    assert figures.totals["runs"] == 9 and figures.totals["failed"] == 3
    _assert_same_figures(agent)
    _assert_rollup_is_its_rebuild(agent)
    # Three alike runs end failed in one batch: taken away as they were, added as they are.
    record(agent, *[{"type": "run", "id": f"run_alike{n}", "status": "failed",
                     "failed_tool_names": ["search"]} for n in range(3)])  # fmt: skip
    assert overview_of_rollups(agent.pk, OverviewScope.last_days(30)).totals["failed"] == 6
    _assert_same_figures(agent)
    _assert_rollup_is_its_rebuild(agent)
    purged = conversations_purge_batch(agent_id=agent.pk, before=NOW - timedelta(days=12))
    assert purged.runs == 9
    _assert_same_figures(agent)
    assert _rollup_rows() == ([], [])


def test_names_with_quotes_commas_braces_and_backslashes_roll_up_as_they_are(agent):
    """The rollup's upsert takes its rows as arrays (apps.activity.analytics.rollup): a model
    or tool name holding what an array literal quotes arrives whole, as its rebuild has it."""
    odd = 'm "q", {b} \\ \' NULL'
    user = _users(agent)[0]
    for n in range(3):
        record_run(agent, at=NOW - timedelta(days=n), model_id=f"{odd}{n}", user_id=user,
                   tool_names=[f"tool, {{{n}}} \\\"", "NULL"], status=STATUSES[n])  # fmt: skip
    assert Rollup.objects.filter(group="ov_run", key__endswith=f"{odd}1").exists()
    assert Rollup.objects.filter(group="ov_tool", key__startswith='tool, {2} \\"').exists()
    _assert_same_figures(agent, PERIODS[:2])
    _assert_rollup_is_its_rebuild(agent)
