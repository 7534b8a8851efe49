"""Which tool or model is slow: daily rollups of steps and runs, written with the recording.

`GET /v1/analytics/steps` and the console's Performance page read `Rollup` and
`RollupLatency` (apps.activity.models), never the steps: per Agent, UTC day, group and key,
how many steps (runs), how many failed, their tokens, and a latency histogram
(apps.common.latency) from which p50 / p95 / p99 are read over any period.

Groups: a step counts under its `name`, its `tool` (tool_name, tool steps) and its `model`
(model_id, model steps) on the day it started; a run under its `environment` and its `release`
("" when it has none) on the day it was created, and under the Overview's groups
(apps.activity.overview_rollup). A step's latency is its `duration_ms`, a run's its
`total_turn_latency_ms`; one without is counted but has no latency.

Exact: every write of a step or run adds its contribution as it is now and takes away its
contribution as it was (`Delta.add(..., sign=-1)`), in the recording's transaction, and the
retention purge takes away the contributions of the runs and steps it deletes
(`rows_deleted`), so the rollup always equals the sums over the rows (`rollup_rebuild`
recomputes it; tests hold the two equal). Rows are split in `ROLLUP_STRIPES` stripes, claimed like the usage rollup's (the
same advisory locks: a recording holds one stripe of its Agent for both).
"""

import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.db.models import Q, QuerySet, Sum

from apps.activity import overview_rollup, rollup_counts
from apps.activity.models import Rollup, RollupLatency, Run, RunStep
from apps.activity.rollup_rebuild import rollup_rebuild_sql
from apps.api.pagination import unknown_query_refuse
from apps.common.credits import credits_decimal
from apps.common.errors import BadRequest
from apps.common.latency import bucket_of, percentiles
from apps.usage.models import ROLLUP_STRIPES

STEP_GROUPS = ("tool", "model", "name")
RUN_GROUPS = ("environment", "release")
GROUPS = STEP_GROUPS + RUN_GROUPS
TOKENS = ("input_tokens", "output_tokens", "total_tokens")
# The step and run fields a contribution reads.
STEP_FIELDS = (
    "name", "tool_name", "model_id", "status", "duration_ms", "started_at", *TOKENS,
    "credits_charged",
)  # fmt: skip
RUN_FIELDS = (
    "environment", "release", "status", "total_turn_latency_ms", "created_at", *TOKENS,
    "credits_charged", *overview_rollup.RUN_FIELDS,
)  # fmt: skip


def _day(moment: datetime) -> date:
    return moment.astimezone(UTC).date()


def counters_of(values: Mapping, latency: Any) -> tuple[list, int | None]:
    """A run's or step's counters (one, failed, input, output and total tokens, credits) and
    the bucket of its `latency` (None: no latency)."""
    failed = 1 if values.get("status") == "failed" else 0
    counts: list[Any] = [1, failed, *[int(values.get(name) or 0) for name in TOKENS]]
    counts.append(credits_decimal(values.get("credits_charged")))
    return counts, None if latency is None else bucket_of(float(latency))


