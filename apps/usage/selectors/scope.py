"""What a usage read covers: its period (`from`, `to` and `granularity`, checked here so the API
answers 400 and the page shows the same message) and the Agent it names."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, timedelta

from django.utils import timezone

from apps.common.errors import BadRequest, NotFound
from apps.usage.days import month_start, utc_day
from apps.workspaces.models import Agent, Workspace

GRANULARITIES = ("day", "week")
MAX_PERIOD_DAYS = 366
EARLIEST_DAY = date(1970, 1, 1)
LATEST_DAY = date(9998, 12, 31)
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Period:
    start: date  # first day, included
    end: date  # last day, included
    granularity: str = "day"

    @property
    def days(self) -> list[date]:
        return [self.start + timedelta(days=i) for i in range((self.end - self.start).days + 1)]

    def buckets(self) -> list[tuple[date, date]]:
        """(first, last) day of each series entry: days, or ISO weeks (Monday to Sunday) cut
        to the period."""
        if self.granularity == "day":
            return [(day, day) for day in self.days]
        result = []
        first = self.start
        while first <= self.end:
            last = min(first + timedelta(days=6 - first.weekday()), self.end)
            result.append((first, last))
            first = last + timedelta(days=1)
        return result


def _day(name: str, raw: str) -> date:
    if not _DAY.fullmatch(raw):
        raise BadRequest(f"{name}: Must be a date written YYYY-MM-DD; got {raw[:40]!r}.")
    try:
        value = date.fromisoformat(raw)
    except ValueError:
        raise BadRequest(f"{name}: {raw!r} is not a calendar date.") from None
    if not EARLIEST_DAY <= value <= LATEST_DAY:
        raise BadRequest(f"{name}: Must be between 1970-01-01 and 9998-12-31.")
    return value


def period_parse(params: Mapping[str, str], *, today: date | None = None) -> Period:
    """The period of `from`/`to` (UTC dates, both included) and `granularity`.

    Neither date: the current month up to today. Only `from`: up to today. Only `to`: from the
    first day of its month. At most 366 days.
    """
    today = today or utc_day(timezone.now())
    raw_from, raw_to = params.get("from") or None, params.get("to") or None
    end = _day("to", raw_to) if raw_to else today
    start = _day("from", raw_from) if raw_from else month_start(end)
    if start > end:
        raise BadRequest(f"from: {start} is after to ({end}); from must not be after to.")
    if (end - start).days + 1 > MAX_PERIOD_DAYS:
        raise BadRequest(f"to: A period covers at most {MAX_PERIOD_DAYS} days.")
    granularity = params.get("granularity") or "day"
    if granularity not in GRANULARITIES:
        raise BadRequest(f"granularity: Must be one of day, week; got {granularity[:40]!r}.")
    return Period(start=start, end=end, granularity=granularity)


def usage_agent_get(*, workspace: Workspace, agent_id: str) -> Agent:
    """An Agent of the workspace (active or archived: archived Agents' usage still counts)."""
    agent = None
    if agent_id and len(agent_id) <= 64 and "\x00" not in agent_id:
        agent = Agent.objects.filter(workspace=workspace, pk=agent_id).first()
    if agent is None:
        raise NotFound(f"No Agent {agent_id[:64]!r} in this workspace.")
    return agent
