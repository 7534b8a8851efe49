"""The Overview's figures kept in the analytics rollup (apps.activity.analytics) as runs are
recorded, and read back over any period in O(days) rows.

Each run counts, on the UTC day it was created (its month for `ov_user_m`), under these groups
of `Rollup` rows:

- `ov_run`, key "status␟model": runs, failed, tokens, credits, and the turn-latency histogram
  (`RollupLatency`) — the runs per day by status, tokens, credits, latency, the headline, the
  credits by model, narrowed by the model and status filters by key;
- `ov_all`, key "": what `ov_run` holds, all statuses and models together — the latency
  histogram of an Overview filtered by neither in O(days x buckets) rows;
- `ov_tool`, key "tool␟status␟model": `count` the runs that used the tool, `failed` those in
  which it failed — the top and failing tools, narrowed the same way;
- `ov_user`, key the end user: runs, tokens, credits — active users per day, distinct users
  over the period, the users who spent most;
- `ov_conv`, key the conversation: runs — conversations per day;
- `ov_user_m`, key the end user, on the first day of the month: what `ov_user` holds, by month
  — distinct users and the users who spent most over a long period read whole months here and
  only the days at either end from `ov_user` (`_people` below);
- `ov_count`, key `ov_user` or `ov_conv`: how many rows that group holds on the day, so the
  active users and conversations per day are O(days) rows, not O(days x users). Not a run's
  contribution: the rollup's upsert adds one when it inserts such a row and takes one away when
  it removes one (apps.activity.rollup_counts), into its stripe like a sum.

Written by `analytics.Delta.add_runs` in the recording's one rollup statement, taken away by
the retention purge (`analytics.rows_deleted`), so the figures stay those of the runs kept.
Distinct users and conversations are not split by model or status (that would be a row per
run): an Overview filtered by model or status counts those from the runs
(apps.activity.overview_runs.people_of_runs), one filtered by end user reads only that user's
runs. ␟ is U+001F; a model or tool name holding it is stored with a space instead.
"""

from collections import Counter, defaultdict
from collections.abc import Mapping
from datetime import date, timedelta
from decimal import Decimal
from typing import Any, Protocol

from django.db import connection
from django.db.models import Count, Q, Sum, Window
from django.db.models.functions import Collate

from apps.activity.models import Rollup, RollupLatency, RunStatus
from apps.activity.overview_runs import people_of_runs, user_names
from apps.activity.overview_types import (
    STATUS_ORDER,
    TOP_USERS,
    Overview,
    OverviewScope,
    People,
    models_ranked,
    top_tools,
    users_ranked,
)

SEP = "\x1f"
RUNS, TOOLS, USERS, CONVERSATIONS = "ov_run", "ov_tool", "ov_user", "ov_conv"
USERS_MONTH, COUNTS, ALL = "ov_user_m", "ov_count", "ov_all"
GROUPS = (RUNS, TOOLS, USERS, CONVERSATIONS, USERS_MONTH, COUNTS, ALL)
# Groups read by distinct key: their rows are never split in stripes (apps.activity.analytics),
# so a key's row of a day is one row, holding what it adds up to, removed when that is nothing,
# and distinct keys are counted from the unique index alone. The cost: two recordings of one
# end user (or conversation) on one day wait for each other's commit on that row.
UNSTRIPED = (USERS, CONVERSATIONS, USERS_MONTH)
# Groups whose rows of a day are counted in `COUNTS` as they are inserted and removed.
COUNTED = (USERS, CONVERSATIONS)
# The run fields a contribution reads besides those analytics reads for every run group.
RUN_FIELDS = ("model_id", "user_id", "conversation_id", "tool_names", "failed_tool_names")


class _Delta(Protocol):
    def add_counts(self, group: str, key: str, day: date, counts: list, bucket: int | None,
                   sign: int, number: int = 1) -> None: ...  # fmt: skip


def _part(value: Any, limit: int) -> str:
    return str(value or "").replace(SEP, " ")[:limit]


def run_key(status: str, model: str | None) -> str:
    return f"{status}{SEP}{_part(model, 200)}"


def tool_key(tool: str, status: str, model: str | None) -> str:
    return f"{_part(tool, 100)}{SEP}{status}{SEP}{_part(model, 140)}"