@dataclass
class Delta:
    """Differences to add: {(group, key, day): [count, failed, input, output, total, credits]}
    and {(group, key, day, bucket): count}."""

    counters: dict[tuple[str, str, date], list] = field(
        default_factory=lambda: defaultdict(lambda: [0, 0, 0, 0, 0, Decimal(0)])
    )
    buckets: dict[tuple[str, str, date, int], int] = field(default_factory=lambda: defaultdict(int))

    def _add(self, keys: Iterable[tuple[str, str]], values: Mapping, day: date, latency: Any,
             sign: int) -> None:  # fmt: skip
        counts, bucket = counters_of(values, latency)
        for group, key in keys:
            self.add_counts(group, key, day, counts, bucket, sign)

    def add_counts(self, group: str, key: str, day: date, counts: Sequence, bucket: int | None,
                   sign: int, runs: int = 1) -> None:  # fmt: skip
        """Add `sign` x `counts` (count, failed, tokens..., credits) to one row, and `runs` to
        its latency `bucket` (None: no latency)."""
        counter = self.counters[(group, key, day)]
        for index, value in enumerate(counts):
            counter[index] += sign * value
        if bucket is not None:
            self.buckets[(group, key, day, bucket)] += sign * runs

    def add_step(self, values: Mapping, *, sign: int = 1) -> None:
        keys = [("name", str(values["name"])[:255])]
        if values.get("tool_name"):
            keys.append(("tool", str(values["tool_name"])[:255]))
        if values.get("model_id"):
            keys.append(("model", str(values["model_id"])[:255]))
        self._add(keys, values, _day(values["started_at"]), values.get("duration_ms"), sign)

    def add_runs(self, runs: Iterable[Mapping], *, sign: int = 1) -> None:
        """Add (or take away) runs. This runs inside the request that records them, and a
        batch's runs mostly count under the same rows (one day, model, status, tools and
        conversation): runs that do are summed first, and their rows are found once."""
        alike: dict[tuple, tuple[Mapping, list, int]] = {}
        for values in runs:
            day = _day(values["created_at"])
            counts, bucket = counters_of(values, values.get("total_turn_latency_ms"))
            # Everything a run's rows are keyed by (RUN_GROUPS, run_contribution).
            signature = (
                day, bucket, values.get("status"), values.get("model_id"),
                *(values.get(group) for group in RUN_GROUPS),
                tuple(map(str, values.get("tool_names") or ())),
                tuple(map(str, values.get("failed_tool_names") or ())),
                values.get("user_id"), values.get("conversation_id"),
            )  # fmt: skip
            same = alike.get(signature)
            if same is None:
                alike[signature] = (values, counts, 1)
            else:
                first, total, number = same
                summed = [a + b for a, b in zip(total, counts, strict=True)]
                alike[signature] = (first, summed, number + 1)
        for (day, bucket, *_keys), (values, counts, number) in alike.items():
            for group in RUN_GROUPS:
                self.add_counts(group, values.get(group) or "", day, counts, bucket, sign, number)
            overview_rollup.run_contribution(
                self, values, day, sign, counts=counts, bucket=bucket, runs=number
            )

    def __bool__(self) -> bool:
        return any(any(values) for values in self.counters.values()) or any(self.buckets.values())


def step_values(step: Any) -> dict[str, Any]:
    """A step's contribution fields, from a row or a dict of field values."""
    if isinstance(step, Mapping):
        return {name: step.get(name) for name in STEP_FIELDS}
    return {name: getattr(step, name) for name in STEP_FIELDS}


def run_values(run: Any) -> dict[str, Any]:
    if isinstance(run, Mapping):
        return {name: run.get(name) for name in RUN_FIELDS}
    return {name: getattr(run, name) for name in RUN_FIELDS}


def steps_recorded(agent_id: str, steps: Sequence[Mapping], before: Sequence[Mapping]) -> None:
    """The rollup's differences for steps written as field values (OTLP): each as it is now
    in, each as it was (`steps_stored_values`, read before the write) out."""
    delta = Delta()
    for step in steps:
        delta.add_step(step_values(step))
    for step in before:
        delta.add_step(step, sign=-1)
    rollup_apply(agent_id, delta)


def steps_stored_values(agent_id: str, ids: list[str]) -> list[dict[str, Any]]:
    """The contribution fields of the Agent's stored steps among `ids` (about to be rewritten)."""
    if not ids:
        return []
    return list(RunStep.objects.filter(agent_id=agent_id, id__in=ids).values(*STEP_FIELDS))


def rows_deleted(agent_id: str, runs: QuerySet[Run]) -> list[str]:
    """Take the contributions of the Agent's `runs` and of their steps away; returns the runs'
    ids. Call in the transaction that deletes them, before it does (the retention purge): two
    reads on the indexes by run and one rollup statement (two when rows are left empty),
    whatever the rows."""
    delta = Delta()
    stored = list(runs.values("id", *RUN_FIELDS))
    ids = [run["id"] for run in stored]
    delta.add_runs(stored, sign=-1)
    if not ids:
        return ids
    steps = RunStep.objects.filter(agent_id=agent_id, run_id__in=ids).values(*STEP_FIELDS)
    for step in steps.iterator(chunk_size=5000):
        delta.add_step(step, sign=-1)
    rollup_apply(agent_id, delta)
    return ids


def _own_stripe() -> int:
    if connection.vendor != "postgresql":
        return 0
    connection.ensure_connection()
    return connection.connection.info.backend_pid % ROLLUP_STRIPES


