"""The Overview's figures counted from the runs themselves.

What serves the Overview filtered by one end user (an index range of `run_agent_user`: as many
rows as that user's runs in the period), the distinct users and conversations of an Overview
filtered by model or status (apps.activity.overview_rollup), and the oracle the tests compare
the rollups with: every figure of `overview_of_runs` is the one the rollups must give.
"""

from collections import defaultdict
from datetime import UTC, date

from django.db import connection
from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDay

from apps.activity.models import EndUser, RunStatus
from apps.activity.overview_types import (
    STATUS_ORDER,
    Overview,
    OverviewScope,
    People,
    models_ranked,
    top_tools,
    users_ranked,
)
from apps.common.latency import BOUNDARIES, BUCKET_SQL, bucket_of


def _day_index(scope: OverviewScope) -> dict[date, int]:
    return {day: i for i, day in enumerate(scope.day_list())}


def headline(runs) -> dict:
    totals = runs.aggregate(
        runs=Count("id"),
        failed=Count("id", filter=Q(status=RunStatus.FAILED)),
        tokens=Sum("total_tokens"),
        credits=Sum("credits_charged"),
    )
    totals["tokens"] = totals["tokens"] or 0
    totals["credits"] = round(totals["credits"] or 0.0, 4)
    return totals


# One pass over the period's matching runs on PostgreSQL: grouped by day, user and conversation
# once, then counted per day and summed per user (`kind` 0 and 1). Credits are summed exactly
# (apps.common.credits, as the rollup sums them): two users who spent the same rank by id.
_PEOPLE_SQL = (
    "WITH grouped AS MATERIALIZED (SELECT (created_at AT TIME ZONE 'UTC')::date AS day, user_id, "
    "conversation_id, count(*) AS n, sum(total_tokens) AS tokens, "
    "sum(round(credits_charged::numeric, 9)) AS credits "
    "FROM activity_run WHERE {where} GROUP BY 1, 2, 3) "
    "SELECT 0, day::text, count(DISTINCT user_id), count(DISTINCT conversation_id), 0.0 "
    "FROM grouped GROUP BY day "
    "UNION ALL SELECT 1, user_id, sum(n), coalesce(sum(tokens), 0), coalesce(sum(credits), 0) "
    "FROM grouped WHERE user_id IS NOT NULL GROUP BY user_id"
)


def _people_sql(agent_id: str, scope: OverviewScope) -> tuple[list, list, list]:
    """(users per day, conversations per day, spenders) in one statement (PostgreSQL)."""
    index = _day_index(scope)
    active, talks = [0] * scope.days, [0] * scope.days
    spenders = []
    where, params = scope.sql_conditions(agent_id)
    with connection.cursor() as cursor:
        cursor.execute(_PEOPLE_SQL.format(where=where), params)
        for kind, key, first, second, credits in cursor.fetchall():
            if kind == 1:
                spenders.append((key, int(first), int(second), float(credits)))
                continue
            position = index.get(date.fromisoformat(key))
            if position is not None:
                active[position], talks[position] = int(first), int(second)
    return active, talks, spenders


def people_of_runs(agent_id: str, scope: OverviewScope) -> People:
    """Distinct users and conversations per day and over the period (and the period before),
    and the users who spent most: counted from the period's matching runs."""
    runs = scope.runs(agent_id)
    previous = scope.previous().runs(agent_id)
    if connection.vendor == "postgresql":
        return _people(agent_id, *_people_sql(agent_id, scope), previous=previous)
    index = _day_index(scope)
    active, talks = [0] * scope.days, [0] * scope.days
    per_day = (
        runs.annotate(day=TruncDay("created_at"))
        .values("day")
        .annotate(
            users=Count("user_id", distinct=True),
            conversations=Count("conversation_id", distinct=True),
        )
        .order_by()
    )
    for row in per_day:
        position = index.get(row["day"].date())
        if position is not None:
            active[position], talks[position] = row["users"], row["conversations"]
    spenders = [
        (row["user_id"], row["n"], row["tokens"] or 0, row["credits"] or 0.0)
        for row in runs.exclude(user_id__isnull=True)
        .values("user_id")
        .annotate(n=Count("id"), tokens=Sum("total_tokens"), credits=Sum("credits_charged"))
        .order_by()
    ]
    return _people(agent_id, active, talks, spenders, previous=previous)


def _people(
    agent_id: str, active: list[int], talks: list[int], spenders: list[tuple], *, previous
) -> People:
    """People from the per-day counts and the spenders, the top ones named."""
    ranked = users_ranked(spenders, {})
    return People(
        active_users=active,
        conversations=talks,
        users=len(spenders),
        previous_users=previous.aggregate(n=Count("user_id", distinct=True))["n"],
        credits_by_user=users_ranked(spenders, user_names(agent_id, [u.user_id for u in ranked])),
    )


