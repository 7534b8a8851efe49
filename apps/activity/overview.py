"""The Overview's numbers: runs, tokens, credits, latency, tools and users per day, in SQL.

Every query reads one Agent's runs in a date range (a preset of the last 7, 30 or 90 days, or
any range of up to 366 days) through the (agent, -created_at, -id) index, narrowed by the
optional model, user and status filters. Latency percentiles come from the histograms of
apps.common.latency, read off by its one rule: unfiltered, the days' histograms of the usage
rollup (the rows the Usage page reads, O(days) whatever the runs); filtered by model, user or
status, which the rollup does not split by, counted from the runs (in SQL on PostgreSQL, in
Python on the SQLite embedded default).
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from django.db import connection
from django.db.models import Count, F, Q, Sum
from django.db.models.functions import TruncDay
from django.utils import timezone

from apps.activity.events import latency_histograms
from apps.activity.models import EndUser, Run, RunStatus
from apps.common.latency import BOUNDARIES, BUCKET_SQL, bucket_of, merged, percentiles
from apps.workspaces.models import Agent

PERIODS = (7, 30, 90)
DEFAULT_PERIOD = 30
MAX_RANGE_DAYS = 366


@dataclass(frozen=True)
class OverviewScope:
    """What the Overview shows: the days from `first_day` to `last_day` (both included, UTC)
    and the runs' filters (`model_id`, `user_id`, `status`; empty ones are left out)."""

    first_day: date
    last_day: date
    model_id: str = ""
    user_id: str = ""
    status: str = ""

    @classmethod
    def last_days(cls, days: int, **filters) -> "OverviewScope":
        today = timezone.now().date()
        return cls(first_day=today - timedelta(days=days - 1), last_day=today, **filters)

    @property
    def days(self) -> int:
        return (self.last_day - self.first_day).days + 1

    @property
    def since(self) -> datetime:
        return datetime(*self.first_day.timetuple()[:3], tzinfo=UTC)

    @property
    def until(self) -> datetime:
        return self.since + timedelta(days=self.days)

    def previous(self) -> "OverviewScope":
        """The period of equal length just before, with the same filters."""
        return OverviewScope(
            first_day=self.first_day - timedelta(days=self.days),
            last_day=self.first_day - timedelta(days=1),
            model_id=self.model_id,
            user_id=self.user_id,
            status=self.status,
        )

    def runs(self, agent_id: str):
        runs = Run.objects.filter(agent_id=agent_id, created_at__gte=self.since)
        runs = runs.filter(created_at__lt=self.until)
        for name in ("model_id", "user_id", "status"):
            value = getattr(self, name)
            if value:
                runs = runs.filter(**{name: value})
        return runs

    def sql_conditions(self, agent_id: str) -> tuple[str, list]:
        """The same conditions as `runs()` for the hand-written queries below."""
        clauses = ["agent_id = %s", "created_at >= %s", "created_at < %s"]
        params: list = [agent_id, self.since, self.until]
        for name in ("model_id", "user_id", "status"):  # column names: constants, not input
            value = getattr(self, name)
            if value:
                clauses.append(f"{name} = %s")
                params.append(value)
        return " AND ".join(clauses), params


STATUS_ORDER = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.ABORTED, RunStatus.STREAMING)


@dataclass
class Overview:
    days: list[date]
    runs_by_status: dict[str, list[int]]
    tokens: list[int]
    credits: list[float]
    p50: list[float | None]
    p95: list[float | None]
    active_users: list[int]
    conversations: list[int]
    totals: dict = field(default_factory=dict)
    top_tools: list[tuple[str, int]] = field(default_factory=list)
    failing_tools: list[tuple[str, int]] = field(default_factory=list)
    # The same headline numbers over the period of equal length just before, and the change.
    previous: dict = field(default_factory=dict)
    changes: dict = field(default_factory=dict)
    # (model or None, runs, credits), most credits first.
    credits_by_model: list[tuple[str | None, int, float]] = field(default_factory=list)
    # The end users who spent most credits in the period, most first.
    credits_by_user: list["UserSpend"] = field(default_factory=list)


@dataclass(frozen=True)
class UserSpend:
    user_id: str
    name: str
    runs: int
    tokens: int
    credits: float


TOP_USERS = 8