def _insert_sql(table: str, keys: list[tuple[str, str]], counters: tuple[tuple[str, str], ...],
                rows: int, stripe_sql: str) -> str:  # fmt: skip
    """An upsert of `rows` rows of (keys..., counters...) adding the counters, into the stripe
    `stripe_sql` names. Names are the constants of `rollup_apply`, never input."""
    quote = connection.ops.quote_name
    width = len(keys) + len(counters)
    values = ", ".join(["(" + ", ".join(["%s"] * width) + ")"] * rows)
    aliases = [f"v{index}" for index in range(width)]
    selected = [f"{alias}::{kind}" for alias, (_name, kind) in zip(aliases, keys, strict=False)]
    selected.insert(len(keys), stripe_sql)
    selected += [
        f"{alias}::{kind}"
        for alias, (_name, kind) in zip(aliases[len(keys) :], counters, strict=True)
    ]
    columns = [quote(name) for name, _kind in keys + list(counters)]
    columns.insert(len(keys), "stripe")
    conflict = ", ".join([quote(name) for name, _kind in keys] + ["stripe"])
    additions = ", ".join(
        f"{quote(c)} = {table}.{quote(c)} + excluded.{quote(c)}" for c, _kind in counters
    )
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(selected)} "  # noqa: S608
        f"FROM (VALUES {values}) AS v({', '.join(aliases)}) "
        f"ON CONFLICT ({conflict}) DO UPDATE SET {additions}"
    )


_COUNTERS = ("count", "failed", *TOKENS, "credits")
_COUNTER_KINDS = (*((name, "bigint") for name in _COUNTERS[:-1]), ("credits", "numeric"))
_KEYS = [("agent_id", "text"), ("group", "text"), ("day", "date"), ("key", "text")]


def rollup_apply(agent_id: str, delta: Delta) -> None:
    """Add `delta` to the Agent's rows of one stripe — the first of its stripes no other
    recording in flight holds, claimed with the usage rollup's advisory locks — in one
    statement on PostgreSQL (the claim and both upserts), rows in key order (two recordings
    lock the rows they share in the same order); rows left holding nothing are removed."""
    counters = sorted((key, values) for key, values in delta.counters.items() if any(values))
    buckets = sorted((key, value) for key, value in delta.buckets.items() if value)
    if not counters and not buckets:
        return
    counter_rows = [[agent_id, group, day, key, *values] for (group, key, day), values in counters]
    bucket_rows = [[agent_id, group, day, key, bucket, value]
                   for (group, key, day, bucket), value in buckets]  # fmt: skip
    own = _own_stripe()
    if connection.vendor == "postgresql":
        lock = zlib.crc32(agent_id.encode()) - (1 << 31)
        parts = [
            "WITH claimed AS (SELECT coalesce((SELECT stripe FROM (SELECT (%s + i) %% %s AS "
            "stripe FROM generate_series(0, %s - 1) AS i) AS stripes WHERE "
            "pg_try_advisory_xact_lock(%s::integer, stripe::integer) LIMIT 1), %s) AS stripe)"
        ]
        params: list[Any] = [own, ROLLUP_STRIPES, ROLLUP_STRIPES, lock, own]
        # The groups counted by distinct key stay in stripe 0 (overview_rollup.UNSTRIPED).
        stripe_sql = (
            "(CASE WHEN v1 = ANY(%s) THEN 0 ELSE (SELECT stripe FROM claimed) END)::smallint"
        )
        if counter_rows:
            sql = _insert_sql(Rollup._meta.db_table, _KEYS, _COUNTER_KINDS, len(counter_rows),
                              stripe_sql)  # fmt: skip
            parts.append(f", counters AS ({sql}{rollup_counts.RETURNING_SQL})")
            params.append(list(overview_rollup.UNSTRIPED))  # stripe_sql's, before the rows
            params += [value for row in counter_rows for value in row]
            # The rows of the counted groups it inserts, counted (apps.activity.rollup_counts).
            parts.append(rollup_counts.INSERTED_SQL)
            params += [agent_id, overview_rollup.COUNTS, list(overview_rollup.COUNTED)]
        if bucket_rows:
            sql = _insert_sql(RollupLatency._meta.db_table, [*_KEYS, ("bucket", "smallint")],
                              (("count", "bigint"),), len(bucket_rows), stripe_sql)  # fmt: skip
            parts.append(f", latency AS ({sql})")
            params.append(list(overview_rollup.UNSTRIPED))
            params += [value for row in bucket_rows for value in row]
        parts.append(" SELECT stripe FROM claimed")
        with connection.cursor() as cursor:
            cursor.execute("".join(parts), params)
            stripe = cursor.fetchone()[0]
    else:
        stripe = own
        inserted = []
        for (group, key, day), values in counters:
            row, created = Rollup.objects.get_or_create(
                agent_id=agent_id, group=group, day=day, key=key, stripe=stripe
            )
            for name, value in zip(_COUNTERS, values, strict=True):
                setattr(row, name, getattr(row, name) + value)
            row.save()
            if created:
                inserted.append((group, day))
        rollup_counts.counts_add(agent_id, stripe, rollup_counts.counted(inserted))
        for (group, key, day, bucket), value in buckets:
            latency, _ = RollupLatency.objects.get_or_create(
                agent_id=agent_id, group=group, day=day, key=key, bucket=bucket, stripe=stripe
            )
            latency.count += value
            latency.save()
    counter_days = sorted({day for (_g, _k, day), values in counters if min(values) < 0})
    bucket_days = sorted({day for (_g, _k, day, _b), value in buckets if value < 0})
    if counter_days or bucket_days:
        _emptied_delete(agent_id, stripe, counter_days, bucket_days)


