"""Sealing closed months: the coarser latency tier that long periods of GET /v1/usage read.

A month is sealed two days after it closed (the trigger of migration 0004 counts, from then
on, every change to its daily latency rows in LatencyMonth.version). Sealing a workspace's
month replaces its MonthlyLatency and WorkspaceDailyLatency rows with the sums of its
DailyLatency rows and records the version it read first: a change that lands while sealing
runs leaves the version ahead of `built_version`, so reads keep using the daily rows until the
next seal. The recording path never writes here. PostgreSQL only (SQLite reads daily rows).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import date

from django.db import connection, transaction
from django.utils import timezone

from apps.usage.days import next_month
from apps.usage.models import (
    LatencyMonth,
    MonthlyLatency,
    WorkspaceDailyLatency,
    WorkspaceDayPercentiles,
)

# A month is sealed once this many days have passed since its last day ended.
SEAL_AFTER_DAYS = 2

# (workspace, month) pairs with daily rows in months closed long enough, whose seal is missing
# or behind the daily rows. One pass over usage_dailyusage (Agent-days, no buckets).
_UNSEALED_SQL = """
SELECT DISTINCT usage.workspace_id, date_trunc('month', usage.day)::date AS month
FROM usage_dailyusage usage
WHERE usage.day < %s
EXCEPT
SELECT workspace_id, month FROM usage_latencymonth WHERE built_version = version
ORDER BY 2, 1
"""
_MONTHLY_SQL = """
INSERT INTO usage_monthlylatency (agent_id, workspace_id, month, bucket, runs)
SELECT agent_id, workspace_id, %s, bucket, sum(runs) FROM usage_dailylatency
WHERE workspace_id = %s AND day >= %s AND day < %s
GROUP BY agent_id, workspace_id, bucket HAVING sum(runs) <> 0
"""
_WORKSPACE_DAILY_SQL = """
INSERT INTO usage_workspacedailylatency (workspace_id, day, bucket, runs)
SELECT workspace_id, day, bucket, sum(runs) FROM usage_dailylatency
WHERE workspace_id = %s AND day >= %s AND day < %s
GROUP BY workspace_id, day, bucket HAVING sum(runs) <> 0
"""

# Each day's p50 and p95 bucket over those rows, by the nearest-rank rule of
# apps.usage.latency.percentiles (the same condition as selectors.percentiles._PERCENTILE_BUCKETS).
_DAY_PERCENTILES_SQL = """
INSERT INTO usage_workspacedaypercentiles (workspace_id, day, p50_bucket, p95_bucket)
SELECT workspace_id, day,
    min(bucket) FILTER (WHERE seen * 100 >= 50 * total),
    min(bucket) FILTER (WHERE seen * 100 >= 95 * total)
FROM (
    SELECT workspace_id, day, bucket,
        sum(runs) OVER (PARTITION BY day ORDER BY bucket) AS seen,
        sum(runs) OVER (PARTITION BY day) AS total
    FROM usage_workspacedailylatency
    WHERE workspace_id = %s AND day >= %s AND day < %s AND runs > 0
) ranked
GROUP BY workspace_id, day
"""


@dataclass
class Sealing:
    sealed: int = 0
    finished: bool = True


def seal_cutoff() -> date:
    """Months ending before this day may be sealed (by the database's clock, the one the
    trigger reads)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT (now() AT TIME ZONE 'UTC')::date - %s", [SEAL_AFTER_DAYS])
        today_less_margin = cursor.fetchone()[0]
    return today_less_margin.replace(day=1)


def month_seal(*, workspace_id: str, month: date) -> None:
    """Build one workspace's tier rows for one closed month from its daily rows."""
    end = next_month(month)
    with transaction.atomic():
        # The row lock serialises two sealers of the same month; the trigger of a late write
        # waits for it too, and then moves the version past what was built.
        seal, _created = LatencyMonth.objects.get_or_create(workspace_id=workspace_id, month=month)
        seal = LatencyMonth.objects.select_for_update().get(pk=seal.pk)
        version = seal.version
        MonthlyLatency.objects.filter(workspace_id=workspace_id, month=month).delete()
        for model in (WorkspaceDailyLatency, WorkspaceDayPercentiles):
            model.objects.filter(workspace_id=workspace_id, day__gte=month, day__lt=end).delete()
        with connection.cursor() as cursor:
            cursor.execute(_MONTHLY_SQL, [month, workspace_id, month, end])
            cursor.execute(_WORKSPACE_DAILY_SQL, [workspace_id, month, end])
            cursor.execute(_DAY_PERCENTILES_SQL, [workspace_id, month, end])
        LatencyMonth.objects.filter(pk=seal.pk).update(
            built_version=version, built_at=timezone.now()
        )


def months_seal(*, time_budget_seconds: float = 20.0) -> Sealing:
    """Seal every closed month whose seal is missing or stale, oldest first, until none is
    left or the time budget is spent (`finished` False: the next run goes on)."""
    result = Sealing()
    if connection.vendor != "postgresql":
        return result
    deadline = time.monotonic() + time_budget_seconds
    with connection.cursor() as cursor:
        cursor.execute(_UNSEALED_SQL, [seal_cutoff()])
        unsealed = cursor.fetchall()
    for workspace_id, month in unsealed:
        if time.monotonic() > deadline:
            result.finished = False
            break
        month_seal(workspace_id=workspace_id, month=month)
        result.sealed += 1
    return result
