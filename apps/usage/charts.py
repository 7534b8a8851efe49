"""The Usage page's charts, in the frame the Overview draws in too (apps.common.charts).

Two charts, each on its own axis: the credits of each day (bars), and the month to date (the
running total of the day's month from the period's first day, which restarts on the 1st: what
the limit applies to)
against the limit (a solid line) and its 80 % (a dashed one). Drawn on one axis, the daily bars
were flattened under the month's total.
"""

from collections.abc import Sequence
from datetime import date
from decimal import Decimal

from django.utils.safestring import SafeString

from apps.common.charts import Reference, bars, lines


def month_to_date(
    days: Sequence[date], credits: Sequence[float], *, today: date | None = None
) -> list[float | None]:
    """The running total of each month's credits; no value after `today` (the line stops
    there rather than running flat through days that have not happened)."""
    totals: list[float | None] = []
    running = 0.0
    for i, day in enumerate(days):
        if today is not None and day > today:
            totals.append(None)
            continue
        if i == 0 or day.day == 1:
            running = 0.0
        running += credits[i]
        totals.append(round(running, 2))
    return totals


def credits_per_day(
    days: Sequence[date], credits: Sequence[float], *, links: Sequence[str]
) -> SafeString:
    return bars(days, credits, "Credits per day", unit="credits", links=links, decimals=2)


def credits_against_limit(
    days: Sequence[date],
    credits: Sequence[float],
    limit: Decimal | None,
    *,
    links: Sequence[str],
    today: date | None = None,
) -> SafeString:
    references = []
    if limit is not None:
        references = [
            Reference(float(limit), "limit-line", "Limit"),
            Reference(float(limit) * 0.8, "limit-line-80", "80 % of the limit"),
        ]
    return lines(
        days,
        {"month to date": month_to_date(days, credits, today=today)},
        "Credits this month so far against the monthly limit",
        unit="credits",
        links=links,
        decimals=2,
        references=references,
    )