_EMPTIED_SQL = (
    "WITH counters AS (DELETE FROM activity_rollup WHERE agent_id = %s AND (stripe = %s OR "
    '(stripe = 0 AND "group" = ANY(%s))) AND day = ANY(%s) AND count = 0 AND failed = 0 AND input_tokens = 0 AND output_tokens = 0 '
    'AND total_tokens = 0 AND credits = 0 RETURNING "group", day), latency AS (DELETE FROM '
    "activity_rolluplatency WHERE agent_id = %s AND stripe = %s AND day = ANY(%s) AND count = 0) "
    'SELECT "group", day FROM counters'
)


def _emptied_delete(agent_id: str, stripe: int, counter_days: list, bucket_days: list) -> None:
    """Remove the stripe's rows left holding nothing on the days a difference took from (as
    a rebuild would never write them): one statement on PostgreSQL, and one more to count the
    removed rows of the counted groups (apps.activity.rollup_counts) when there are some."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                _EMPTIED_SQL,
                [
                    agent_id,
                    stripe,
                    list(overview_rollup.UNSTRIPED),
                    counter_days,
                    agent_id,
                    stripe,
                    bucket_days,
                ],  # fmt: skip
            )
            removed = rollup_counts.counted(cursor.fetchall())
        rollup_counts.counts_add(agent_id, stripe, Counter({k: -n for k, n in removed.items()}))
        return
    emptied = Rollup.objects.filter(
        agent_id=agent_id, count=0, failed=0, input_tokens=0, output_tokens=0,
        total_tokens=0, credits=0, day__in=counter_days,
    ).filter(Q(stripe=stripe) | Q(stripe=0, group__in=overview_rollup.UNSTRIPED))  # fmt: skip
    removed = rollup_counts.counted(emptied.values_list("group", "day"))
    emptied.delete()
    rollup_counts.counts_add(agent_id, stripe, Counter({k: -n for k, n in removed.items()}))
    RollupLatency.objects.filter(
        agent_id=agent_id, stripe=stripe, count=0, day__in=bucket_days
    ).delete()


def rollup_rebuild(*, agent_id: str) -> None:
    """Recompute an Agent's rollup from its steps and runs (stripe 0 only): in SQL on
    PostgreSQL (apps.activity.rollup_rebuild), row by row through `Delta` elsewhere."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            rollup_rebuild_sql([agent_id])
            return
        Rollup.objects.filter(agent_id=agent_id).delete()
        RollupLatency.objects.filter(agent_id=agent_id).delete()
        delta = Delta()
        for step in RunStep.objects.filter(agent_id=agent_id).values(*STEP_FIELDS).iterator():
            delta.add_step(step)
        delta.add_runs(Run.objects.filter(agent_id=agent_id).values(*RUN_FIELDS).iterator())
        rollup_apply(agent_id, delta)


# --- Reading ------------------------------------------------------------------------------------


@dataclass
class GroupFigures:
    key: str
    count: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    histogram: dict[int, int] = field(default_factory=dict)
    # {day: (count, failed, p95)} for the chart over time.
    days: dict[date, list] = field(default_factory=dict)

    @property
    def error_rate(self) -> float:
        return self.failed / self.count if self.count else 0.0

    def latency(self) -> tuple[float | None, float | None, float | None]:
        p50, p95, p99 = percentiles(self.histogram, (50, 95, 99))
        return p50, p95, p99


