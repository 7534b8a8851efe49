"""Reading the analytics rollup: each key's figures over a period (counts, errors, tokens,
latency percentiles, per day when asked), and the query a request may make of it."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from django.db.models import Sum

from apps.activity.analytics.rollup import COUNTERS
from apps.activity.models import Rollup, RollupLatency
from apps.api.pagination import unknown_query_refuse
from apps.common.errors import BadRequest
from apps.common.latency import percentiles


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
        .values_list("key", "day", *COUNTERS[:-1])
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
