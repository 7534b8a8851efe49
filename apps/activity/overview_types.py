"""What the Overview shows (apps.activity.overview): its scope — a range of UTC days and the
runs' filters — and its figures, whichever source computes them (the rollups of
apps.activity.overview_rollup, or the runs in apps.activity.overview_runs)."""

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from django.utils import timezone

from apps.activity.models import Run, RunStatus

PERIODS = (7, 30, 90)
DEFAULT_PERIOD = 30
MAX_RANGE_DAYS = 366
# Longer periods are charted by week (apps.activity.overview_charts).
DAILY_UP_TO = 92


@dataclass(frozen=True)
class OverviewScope:
    """What the Overview shows: the days from `first_day` to `last_day` (both included, UTC)
    and the runs' filters (`model_id`, `user_id`, `status`; empty ones are left out)."""

    first_day: date
    last_day: date
    model_id: str = ""
    user_id: str = ""
    status: str = ""

    @classmethod
    def last_days(cls, days: int, **filters) -> "OverviewScope":
        today = timezone.now().date()
        return cls(first_day=today - timedelta(days=days - 1), last_day=today, **filters)

    @property
    def days(self) -> int:
        return (self.last_day - self.first_day).days + 1

    def day_list(self) -> list[date]:
        return [self.first_day + timedelta(days=i) for i in range(self.days)]

    @property
    def filtered(self) -> bool:
        return bool(self.model_id or self.user_id or self.status)

    @property
    def since(self) -> datetime:
        return datetime(*self.first_day.timetuple()[:3], tzinfo=UTC)

    @property
    def until(self) -> datetime:
        return self.since + timedelta(days=self.days)

    def previous(self) -> "OverviewScope":
        """The period of equal length just before, with the same filters."""
        return OverviewScope(
            first_day=self.first_day - timedelta(days=self.days),
            last_day=self.first_day - timedelta(days=1),
            model_id=self.model_id,
            user_id=self.user_id,
            status=self.status,
        )

    def runs(self, agent_id: str):
        runs = Run.objects.filter(agent_id=agent_id, created_at__gte=self.since)
        runs = runs.filter(created_at__lt=self.until)
        for name in ("model_id", "user_id", "status"):
            value = getattr(self, name)
            if value:
                runs = runs.filter(**{name: value})
        return runs

    def sql_conditions(self, agent_id: str) -> tuple[str, list]:
        """The same conditions as `runs()` for the hand-written queries below."""
        clauses = ["agent_id = %s", "created_at >= %s", "created_at < %s"]
        params: list = [agent_id, self.since, self.until]
        for name in ("model_id", "user_id", "status"):  # column names: constants, not input
            value = getattr(self, name)
            if value:
                clauses.append(f"{name} = %s")
                params.append(value)
        return " AND ".join(clauses), params


STATUS_ORDER = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.ABORTED, RunStatus.STREAMING)


@dataclass
class Overview:
    days: list[date]
    runs_by_status: dict[str, list[int]]
    tokens: list[int]
    credits: list[float]
    # {day: {bucket: runs}} (apps.common.latency), read off as p50 / p95 below.
    histograms: dict[date, dict[int, int]]
    active_users: list[int]
    conversations: list[int]
    # runs, failed, tokens, credits, users (then failure_rate, p50, p95 added).
    totals: dict = field(default_factory=dict)
    top_tools: list[tuple[str, int]] = field(default_factory=list)
    failing_tools: list[tuple[str, int]] = field(default_factory=list)
    # The same headline numbers over the period of equal length just before, and the change.
    previous: dict = field(default_factory=dict)
    changes: dict = field(default_factory=dict)
    # (model or None, runs, credits), most credits first.
    credits_by_model: list[tuple[str | None, int, float]] = field(default_factory=list)
    # The end users who spent most credits in the period, most first.
    credits_by_user: list["UserSpend"] = field(default_factory=list)
    # Each day's p50 / p95 for a period charted by day (up to DAILY_UP_TO days), else empty.
    p50: list[float | None] = field(default_factory=list)
    p95: list[float | None] = field(default_factory=list)


@dataclass(frozen=True)
class UserSpend:
    user_id: str
    name: str
    runs: int
    tokens: int
    credits: float


TOP_USERS = 8


TOP_TOOLS = 8


@dataclass
class People:
    """The Overview's figures about distinct end users and conversations: per day, over the
    period and the period before, and the users who spent most."""

    active_users: list[int]
    conversations: list[int]
    users: int
    previous_users: int
    credits_by_user: list[UserSpend]


def top_tools(counts: dict[str, int]) -> list[tuple[str, int]]:
    """The TOP_TOOLS tools with the highest counts (none at 0), ties by name."""
    ranked = sorted(((name, n) for name, n in counts.items() if n > 0), key=lambda t: (-t[1], t[0]))
    return ranked[:TOP_TOOLS]


def models_ranked(rows: dict[str, list]) -> list[tuple[str | None, int, float]]:
    """{model or "": [runs, credits]} as (model or None, runs, credits), most credits first."""
    out = [(model or None, n, round(float(credits), 4)) for model, (n, credits) in rows.items()]
    out.sort(key=lambda row: (-row[2], -row[1], row[0] or ""))
    return out


def users_ranked(rows: list[tuple[str, int, int, float]], names: dict[str, str]) -> list[UserSpend]:
    """The TOP_USERS of (user id, runs, tokens, credits) by credits, then runs, then id."""
    rows = sorted(rows, key=lambda row: (-row[3], -row[1], row[0]))[:TOP_USERS]
    return [
        UserSpend(
            user_id=user_id,
            name=names.get(user_id, user_id),
            runs=n,
            tokens=tokens,
            credits=round(float(credits), 4),
        )
        for user_id, n, tokens, credits in rows
    ]