def rollup_read(
    *, agent_id: str, group: str, first_day: date, last_day: date, by_day: bool = False
) -> list[GroupFigures]:
    """Each key's figures over the days, most steps (runs) first: a range of the rollup's
    unique index per table, O(days x keys x buckets) rows whatever the steps."""
    figures: dict[str, GroupFigures] = {}
    rows = (
        Rollup.objects.filter(agent_id=agent_id, group=group, day__gte=first_day, day__lte=last_day)
        .values_list("key", "day", *_COUNTERS[:-1])
        .order_by()
    )
    for key, day, count, failed, input_tokens, output_tokens, total_tokens in rows:
        item = figures.setdefault(key, GroupFigures(key))
        item.count += count
        item.failed += failed
        item.input_tokens += input_tokens
        item.output_tokens += output_tokens
        item.total_tokens += total_tokens
        if by_day:
            day_figures = item.days.setdefault(day, [0, 0, {}])
            day_figures[0] += count
            day_figures[1] += failed
    # Summed in the database (stripes, and days unless they are asked): a period's histogram
    # is keys x buckets rows, not keys x days x buckets.
    columns = ("key", "day", "bucket") if by_day else ("key", "bucket")
    latency = (
        RollupLatency.objects.filter(
            agent_id=agent_id, group=group, day__gte=first_day, day__lte=last_day
        )
        .values_list(*columns)
        .annotate(Sum("count"))
        .order_by()
    )
    for row in latency:
        key, bucket, count = row[0], row[-2], row[-1]
        item = figures.setdefault(key, GroupFigures(key))
        item.histogram[bucket] = item.histogram.get(bucket, 0) + count
        if by_day:
            day_histogram = item.days.setdefault(row[1], [0, 0, {}])[2]
            day_histogram[bucket] = day_histogram.get(bucket, 0) + count
    out = [item for item in figures.values() if item.count > 0]
    out.sort(key=lambda item: (-item.count, item.key))
    return out


MAX_DAYS = 366
DEFAULT_DAYS = 30
QUERY_NAMES = frozenset({"group", "from", "to", "by_day"})


@dataclass(frozen=True)
class AnalyticsQuery:
    group: str
    first_day: date
    last_day: date
    by_day: bool


def query_parse(params: Mapping, *, groups: tuple[str, ...], today: date) -> AnalyticsQuery:
    """`group` (one of `groups`, default the first), `from` / `to` (UTC days, inclusive;
    default the last 30 days to today, at most 366 days), `by_day` (true/false); any other
    parameter or a malformed value is a BadRequest naming it."""
    unknown_query_refuse(params, QUERY_NAMES, what="operation")
    group = params.get("group") or groups[0]
    if group not in groups:
        raise BadRequest(f"group must be one of: {', '.join(groups)}; got {group[:64]!r}.")
    days = {}
    for name in ("from", "to"):
        raw = params.get(name)
        if raw:
            try:
                days[name] = date.fromisoformat(raw)
            except ValueError:
                raise BadRequest(f"{name} must be a date (YYYY-MM-DD); got {raw[:64]!r}.") from None
    last = days.get("to", today)
    first = days.get("from", last - timedelta(days=DEFAULT_DAYS - 1))
    if first > last:
        raise BadRequest("from is after to.")
    if (last - first).days + 1 > MAX_DAYS:
        raise BadRequest(f"The period is at most {MAX_DAYS} days.")
    by_day = params.get("by_day", "false")
    if by_day not in ("true", "false"):
        raise BadRequest(f"by_day must be true or false; got {by_day[:64]!r}.")
    return AnalyticsQuery(group, first, last, by_day == "true")


def figures_to_dict(item: GroupFigures, *, by_day: bool) -> dict[str, Any]:
    p50, p95, p99 = item.latency()
    out: dict[str, Any] = {
        "key": item.key,
        "count": item.count,
        "failed": item.failed,
        "error_rate": round(item.error_rate, 6),
        "latency_ms": {"p50": p50, "p95": p95, "p99": p99},
        "input_tokens": item.input_tokens,
        "output_tokens": item.output_tokens,
        "total_tokens": item.total_tokens,
    }
    if by_day:
        out["days"] = [
            {
                "day": day.isoformat(),
                "count": count,
                "failed": failed,
                "latency_ms": dict(
                    zip(("p50", "p95", "p99"), percentiles(histogram, (50, 95, 99)), strict=True)
                ),
            }
            for day, (count, failed, histogram) in sorted(item.days.items())
        ]
    return out
