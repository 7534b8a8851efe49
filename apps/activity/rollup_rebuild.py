"""The analytics rollup (apps.activity.analytics) recomputed from the rows in SQL, set-based.

One `INSERT ... SELECT ... GROUP BY` per group and table, on PostgreSQL: what a migration runs
over every Agent's runs when a group is added, a benchmark after a bulk fill, and what the tests
compare the recording's increments with. Each group's SQL gives the rows `analytics.Delta`
gives for the same steps and runs (the same keys, days, sums and latency buckets; credits as
apps.common.credits counts them), into stripe 0.
"""

from django.db import connection

from apps.activity.overview_rollup import (
    ALL,
    CONVERSATIONS,
    COUNTED,
    COUNTS,
    RUNS,
    TOOLS,
    USERS,
    USERS_MONTH,
)
from apps.common.latency import BOUNDARIES

_DAY = "({at} AT TIME ZONE 'UTC')::date"
_MONTH = "date_trunc('month', {at} AT TIME ZONE 'UTC')::date"
_SEP = "E'\\x1f'"  # overview_rollup.SEP
_CREDITS = "coalesce(sum(round(credits_charged::numeric, 9)), 0)"
_TOKENS = (
    "coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0), "
    "coalesce(sum(total_tokens), 0)"
)


def _part(column: str, limit: int) -> str:
    return f"left(replace(coalesce({column}, ''), E'\\x1f', ' '), {limit})"


# group: (key expression, condition[, whether it keeps a latency histogram])
_STEP_GROUPS = {
    "name": ("left(name, 255)", "TRUE"),
    "tool": ("left(tool_name, 255)", "coalesce(tool_name, '') <> ''"),
    "model": ("left(model_id, 255)", "coalesce(model_id, '') <> ''"),
}
_RUN_GROUPS = {
    "environment": ("coalesce(environment, '')", "TRUE", True),
    "release": ("coalesce(release, '')", "TRUE", True),
    ALL: ("''", "TRUE", True),
    RUNS: (f"status || {_SEP} || {_part('model_id', 200)}", "TRUE", True),
    USERS: (_part("user_id", 255), "coalesce(user_id, '') <> ''", False),
    USERS_MONTH: (_part("user_id", 255), "coalesce(user_id, '') <> ''", False),
    CONVERSATIONS: (_part("conversation_id", 255), "coalesce(conversation_id, '') <> ''", False),
}


def _counters_sql(group: str, table: str, key: str, where: str, at: str) -> str:
    day = (_MONTH if group == USERS_MONTH else _DAY).format(at=at)
    failed = "count(*) FILTER (WHERE status = 'failed')"
    if group == CONVERSATIONS:
        sums = "count(*), 0, 0, 0, 0, 0"
    else:
        sums = f"count(*), {failed}, {_TOKENS}, {_CREDITS}"
    return (
        'INSERT INTO activity_rollup (agent_id, "group", day, key, stripe, count, failed, '  # noqa: S608
        "input_tokens, output_tokens, total_tokens, credits) "
        f"SELECT agent_id, '{group}', {day}, {key}, 0, {sums} FROM {table} "
        f"WHERE agent_id = ANY(%s) AND {where} GROUP BY agent_id, 3, 4"
    )


def _latency_sql(group: str, table: str, key: str, where: str, at: str, column: str) -> str:
    day = _DAY.format(at=at)
    return (
        'INSERT INTO activity_rolluplatency (agent_id, "group", day, key, bucket, stripe, '  # noqa: S608
        "count) "
        f"SELECT agent_id, '{group}', {day}, {key}, width_bucket({column}, %s::float8[]), 0, "
        f"count(*) FROM {table} WHERE agent_id = ANY(%s) AND {where} AND {column} IS NOT NULL "
        "GROUP BY agent_id, 3, 4, 5"
    )


# The rows of the counted groups per day, counted once they are all written.
_COUNTS_SQL = (
    'INSERT INTO activity_rollup (agent_id, "group", day, key, stripe, count, failed, '  # noqa: S608
    "input_tokens, output_tokens, total_tokens, credits) "
    f"SELECT agent_id, '{COUNTS}', day, \"group\", 0, count(*), 0, 0, 0, 0, 0 "
    'FROM activity_rollup WHERE agent_id = ANY(%s) AND "group" = ANY(%s) '
    'GROUP BY agent_id, day, "group"'
)

_TOOLS_SQL = (
    'INSERT INTO activity_rollup (agent_id, "group", day, key, stripe, count, failed, '  # noqa: S608
    "input_tokens, output_tokens, total_tokens, credits) "
    f"SELECT agent_id, '{TOOLS}', day, left(replace(tool, E'\\x1f', ' '), 100) || {_SEP} || "
    f"status || {_SEP} || model, 0, sum(used), sum(failed), 0, 0, 0, 0 FROM ("
    f"SELECT agent_id, {_DAY.format(at='created_at')} AS day, status, "
    f"{_part('model_id', 140)} AS model, tool, 1 AS used, 0 AS failed FROM activity_run, "
    "jsonb_array_elements_text(tool_names) AS tool WHERE agent_id = ANY(%s) "
    f"UNION ALL SELECT agent_id, {_DAY.format(at='created_at')}, status, "
    f"{_part('model_id', 140)}, tool, 0, 1 FROM activity_run, "
    "jsonb_array_elements_text(failed_tool_names) AS tool WHERE agent_id = ANY(%s)"
    ") AS named GROUP BY agent_id, 3, 4"
)


def rollup_rebuild_sql(agent_ids: list[str], *, steps: bool = True) -> None:
    """Replace the Agents' rollup rows with sums computed from their runs (and, with `steps`,
    their steps; without, the step groups' rows are left as they are)."""
    groups = list(_RUN_GROUPS) + [TOOLS, COUNTS] + (list(_STEP_GROUPS) if steps else [])
    boundaries = list(BOUNDARIES)
    with connection.cursor() as cursor:
        for table in ("activity_rollup", "activity_rolluplatency"):
            cursor.execute(
                f'DELETE FROM {table} WHERE agent_id = ANY(%s) AND "group" = ANY(%s)',  # noqa: S608
                [agent_ids, groups],
            )
        for group, (key, where, latency) in _RUN_GROUPS.items():
            cursor.execute(
                _counters_sql(group, "activity_run", key, where, "created_at"), [agent_ids]
            )
            if latency:
                sql = _latency_sql(group, "activity_run", key, where, "created_at",
                                   "total_turn_latency_ms")  # fmt: skip
                cursor.execute(sql, [boundaries, agent_ids])
        cursor.execute(_TOOLS_SQL, [agent_ids, agent_ids])
        cursor.execute(_COUNTS_SQL, [agent_ids, list(COUNTED)])
        if not steps:
            return
        for group, (key, where) in _STEP_GROUPS.items():
            cursor.execute(
                _counters_sql(group, "activity_runstep", key, where, "started_at"),
                [agent_ids],
            )
            sql = _latency_sql(group, "activity_runstep", key, where, "started_at", "duration_ms")
            cursor.execute(sql, [boundaries, agent_ids])
