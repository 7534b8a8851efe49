"""The usage rollup: kept by recorded runs, and rebuilt from the runs.

The rollup is kept equal to the sums over the runs by applying differences: a recorded run
contributes its counters (and its latency bucket) to the row of its Agent and UTC day; when a
run changes, its previous contribution is taken away and the new one added, on whichever days
they fall. Each difference is one `INSERT ... ON CONFLICT DO UPDATE SET x = x + excluded.x` on
a stripe no other recording of the Agent in flight holds (apps.usage.models, `rollup_stripe`),
so concurrent recordings never lose an increment and those of one Agent do not wait for each
other. All of it runs inside the recording transaction: it commits or rolls back
with the run. A credit change of the current month checks the credit limit's thresholds
(apps.usage.services).
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Mapping
from datetime import date
from typing import Any

from django.db import connection, transaction
from django.db.models import Sum
from django.utils import timezone

from apps.activity.events import RunRecorded
from apps.activity.models import Run, RunStatus
from apps.common.credits import credits_decimal
from apps.usage.days import month_start, utc_day
from apps.usage.latency import BOUNDARIES, bucket_of
from apps.usage.models import ROLLUP_STRIPES, DailyLatency, DailyUsage
from apps.usage.services import thresholds_check
from apps.workspaces.models import Agent

TOKEN_FIELDS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)
STATUS_FIELDS = {status.value: f"{status.value}_runs" for status in RunStatus}
COUNTER_FIELDS = ("runs", *STATUS_FIELDS.values(), *TOKEN_FIELDS, "credits_charged")


# --- keeping the rollup as runs are recorded ----------------------------------------------------


def _contribution(values: Mapping[str, Any]) -> tuple[date, dict[str, Any], int | None]:
    """(day, counters, latency bucket) one run adds to the rollup, from its field values."""
    counters: dict[str, Any] = {"runs": 1, STATUS_FIELDS[values["status"]]: 1}
    for name in TOKEN_FIELDS:
        counters[name] = values[name] or 0
    counters["credits_charged"] = credits_decimal(values["credits_charged"])
    latency = values["total_turn_latency_ms"]
    return (
        utc_day(values["created_at"]),
        counters,
        None if latency is None else bucket_of(latency),
    )


def _run_values(run: Run) -> dict[str, Any]:
    names = ("status", "created_at", "credits_charged", "total_turn_latency_ms", *TOKEN_FIELDS)
    return {name: getattr(run, name) for name in names}


def rollup_on_runs_recorded(events: list[RunRecorded]) -> None:
    """The listener activity announces each batch of recorded runs to (registered in
    UsageConfig): the batch's differences summed per Agent and day first, so a batch of a
    hundred runs of one Agent-day is one increment of its row, not a hundred."""
    by_agent: dict[str, list[RunRecorded]] = defaultdict(list)
    for event in events:
        by_agent[event.run.agent_id].append(event)
    for agent_id in sorted(by_agent):
        _rollup_runs(agent_id, by_agent[agent_id])


def _rollup_runs(agent_id: str, events: list[RunRecorded]) -> None:
    days: dict[date, dict[str, Any]] = defaultdict(lambda: defaultdict(int))
    buckets: dict[tuple[date, int], int] = defaultdict(int)
    for event in events:
        changes = [(1, _contribution(_run_values(event.run)))]
        if event.previous is not None:
            changes.append((-1, _contribution(event.previous)))
        for sign, (day, counters, bucket) in changes:
            for name, value in counters.items():
                days[day][name] += sign * value
            if bucket is not None:
                buckets[(day, bucket)] += sign
    run = events[0].run
    if Run.agent.is_cached(run):  # type: ignore[attr-defined]
        workspace_id = run.agent.workspace_id
    else:
        workspace_id = Agent.objects.values_list("workspace_id", flat=True).get(pk=agent_id)
    rollup_apply(agent_id=agent_id, workspace_id=workspace_id, days=days, latency_buckets=buckets)
    today = utc_day(timezone.now())
    if any(
        counters["credits_charged"] and month_start(day) == month_start(today)
        for day, counters in days.items()
    ):
        thresholds_check(workspace_id=workspace_id)


def _upsert_sql(table: str, keys: tuple[str, ...], counters: tuple[str, ...]) -> str:
    # Table and column names are the constants below, never input.
    columns = (*keys, *counters)
    placeholders = ", ".join(["%s"] * len(columns))
    conflict = ", ".join(key for key in keys if key != "workspace_id")
    additions = ", ".join(f"{name} = {table}.{name} + excluded.{name}" for name in counters)
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders}) "  # noqa: S608
        f"ON CONFLICT ({conflict}) DO UPDATE SET {additions}"
    )


_DAILY_SQL = _upsert_sql(
    "usage_dailyusage", ("agent_id", "workspace_id", "day", "stripe"), COUNTER_FIELDS
)
_LATENCY_SQL = _upsert_sql(
    "usage_dailylatency", ("agent_id", "workspace_id", "day", "bucket", "stripe"), ("runs",)
)
_ZERO_COUNTERS = {name: 0 for name in COUNTER_FIELDS}


# The first of the Agent's stripes, from the connection's own on, that no transaction in flight
# holds: each claimed with a transaction-level advisory lock that is only tried, never waited
# for (the scan stops at the first one claimed). The key is the Agent's (a 32-bit digest of its
# id) and the stripe's.
_STRIPE_CLAIM_SQL = (
    "SELECT stripe FROM (SELECT (%s + i) %% %s AS stripe FROM generate_series(0, %s - 1) AS i) "
    "AS stripes WHERE pg_try_advisory_xact_lock(%s::integer, stripe::integer) LIMIT 1"
)


def connection_stripe() -> int:
    """This connection's own stripe: its PostgreSQL backend's process id modulo the stripes
    (behind PgBouncer, the one reported at connecting), known without a round trip."""
    if connection.vendor != "postgresql":
        return 0
    connection.ensure_connection()
    return connection.connection.info.backend_pid % ROLLUP_STRIPES


def rollup_stripe(agent_id: str) -> int:
    """The stripe of the Agent's rows this recording writes (apps.usage.models): the first one,
    starting from the connection's own, that no other recording of the Agent in flight holds,
    claimed until this transaction ends (one round trip). Stripes by connection alone collided:
    eight connections share eight stripes by `backend_pid % 8` only by luck, and two recordings
    of one Agent on the same stripe queued on its row lock from one's upsert to its commit. When
    every stripe is held (more recordings of the Agent at once than stripes) the connection's
    own, whose upsert then waits its turn. Any stripe is correct: readers sum them all."""
    own = connection_stripe()
    if connection.vendor != "postgresql":
        return own
    key = zlib.crc32(agent_id.encode()) - (1 << 31)  # a signed 32-bit key
    with connection.cursor() as cursor:
        cursor.execute(_STRIPE_CLAIM_SQL, [own, ROLLUP_STRIPES, ROLLUP_STRIPES, key])
        row = cursor.fetchone()
    return own if row is None else row[0]


def rollup_apply(
    *,
    agent_id: str,
    workspace_id: str,
    days: Mapping[date, Mapping[str, Any]],
    latency_buckets: Mapping[tuple[date, int], int],
) -> None:
    """Add differences to an Agent's rows of one stripe (`rollup_stripe`): one multi-row upsert
    for the days, one for the latency buckets; stripe rows left holding nothing are removed (as
    a rebuild would never create them). Rows are touched in key order, so two recordings that
    touch the same rows lock them in the same order."""
    changed_days = [
        day for day in sorted(days) if any(days[day].get(name) for name in COUNTER_FIELDS)
    ]
    changed_buckets = [(key, runs) for key, runs in sorted(latency_buckets.items()) if runs]
    if not changed_days and not changed_buckets:
        return  # nothing to add, nothing emptied: no stripe claimed
    stripe = rollup_stripe(agent_id)
    daily = [
        [agent_id, workspace_id, day, stripe, *(days[day].get(name, 0) for name in COUNTER_FIELDS)]
        for day in changed_days
    ]
    latency = [
        [agent_id, workspace_id, day, bucket, stripe, runs]
        for (day, bucket), runs in changed_buckets
    ]
    with connection.cursor() as cursor:
        for sql, rows in ((_DAILY_SQL, daily), (_LATENCY_SQL, latency)):
            if rows:
                cursor.execute(_rows_sql(sql, len(rows[0]), len(rows)), sum(rows, []))
    emptied = [day for day in sorted(days) if days[day].get("runs", 0) < 0]
    if emptied:
        # Only this stripe's rows, and only those holding nothing at all: another stripe may
        # hold what this one took away (a run counted there, ended here).
        DailyUsage.objects.filter(
            agent_id=agent_id, stripe=stripe, day__in=emptied, **_ZERO_COUNTERS
        ).delete()
    dropped = {day for (day, _bucket), runs in latency_buckets.items() if runs < 0}
    if dropped:
        DailyLatency.objects.filter(
            agent_id=agent_id, stripe=stripe, day__in=dropped, runs=0
        ).delete()


def _rows_sql(sql: str, width: int, count: int) -> str:
    """The one-row upsert `sql` with `count` rows of `width` values."""
    row = "(" + ", ".join(["%s"] * width) + ")"
    return sql.replace(row, ", ".join([row] * count), 1)


# --- rebuilding it from the runs --------------------------------------------------------------


_REBUILD_DAILY_SQL = """
INSERT INTO usage_dailyusage (agent_id, workspace_id, day, runs, {status_columns},
    input_tokens, output_tokens, total_tokens, cache_read_tokens, cache_write_tokens,
    credits_charged)