def overview_scope_parse(
    params: dict[str, str], *, user_id: str = ""
) -> tuple[OverviewScope, int | None, str | None]:
    """(the scope, the preset it is or None for a custom range, a message for bad input).

    `from`/`to` (YYYY-MM-DD, both included) give a custom range of up to MAX_RANGE_DAYS; `from`
    alone runs to today, `to` alone starts DEFAULT_PERIOD days earlier. Otherwise `days` picks
    a preset. Bad input falls back to the default preset with the message, so the page still
    shows something true.
    """
    filters = {
        "model_id": params.get("model_id", "")[:200],
        "user_id": user_id,
        "status": params.get("status", "") if params.get("status") in RunStatus.values else "",
    }
    raw_from, raw_to = params.get("from", ""), params.get("to", "")
    if raw_from or raw_to:
        today = timezone.now().date()
        try:
            last = date.fromisoformat(raw_to) if raw_to else today
            first = (
                date.fromisoformat(raw_from)
                if raw_from
                else last - timedelta(days=DEFAULT_PERIOD - 1)
            )
        except ValueError:
            error = "Dates are written YYYY-MM-DD."
        else:
            if first > last:
                error = "The start of the range is after its end."
            elif (last - first).days + 1 > MAX_RANGE_DAYS:
                error = f"A range covers at most {MAX_RANGE_DAYS} days."
            else:
                return OverviewScope(first_day=first, last_day=last, **filters), None, None
        return OverviewScope.last_days(DEFAULT_PERIOD, **filters), DEFAULT_PERIOD, error
    try:
        days = int(params.get("days", DEFAULT_PERIOD))
    except ValueError:
        days = DEFAULT_PERIOD
    if days not in PERIODS:
        days = DEFAULT_PERIOD
    return OverviewScope.last_days(days, **filters), days, None


# Whether a rise is good news (coloured green), bad news (red) or neither (no colour).
RISE_MEANS = {"runs": "good", "users": "good", "tokens": "neutral", "credits": "neutral"}


def change_between(current: float | None, previous: float | None, *, rise_means: str) -> dict:
    """The change from the previous period, as the Overview shows it. No previous activity
    gives no percentage (a rise from nothing has no meaningful size)."""
    current, previous = current or 0, previous or 0
    if not previous:
        return {"percent": None, "tone": "neutral"}
    percent = (current - previous) / previous * 100
    if abs(percent) < 0.05 or rise_means == "neutral":
        tone = "neutral"
    else:
        tone = "good" if (percent > 0) == (rise_means == "good") else "bad"
    return {"percent": percent, "tone": tone}


def _headline(runs) -> dict:
    return runs.aggregate(
        runs=Count("id"),
        failed=Count("id", filter=Q(status=RunStatus.FAILED)),
        tokens=Sum("total_tokens"),
        credits=Sum("credits_charged"),
        users=Count("user_id", distinct=True),
    )


def _credits_by_model(runs) -> list[tuple[str | None, int, float]]:
    rows = (
        runs.values("model_id")
        .annotate(n=Count("id"), credits=Sum("credits_charged"))
        .order_by("-credits", "-n", "model_id")
    )
    return [(row["model_id"] or None, row["n"], round(row["credits"] or 0.0, 4)) for row in rows]


def _credits_by_user(runs, agent_id: str) -> list[UserSpend]:
    """The TOP_USERS end users with the most credits in the period (runs without a user are
    left out), named from their profile (one query by primary key for the few shown)."""
    rows = list(
        runs.exclude(user_id__isnull=True)
        .values("user_id")
        .annotate(n=Count("id"), tokens=Sum("total_tokens"), credits=Sum("credits_charged"))
        .order_by(F("credits").desc(nulls_last=True), "-n", "user_id")[:TOP_USERS]
    )
    profiles = {
        user.id: user.display_name or user.email or user.external_id or user.id
        for user in EndUser.objects.filter(agent_id=agent_id, id__in=[r["user_id"] for r in rows])
    }
    return [
        UserSpend(
            user_id=row["user_id"],
            name=profiles.get(row["user_id"], row["user_id"]),
            runs=row["n"],
            tokens=row["tokens"] or 0,
            credits=round(row["credits"] or 0.0, 4),
        )
        for row in rows
    ]


def _latency_percentiles(runs, scope: OverviewScope) -> tuple[dict, tuple]:
    """({day: (p50, p95)}, (p50, p95) over the whole range).

    The days' histograms (buckets of apps.common.latency) read off by its nearest-rank rule:
    the Usage page's computation. Unfiltered, they are the usage rollup's rows, so the same
    days give the same numbers on both pages, including runs retention has since deleted,
    which the Usage page counts too."""
    wanted = (50, 95)
    per_day = _histograms_per_day(runs, scope)
    days = {day: tuple(percentiles(histogram, wanted)) for day, histogram in per_day.items()}
    return days, tuple(percentiles(merged(per_day.values()), wanted))