def run_contribution(
    delta: _Delta, values: Mapping, day: date, sign: int, *, counts: list, bucket: int | None,
    runs: int = 1,
) -> None:  # fmt: skip
    """Add (`sign` 1) or take away (-1) the contribution of `runs` runs alike in every key
    (`values` is one of them) to the Overview's groups, given their summed `counts` (runs,
    failed, tokens..., credits) and their latency `bucket` (analytics.contributions)."""
    status, model = values.get("status") or "", values.get("model_id")
    delta.add_counts(RUNS, run_key(status, model), day, counts, bucket, sign, runs)
    delta.add_counts(ALL, "", day, counts, bucket, sign, runs)
    used: list = values.get("tool_names") or []
    failing: list = values.get("failed_tool_names") or []
    if len(used) == 1 and not failing:  # most runs that use a tool: no tally needed
        tally = [runs, 0]
        delta.add_counts(TOOLS, tool_key(str(used[0]), status, model), day, tally, None, sign)
    elif used or failing:
        uses = Counter(str(name) for name in used)
        failures = Counter(str(name) for name in failing)
        for tool in sorted(set(uses) | set(failures)):
            tally = [uses[tool] * runs, failures[tool] * runs]
            delta.add_counts(TOOLS, tool_key(tool, status, model), day, tally, None, sign)
    if values.get("user_id"):
        user = _part(values["user_id"], 255)
        delta.add_counts(USERS, user, day, counts, None, sign)
        delta.add_counts(USERS_MONTH, user, day.replace(day=1), counts, None, sign)
    if values.get("conversation_id"):
        conversation = _part(values["conversation_id"], 255)
        delta.add_counts(CONVERSATIONS, conversation, day, [runs], None, sign)


# --- Reading -------------------------------------------------------------------------------------


def _rows(agent_id: str, group: str, first: date, last: date):
    return Rollup.objects.filter(agent_id=agent_id, group=group, day__gte=first, day__lte=last)


def _plain(rows) -> list[tuple]:
    """The rows of a `values_list` query as the database driver gives them: without Django's
    per-row conversions (thousands of rows for a long period; sums of integers come as Decimal)
    on PostgreSQL; elsewhere (SQLite gives dates as text) through Django."""
    if connection.vendor != "postgresql":
        return list(rows)
    sql, params = rows.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _narrowed(rows, scope: OverviewScope, *, status_at: int):
    """Rows whose key names the scope's status (at part `status_at`) and model (the last part).
    `ov_run` keys of a model are listed (one per status): equalities the index range checks
    itself, where a suffix is a filter on every row of the days."""
    if status_at == 0 and scope.model_id:
        statuses = [scope.status] if scope.status else list(RunStatus.values)
        return rows.filter(key__in=[run_key(status, scope.model_id) for status in statuses])
    if scope.status:
        prefix = SEP * status_at
        rows = (rows.filter(key__startswith=f"{scope.status}{SEP}") if status_at == 0
                else rows.filter(key__contains=f"{prefix}{scope.status}{SEP}"))  # fmt: skip
    if scope.model_id:
        rows = rows.filter(key__endswith=f"{SEP}{_part(scope.model_id, 140 if status_at else 200)}")
    return rows


def _runs(agent_id: str, scope: OverviewScope, overview: Overview) -> None:
    """Runs by status per day, tokens, credits, the headline, the period before, the models."""
    previous = scope.previous()
    index = {day: i for i, day in enumerate(overview.days)}
    rows = _plain(
        _narrowed(_rows(agent_id, RUNS, previous.first_day, scope.last_day), scope, status_at=0)
        .values_list("day", "key")
        .annotate(Sum("count"), Sum("failed"), Sum("total_tokens"), Sum("credits"))
        .order_by()
    )
    now: dict[str, Any] = {"runs": 0, "failed": 0, "tokens": 0, "credits": Decimal(0)}
    before = dict(now)
    credits = [Decimal(0)] * scope.days
    models: dict[str, list] = defaultdict(lambda: [0, Decimal(0)])
    for day, key, *sums, spent in rows:
        n, failed, tokens = (int(value) for value in sums)  # PostgreSQL sums bigints as numeric
        status, model = key.split(SEP, 1)
        position = index.get(day)
        totals = before if position is None else now
        totals["runs"] += n
        totals["failed"] += failed
        totals["tokens"] += tokens
        totals["credits"] += spent
        if position is None or not n:
            continue
        overview.runs_by_status[status][position] += n
        overview.tokens[position] += tokens
        credits[position] += spent
        models[model][0] += n
        models[model][1] += spent
    overview.credits = [round(float(value), 2) for value in credits]
    overview.credits_by_model = models_ranked(models)
    for totals in (now, before):
        totals["credits"] = round(float(totals["credits"]), 4)
    overview.totals, overview.previous = now, before


def _latency(agent_id: str, scope: OverviewScope) -> dict[date, dict[int, int]]:
    """The days' histograms: from `ov_all` unless narrowed by status or model (`ov_run`)."""
    narrowed = bool(scope.status or scope.model_id)
    rows = RollupLatency.objects.filter(
        agent_id=agent_id,
        group=RUNS if narrowed else ALL,
        day__gte=scope.first_day,
        day__lte=scope.last_day,
    )
    rows = _narrowed(rows, scope, status_at=0) if narrowed else rows
    histograms: dict[date, dict[int, int]] = defaultdict(dict)
    for day, bucket, n in _plain(
        rows.values_list("day", "bucket").annotate(Sum("count")).order_by()
    ):
        if n:
            histograms[day][bucket] = int(n)  # PostgreSQL sums bigints as numeric
    return dict(histograms)