def user_names(agent_id: str, user_ids: list[str]) -> dict[str, str]:
    """The few users shown, named from their profile (one query by primary key)."""
    return {
        user.id: user.display_name or user.email or user.external_id or user.id
        for user in EndUser.objects.filter(agent_id=agent_id, id__in=user_ids)
    }


def latency_of_runs(agent_id: str, scope: OverviewScope) -> dict[date, dict[int, int]]:
    """The days' latency histograms (apps.common.latency) counted from the runs."""
    per_day: dict[date, dict[int, int]] = defaultdict(dict)
    runs = scope.runs(agent_id).filter(total_turn_latency_ms__isnull=False)
    if connection.vendor == "postgresql":
        where, params = scope.sql_conditions(agent_id)
        bucket = BUCKET_SQL.format(column="total_turn_latency_ms")
        sql = (
            f"SELECT (created_at AT TIME ZONE 'UTC')::date, {bucket}, count(*) "  # noqa: S608
            f"FROM activity_run WHERE {where} "
            "AND total_turn_latency_ms IS NOT NULL GROUP BY 1, 2"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [list(BOUNDARIES), *params])
            for day, bucket_number, count in cursor.fetchall():
                per_day[day][bucket_number] = count
    else:
        for created_at, latency in runs.values_list("created_at", "total_turn_latency_ms"):
            histogram = per_day[created_at.astimezone(UTC).date()]
            histogram[bucket_of(latency)] = histogram.get(bucket_of(latency), 0) + 1
    return dict(per_day)


_TOOL_SQL = {
    # The column is one of two constants below, never user input.
    ("postgresql", "tool_names"): "jsonb_array_elements_text(tool_names) AS tool(value)",
    ("postgresql", "failed_tool_names"): "jsonb_array_elements_text(failed_tool_names) AS tool(value)",
    ("sqlite", "tool_names"): "json_each(tool_names) AS tool",
    ("sqlite", "failed_tool_names"): "json_each(failed_tool_names) AS tool",
}  # fmt: skip


def _tool_counts(agent_id: str, scope: OverviewScope, column: str) -> dict[str, int]:
    """How many of the period's matching runs name each tool in `column`."""
    source = _TOOL_SQL[(connection.vendor, column)]
    where, params = scope.sql_conditions(agent_id)
    sql = (
        "SELECT tool.value, count(*) FROM activity_run, "  # noqa: S608 - constant fragments
        + source
        + f" WHERE {where} GROUP BY 1"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {str(name): count for name, count in cursor.fetchall()}


def overview_of_runs(agent_id: str, scope: OverviewScope) -> Overview:
    """Every figure of the Overview counted from the runs (latency: their histograms)."""
    runs = scope.runs(agent_id)
    index, days = _day_index(scope), scope.days
    by_status = {status.value: [0] * days for status in STATUS_ORDER}
    tokens, credits = [0] * days, [0.0] * days
    models: dict[str, list] = defaultdict(lambda: [0, 0.0])
    rows = (
        runs.annotate(day=TruncDay("created_at"))
        .values("day", "status", "model_id")
        .annotate(n=Count("id"), tokens=Sum("total_tokens"), credits=Sum("credits_charged"))
        .order_by()
    )
    for row in rows:
        models[row["model_id"] or ""][0] += row["n"]
        models[row["model_id"] or ""][1] += row["credits"] or 0.0
        position = index.get(row["day"].date())
        if position is not None:
            by_status[row["status"]][position] += row["n"]
            tokens[position] += row["tokens"] or 0
            credits[position] += row["credits"] or 0.0
    people = people_of_runs(agent_id, scope)
    totals = headline(runs)
    totals["users"] = people.users
    previous = headline(scope.previous().runs(agent_id))
    previous["users"] = people.previous_users
    return Overview(
        days=scope.day_list(),
        runs_by_status=by_status,
        tokens=tokens,
        credits=[round(value, 2) for value in credits],
        histograms=latency_of_runs(agent_id, scope),
        active_users=people.active_users,
        conversations=people.conversations,
        totals=totals,
        top_tools=top_tools(_tool_counts(agent_id, scope, "tool_names")),
        failing_tools=top_tools(_tool_counts(agent_id, scope, "failed_tool_names")),
        previous=previous,
        credits_by_model=models_ranked(models),
        credits_by_user=people.credits_by_user,
    )