SELECT run.agent_id, agent.workspace_id, (run.created_at AT TIME ZONE 'UTC')::date, count(*),
    {status_counts},
    coalesce(sum(run.input_tokens), 0), coalesce(sum(run.output_tokens), 0),
    coalesce(sum(run.total_tokens), 0), coalesce(sum(run.cache_read_tokens), 0),
    coalesce(sum(run.cache_write_tokens), 0),
    coalesce(sum(round(run.credits_charged::numeric, 9)), 0)
FROM activity_run run JOIN workspaces_agent agent ON agent.id = run.agent_id
WHERE {where}
GROUP BY 1, 2, 3
"""

_REBUILD_LATENCY_SQL = """
INSERT INTO usage_dailylatency (agent_id, workspace_id, day, bucket, runs)
SELECT run.agent_id, agent.workspace_id, (run.created_at AT TIME ZONE 'UTC')::date,
    width_bucket(run.total_turn_latency_ms, %s::float8[]), count(*)
FROM activity_run run JOIN workspaces_agent agent ON agent.id = run.agent_id
WHERE run.total_turn_latency_ms IS NOT NULL AND {where}
GROUP BY 1, 2, 3, 4
"""


def rollup_rebuild(*, agent_ids: list[str] | None = None) -> int:
    """Recompute the rollup from the runs (all Agents, or these); returns the runs counted.

    For data recorded before the rollup existed, runs written around the recording service,
    and as the oracle of the tests. Takes the rows' locks for its transaction, so recordings
    of those Agents wait for it rather than interleave.
    """
    with transaction.atomic():
        daily = DailyUsage.objects.all()
        latency = DailyLatency.objects.all()
        if agent_ids is not None:
            daily = daily.filter(agent_id__in=agent_ids)
            latency = latency.filter(agent_id__in=agent_ids)
        daily.delete()
        latency.delete()
        if connection.vendor == "postgresql":
            _rebuild_in_sql(agent_ids)
        else:
            _rebuild_in_python(agent_ids)
        runs = DailyUsage.objects.all()
        if agent_ids is not None:
            runs = runs.filter(agent_id__in=agent_ids)
        return runs.aggregate(n=Sum("runs"))["n"] or 0


def _rebuild_in_sql(agent_ids: list[str] | None) -> None:
    where, params = (
        ("run.agent_id = ANY(%s)", [agent_ids]) if agent_ids is not None else ("TRUE", [])
    )
    status_columns = ", ".join(STATUS_FIELDS.values())
    status_counts = ", ".join(
        f"count(*) FILTER (WHERE run.status = '{status}')" for status in STATUS_FIELDS
    )
    with connection.cursor() as cursor:
        cursor.execute(
            _REBUILD_DAILY_SQL.format(
                status_columns=status_columns, status_counts=status_counts, where=where
            ),
            params,
        )
        cursor.execute(_REBUILD_LATENCY_SQL.format(where=where), [list(BOUNDARIES), *params])


def _rebuild_in_python(agent_ids: list[str] | None) -> None:
    """The same sums computed row by row (the SQLite embedded default; also checked against
    the SQL rebuild by the tests)."""
    workspaces = dict(Agent.objects.values_list("pk", "workspace_id"))
    runs = Run.objects.all()
    if agent_ids is not None:
        runs = runs.filter(agent_id__in=agent_ids)
    daily: dict[tuple[str, date], dict[str, Any]] = defaultdict(lambda: defaultdict(int))
    latency: dict[tuple[str, date, int], int] = defaultdict(int)
    fields = ("agent_id", "status", "created_at", "credits_charged", "total_turn_latency_ms")
    for values in runs.values(*fields, *TOKEN_FIELDS).iterator(chunk_size=5000):
        day, counters, bucket = _contribution(values)
        row = daily[(values["agent_id"], day)]
        for name, value in counters.items():
            row[name] += value
        if bucket is not None:
            latency[(values["agent_id"], day, bucket)] += 1
    DailyUsage.objects.bulk_create(
        [
            DailyUsage(
                agent_id=agent_id, workspace_id=workspaces[agent_id], day=day, **dict(counters)
            )
            for (agent_id, day), counters in daily.items()
        ],
        batch_size=1000,
    )
    DailyLatency.objects.bulk_create(
        [
            DailyLatency(
                agent_id=agent_id, workspace_id=workspaces[agent_id], day=day, bucket=b, runs=n
            )
            for (agent_id, day, b), n in latency.items()
        ],
        batch_size=1000,
    )