def _tools(agent_id: str, scope: OverviewScope) -> tuple[list, list]:
    rows = (
        _narrowed(_rows(agent_id, TOOLS, scope.first_day, scope.last_day), scope, status_at=1)
        .values("key")
        .annotate(n=Sum("count"), failed=Sum("failed"))
        .order_by()
    )
    used: dict[str, int] = defaultdict(int)
    failing: dict[str, int] = defaultdict(int)
    for row in rows:
        tool = row["key"].split(SEP, 1)[0]
        used[tool] += row["n"]
        failing[tool] += row["failed"]
    return top_tools(used), top_tools(failing)


def _counts_per_day(agent_id: str, scope: OverviewScope) -> dict[str, list[int]]:
    """{counted group: its rows on each day} — the end users and conversations with runs each
    day — from the `COUNTS` rows: O(days x stripes)."""
    index = {day: i for i, day in enumerate(scope.day_list())}
    out = {group: [0] * scope.days for group in COUNTED}
    rows = (
        _rows(agent_id, COUNTS, scope.first_day, scope.last_day)
        .values_list("day", "key")
        .annotate(n=Sum("count"))
        .order_by()
    )
    for day, group, n in rows:
        if group in out:
            out[group][index[day]] = n
    return out


def month_split(
    first: date, last: date
) -> tuple[tuple[date, date] | None, list[tuple[date, date]]]:
    """The whole months from `first` to `last` (the first day of the first and of the one after
    the last), or None, and the ranges of days left at either end (both days included)."""
    start = first if first.day == 1 else _next_month(first)
    end = _next_month(last).replace(day=1) if last == _month_end(last) else last.replace(day=1)
    if start >= end:
        return None, [(first, last)]
    edges = [(first, start - timedelta(days=1))] if first < start else []
    if end <= last:
        edges.append((end, last))
    return (start, end), edges


def _next_month(day: date) -> date:
    return (day.replace(day=1) + timedelta(days=32)).replace(day=1)


def _month_end(day: date) -> date:
    return _next_month(day) - timedelta(days=1)


def _user_rows(agent_id: str, first: date, last: date):
    """The `ov_user_m` rows of the whole months from `first` to `last` and the `ov_user` rows
    of the days at either end: each user's runs, tokens and credits in the period, as rows to
    sum by key (at most one per user and month, and per user and edge day)."""
    months, edges = month_split(first, last)
    where = Q()
    if months:
        where |= Q(group=USERS_MONTH, day__gte=months[0], day__lt=months[1])
    for low, high in edges:
        where |= Q(group=USERS, day__gte=low, day__lte=high)
    return Rollup.objects.filter(where, agent_id=agent_id)


def _by_code_point(column: str) -> Collate:
    """The key in code point order, as Python sorts it (the runs' figures do)."""
    return Collate(column, "C" if connection.vendor == "postgresql" else "BINARY")


def _people(agent_id: str, scope: OverviewScope) -> People:
    """Distinct users over the period and the period before, and the users who spent most, from
    whole months of `ov_user_m` and edge days of `ov_user` (UNSTRIPED: a row per key); the users
    and conversations per day from `ov_count`."""
    previous = scope.previous()
    users = _user_rows(agent_id, scope.first_day, scope.last_day).values("key").order_by()
    # The users who spent most, each with how many users there are (a window over the groups).
    spent = users.annotate(n=Sum("count"), tokens=Sum("total_tokens"), credits=Sum("credits"),
                           users=Window(Count("*")))  # fmt: skip
    top = list(spent.order_by("-credits", "-n", _by_code_point("key"))[:TOP_USERS])
    rows = [(row["key"], row["n"], row["tokens"], row["credits"]) for row in top]
    ranked = users_ranked(rows, {})
    before = _user_rows(agent_id, previous.first_day, previous.last_day).values("key")
    per_day = _counts_per_day(agent_id, scope)
    return People(
        active_users=per_day[USERS],
        conversations=per_day[CONVERSATIONS],
        users=top[0]["users"] if top else 0,
        previous_users=before.order_by().distinct().count(),
        credits_by_user=users_ranked(rows, user_names(agent_id, [u.user_id for u in ranked])),
    )


def overview_of_rollups(agent_id: str, scope: OverviewScope) -> Overview:
    """The Overview of `scope` (no user filter) from the rollup: O(days x keys) rows."""
    days = scope.day_list()
    overview = Overview(
        days=days,
        runs_by_status={status.value: [0] * scope.days for status in STATUS_ORDER},
        tokens=[0] * scope.days,
        credits=[],
        histograms=_latency(agent_id, scope),
        active_users=[],
        conversations=[],
    )
    _runs(agent_id, scope, overview)
    overview.top_tools, overview.failing_tools = _tools(agent_id, scope)
    people = _people(agent_id, scope) if not scope.filtered else people_of_runs(agent_id, scope)
    overview.active_users, overview.conversations = people.active_users, people.conversations
    overview.totals["users"], overview.previous["users"] = people.users, people.previous_users
    overview.credits_by_user = people.credits_by_user
    return overview
