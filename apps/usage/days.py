"""UTC days and months, as the rollup files runs and the credit limit counts credits."""

from datetime import UTC, date, datetime, timedelta


def utc_day(moment: datetime) -> date:
    return moment.astimezone(UTC).date()


def month_start(day: date) -> date:
    return day.replace(day=1)


def next_month(day: date) -> date:
    return (day.replace(day=28) + timedelta(days=4)).replace(day=1)
