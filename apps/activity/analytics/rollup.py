"""Writing the analytics rollup: a `Delta` added in one statement on a claimed stripe, rows
left holding nothing removed, the contributions of deleted rows taken away, and the rebuild
from the rows."""

import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import connection, transaction
from django.db.models import Q, QuerySet

from apps.activity import overview_rollup, rollup_counts
from apps.activity.analytics.contributions import (
    RUN_FIELDS,
    STEP_FIELDS,
    TOKENS,
    Delta,
)
from apps.activity.models import Rollup, RollupLatency, Run, RunStep
from apps.activity.rollup_rebuild import rollup_rebuild_sql
from apps.usage.models import ROLLUP_STRIPES


def steps_recorded(agent_id: str, steps: Sequence[Mapping], before: Sequence[Mapping]) -> None:
    """The rollup's differences for steps written as field values (OTLP): each as it is now
    in, each as it was (`steps_stored_values`, read before the write) out."""
    delta = Delta()
    delta.add_steps(steps)
    delta.add_steps(before, sign=-1)
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
    delta.add_steps(steps.iterator(chunk_size=5000), sign=-1)
    rollup_apply(agent_id, delta)
    return ids


def _own_stripe() -> int:
    if connection.vendor != "postgresql":
        return 0
    connection.ensure_connection()
    return connection.connection.info.backend_pid % ROLLUP_STRIPES


def _insert_sql(table: str, keys: list[tuple[str, str]], counters: tuple[tuple[str, str], ...],
                stripe_sql: str) -> str:  # fmt: skip
    """An upsert of rows of (keys..., counters...) adding the counters, into the stripe
    `stripe_sql` names, the rows given as one array a column (`_columns`), taken in their
    order. Names are the constants of `rollup_apply`, never input.

    Arrays, not a VALUES list of placeholders: the statement's text stays the same whatever the
    rows, so psycopg converts it once (a batch of 100 end users' runs has 300-odd rows, whose
    placeholders psycopg parsed anew in every statement: 10 ms of a 26 ms batch)."""
    quote = connection.ops.quote_name
    width = len(keys) + len(counters)
    aliases = [f"v{index}" for index in range(width)]
    arrays = ", ".join(f"%s::{kind}[]" for _name, kind in keys + list(counters))
    selected = aliases[: len(keys)] + [stripe_sql] + aliases[len(keys) :]
    columns = [quote(name) for name, _kind in keys + list(counters)]
    columns.insert(len(keys), "stripe")
    conflict = ", ".join([quote(name) for name, _kind in keys] + ["stripe"])
    additions = ", ".join(
        f"{quote(c)} = {table}.{quote(c)} + excluded.{quote(c)}" for c, _kind in counters
    )
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(selected)} "  # noqa: S608
        f"FROM unnest({arrays}) WITH ORDINALITY AS v({', '.join(aliases)}, n) ORDER BY n "
        f"ON CONFLICT ({conflict}) DO UPDATE SET {additions}"
    )


def _columns(rows: list[list]) -> list[list]:
    """Rows as one list a column: `_insert_sql`'s arrays."""
    return [list(column) for column in zip(*rows, strict=True)]


# The counters of a rollup row, in the order a `Delta` holds them.
COUNTERS = ("count", "failed", *TOKENS, "credits")
_COUNTER_KINDS = (*((name, "bigint") for name in COUNTERS[:-1]), ("credits", "numeric"))
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
            sql = _insert_sql(Rollup._meta.db_table, _KEYS, _COUNTER_KINDS, stripe_sql)
            parts.append(f", counters AS ({sql}{rollup_counts.RETURNING_SQL})")
            params.append(list(overview_rollup.UNSTRIPED))  # stripe_sql's, before the rows
            params += _columns(counter_rows)
            # The rows of the counted groups it inserts, counted (apps.activity.rollup_counts).
            parts.append(rollup_counts.INSERTED_SQL)
            params += [agent_id, overview_rollup.COUNTS, list(overview_rollup.COUNTED)]
        if bucket_rows:
            sql = _insert_sql(RollupLatency._meta.db_table, [*_KEYS, ("bucket", "smallint")],
                              (("count", "bigint"),), stripe_sql)  # fmt: skip
            parts.append(f", latency AS ({sql})")
            params.append(list(overview_rollup.UNSTRIPED))
            params += _columns(bucket_rows)
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
            for name, value in zip(COUNTERS, values, strict=True):
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
        delta.add_steps(RunStep.objects.filter(agent_id=agent_id).values(*STEP_FIELDS).iterator())
        delta.add_runs(Run.objects.filter(agent_id=agent_id).values(*RUN_FIELDS).iterator())
        rollup_apply(agent_id, delta)
