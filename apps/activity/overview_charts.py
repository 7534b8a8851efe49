"""The Overview's six charts (apps.activity.charts) from its figures (apps.activity.overview).

Up to DAILY_UP_TO days a chart has a mark per day; past that, a mark per ISO week (Monday to
Sunday, the first and last clipped to the period): a year is 53 marks a chart instead of 365,
each wide enough to hover and click, and the page a seventh of the markup. A week's runs,
tokens and credits are the sums of its days, its latency p50 / p95 those of its days' merged
histograms (the rule of apps.common.latency), its active users and conversations the average
per day (distinct counts do not add up over days). Each mark opens the runs of its day or week.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from apps.activity import charts
from apps.activity.overview_types import DAILY_UP_TO, Overview
from apps.common.latency import merged, percentiles

__all__ = ["DAILY_UP_TO", "Bucket", "bucket_figures", "buckets_of", "overview_charts"]


@dataclass(frozen=True)
class Bucket:
    """The days a chart mark stands for: positions `start` to `stop` (excluded) of the days."""

    first: date
    last: date
    start: int
    stop: int

    @property
    def name(self) -> str:
        if self.first == self.last:
            return self.first.isoformat()
        return f"{self.first.isoformat()} – {self.last.isoformat()}"

    @property
    def days(self) -> int:
        return self.stop - self.start


def buckets_of(days: Sequence[date]) -> list[Bucket]:
    """A bucket per day up to DAILY_UP_TO days, else per ISO week clipped to the days."""
    if len(days) <= DAILY_UP_TO:
        return [Bucket(day, day, i, i + 1) for i, day in enumerate(days)]
    out = []
    start = 0
    while start < len(days):
        stop = min(len(days), start + 7 - days[start].weekday())
        out.append(Bucket(days[start], days[stop - 1], start, stop))
        start = stop
    return out


def _sums(values: Sequence[float], buckets: list[Bucket], decimals: int | None = None) -> list:
    sums = [sum(values[b.start : b.stop]) for b in buckets]
    return sums if decimals is None else [round(value, decimals) for value in sums]


def _averages(values: Sequence[int], buckets: list[Bucket]) -> list[float]:
    return [round(sum(values[b.start : b.stop]) / b.days, 1) for b in buckets]


def _latency(data: Overview, buckets: list[Bucket]) -> dict[str, list]:
    if all(b.days == 1 for b in buckets):
        return {"p50": data.p50, "p95": data.p95}
    out: dict[str, list] = {"p50": [], "p95": []}
    for b in buckets:
        histogram = merged([data.histograms.get(day, {}) for day in data.days[b.start : b.stop]])
        p50, p95 = percentiles(histogram, (50, 95))
        out["p50"].append(p50)
        out["p95"].append(p95)
    return out


def bucket_figures(data: Overview, buckets: list[Bucket]) -> dict[str, Any]:
    """Each chart's series, a value per bucket: sums, percentiles of the merged histograms,
    and for distinct counts the average per day when buckets are longer than a day."""
    daily = all(b.days == 1 for b in buckets)
    people = (lambda values: list(values)) if daily else (lambda values: _averages(values, buckets))
    return {
        "runs_by_status": {
            name: _sums(values, buckets) for name, values in data.runs_by_status.items()
        },
        "tokens": _sums(data.tokens, buckets),
        "credits": _sums(data.credits, buckets, 2),
        "latency": _latency(data, buckets),
        "active_users": people(data.active_users),
        "conversations": people(data.conversations),
    }


def overview_charts(data: Overview, runs: Callable[..., str]) -> dict:
    """The charts' part of the page's context: each chart, the bucket's name ("day" or
    "week"); `runs(**params)` is the link to the runs of the period narrowed by `params`."""
    buckets = buckets_of(data.days)
    weekly = len(data.days) > DAILY_UP_TO
    per = "week" if weekly else "day"
    figures = bucket_figures(data, buckets)
    starts = [b.first for b in buckets]
    links = [runs(**{"from": b.first.isoformat(), "to": b.last.isoformat()}) for b in buckets]
    common: dict[str, Any] = {
        "links": links, "names": [b.name for b in buckets], "heading": per.capitalize()
    }  # fmt: skip
    people: dict[str, Any] = {"decimals": 1, **common} if weekly else common
    average = ", weekly average" if weekly else ""
    return {
        "per": per,
        "daily_up_to": DAILY_UP_TO,
        "runs_chart": charts.runs_by_status(
            starts, figures["runs_by_status"], f"Runs per {per} by status", **common
        ),
        "status_legend": charts.legend(list(data.runs_by_status)),
        "tokens_chart": charts.bars(
            starts, figures["tokens"], f"Tokens per {per}", unit="tokens", **common
        ),
        "credits_chart": charts.bars(
            starts,
            figures["credits"],
            f"Credits per {per}",
            unit="credits",
            **{**common, "decimals": 2},
        ),  # fmt: skip
        "latency_chart": charts.lines(
            starts,
            figures["latency"],
            f"Turn latency p50 and p95 per {per}",
            unit="ms",
            **{**common, "links": [f"{link}&sort=latency" for link in links]},
        ),  # fmt: skip
        "users_chart": charts.bars(
            starts,
            figures["active_users"],
            f"Active users per day{average}",
            unit="users",
            **people,
        ),  # fmt: skip
        "conversations_chart": charts.bars(
            starts,
            figures["conversations"],
            f"Conversations with runs per day{average}",
            unit="conversations",
            **people,
        ),  # fmt: skip
    }