def _histograms_per_day(runs, scope: OverviewScope) -> dict[date, dict[int, int]]:
    if not (scope.model_id or scope.user_id or scope.status):
        kept = latency_histograms(
            agent_id=runs.agent_id, first_day=scope.first_day, last_day=scope.last_day
        )
        if kept is not None:
            return kept
    return _latency_histograms_of_runs(runs, scope)


def _latency_histograms_of_runs(runs, scope: OverviewScope) -> dict[date, dict[int, int]]:
    """The same histograms counted from the runs: a scan of the period's runs."""
    per_day: dict[date, dict[int, int]] = defaultdict(dict)
    if connection.vendor == "postgresql":
        where, params = scope.sql_conditions(runs.agent_id)
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
        latencies = runs.queryset.filter(total_turn_latency_ms__isnull=False)
        for created_at, latency in latencies.values_list("created_at", "total_turn_latency_ms"):
            histogram = per_day[created_at.astimezone(UTC).date()]
            histogram[bucket_of(latency)] = histogram.get(bucket_of(latency), 0) + 1
    return per_day


_TOOL_SQL = {
    # The column is one of two constants below, never user input.
    ("postgresql", "tool_names"): "jsonb_array_elements_text(tool_names) AS tool(value)",
    (
        "postgresql",
        "failed_tool_names",
    ): "jsonb_array_elements_text(failed_tool_names) AS tool(value)",
    ("sqlite", "tool_names"): "json_each(tool_names) AS tool",
    ("sqlite", "failed_tool_names"): "json_each(failed_tool_names) AS tool",
}


def _tool_counts(agent_id: str, scope: OverviewScope, column: str) -> list[tuple[str, int]]:
    source = _TOOL_SQL[(connection.vendor, column)]
    where, params = scope.sql_conditions(agent_id)
    sql = (
        "SELECT tool.value, count(*) FROM activity_run, "  # noqa: S608 - constant fragments
        + source
        + f" WHERE {where} GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 8"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(name, count) for name, count in cursor.fetchall()]


@dataclass
class _Runs:
    agent_id: str
    queryset: object


def overview_get(
    *, agent: Agent, days: int = DEFAULT_PERIOD, scope: OverviewScope | None = None
) -> Overview:
    """The Overview of `scope`, or of the last `days` days without filters."""
    scope = scope or OverviewScope.last_days(days)
    days, first_day = scope.days, scope.first_day
    runs = scope.runs(agent.pk)
    day_list = [first_day + timedelta(days=i) for i in range(days)]
    index = {day: i for i, day in enumerate(day_list)}

    by_status = {status.value: [0] * days for status in STATUS_ORDER}
    rows = (
        runs.annotate(day=TruncDay("created_at"))
        .values("day", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in rows:
        position = index.get(row["day"].date())
        if position is not None:
            by_status[row["status"]][position] = row["n"]

    tokens, credits, active, talks = [0] * days, [0.0] * days, [0] * days, [0] * days
    per_day_totals = (
        runs.annotate(day=TruncDay("created_at"))
        .values("day")
        .annotate(
            tokens=Sum("total_tokens"),
            credits=Sum("credits_charged"),
            users=Count("user_id", distinct=True),
            conversations=Count("conversation_id", distinct=True),
        )
        .order_by()
    )
    for total in per_day_totals:
        position = index.get(total["day"].date())
        if position is not None:
            tokens[position] = total["tokens"] or 0
            credits[position] = round(total["credits"] or 0.0, 2)
            active[position] = total["users"]
            talks[position] = total["conversations"]

    per_day, (p50_all, p95_all) = _latency_percentiles(_Runs(agent.pk, runs), scope)
    p50 = [per_day.get(day, (None, None))[0] for day in day_list]
    p95 = [per_day.get(day, (None, None))[1] for day in day_list]

    totals = _headline(runs)
    previous = _headline(scope.previous().runs(agent.pk))
    changes = {
        name: change_between(totals[name], previous[name], rise_means=meaning)
        for name, meaning in RISE_MEANS.items()
    }
    totals["failure_rate"] = (totals["failed"] / totals["runs"] * 100) if totals["runs"] else 0.0
    totals["p50"], totals["p95"] = p50_all, p95_all
    return Overview(
        days=day_list,
        runs_by_status=by_status,
        tokens=tokens,
        credits=credits,
        p50=p50,
        p95=p95,
        active_users=active,
        conversations=talks,
        totals=totals,
        top_tools=_tool_counts(agent.pk, scope, "tool_names"),
        failing_tools=_tool_counts(agent.pk, scope, "failed_tool_names"),
        previous=previous,
        changes=changes,
        credits_by_model=_credits_by_model(runs),
        credits_by_user=_credits_by_user(runs, agent.pk),
    )
