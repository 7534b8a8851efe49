"""Reads of scores and score configs, shared by the API and the console: always the Agent first."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db.models import Avg, Count, Q, QuerySet
from django.db.models.functions import TruncDate
from django.utils.dateparse import parse_date, parse_datetime

from apps.activity.models import Conversation
from apps.api.pagination import unknown_query_refuse
from apps.common.errors import BadRequest, NotFound
from apps.common.keyset import Keyset
from apps.scores.models import (
    FEEDBACK_NAME,
    ID_MAX_LENGTH,
    DataType,
    Score,
    ScoreConfig,
    Source,
)
from apps.workspaces.models import Agent

SCORE_KEYSET = Keyset("scores", "created_at", descending=True)
CONFIG_KEYSET = Keyset("score_configs", "name", descending=False)

# GET /v1/scores: the filters, then the page's own parameters; anything else is a 400.
SCORE_FILTERS = {
    "run_id": "Only scores of this run (its own, its steps' and its messages').",
    "step_id": "Only scores of this step of a run.",
    "conversation_id": "Only scores within this conversation (of it, its messages and runs).",
    "message_id": "Only scores of this message.",
    "name": "Only scores with this name.",
    "source": "Only scores from this source: api, end_user or console.",
    "data_type": "Only scores of this data type: numeric, categorical or boolean.",
    "created_after": "Only scores created at or after this date-time.",
    "created_before": "Only scores created before this date-time.",
}
PAGE_PARAMS = ("limit", "after")
CONFIG_FILTERS = {"archived": "true: only archived configs; false (default): only active ones."}


def _time(name: str, raw: str) -> datetime:
    value = None
    try:
        value = parse_datetime(raw)
        if value is None and (day := parse_date(raw)) is not None:
            value = datetime(day.year, day.month, day.day)
    except ValueError:
        value = None
    if value is None:
        raise BadRequest(f"{name} must be an ISO 8601 date or date-time; got {raw!r}.")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise BadRequest(f"{name} is out of range; got {raw!r}.") from None


def params_check(params, allowed) -> None:
    """Unknown query parameters are refused, named: a misspelt filter must not look applied."""
    unknown_query_refuse(params, allowed)


def score_filters_parse(params) -> dict:
    """Validated filters of the scores list (absent or empty ones left out)."""
    values: dict = {}
    for name in SCORE_FILTERS:
        raw = params.get(name)
        if raw is None or raw == "":
            continue
        if "\x00" in raw:
            raise BadRequest(f"{name} must not contain NUL characters.")
        if name == "source" and raw not in Source.values:
            raise BadRequest(f"source must be one of: {', '.join(Source.values)}; got {raw!r}.")
        if name == "data_type" and raw not in DataType.values:
            raise BadRequest(
                f"data_type must be one of: {', '.join(DataType.values)}; got {raw!r}."
            )
        if name.endswith("_id") and len(raw) > ID_MAX_LENGTH:
            raise BadRequest(f"{name} is too long (at most {ID_MAX_LENGTH} characters).")
        if len(raw) > 255:
            raise BadRequest(f"{name} is too long (at most 255 characters).")
        values[name] = _time(name, raw) if name.startswith("created_") else raw
    return values


def score_list(*, agent: Agent, filters: dict | None = None) -> QuerySet[Score]:
    """An Agent's scores matching `filters` (score_filters_parse's, or the console's with
    `value`), unordered: the keyset orders them."""
    filters = filters or {}
    queryset = Score.objects.filter(agent=agent)
    for name in (
        "run_id",
        "step_id",
        "conversation_id",
        "message_id",
        "name",
        "source",
        "data_type",
    ):
        if name in filters:
            queryset = queryset.filter(**{name: filters[name]})
    if "created_after" in filters:
        queryset = queryset.filter(created_at__gte=filters["created_after"])
    if "created_before" in filters:
        queryset = queryset.filter(created_at__lt=filters["created_before"])
    if filters.get("value") not in (None, ""):
        queryset = queryset.filter(value_condition(filters["value"]))
    return queryset


def value_condition(raw: str, prefix: str = "") -> Q:
    """The console's value filter: `true`/`false` for booleans, a number (or `>=0.5`, `<3`)
    for numeric scores, else a category."""
    text = raw.strip()
    lowered = text.lower()
    if lowered in ("true", "false", "up", "down", "👍", "👎"):
        return Q(**{f"{prefix}boolean_value": lowered in ("true", "up", "👍")})
    for op, lookup in ((">=", "gte"), ("<=", "lte"), (">", "gt"), ("<", "lt"), ("=", "exact")):
        if text.startswith(op):
            number = _number(text[len(op) :])
            if number is None:
                raise BadRequest(f"Score value {raw!r}: a number must follow {op}.")
            return Q(**{f"{prefix}number_value__{lookup}": number})
    number = _number(text)
    if number is not None:
        return Q(**{f"{prefix}number_value": number}) | Q(**{f"{prefix}string_value": text})
    return Q(**{f"{prefix}string_value": text})


def _number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def score_get(*, agent: Agent, score_id: str) -> Score:
    score = (
        Score.objects.filter(agent=agent, id=score_id).first()
        if 0 < len(score_id) <= ID_MAX_LENGTH and "\x00" not in score_id
        else None
    )
    if score is None:
        raise NotFound(f"No score {score_id!r} of this Agent.")
    return score


def scores_of_run(*, agent: Agent, run_id: str) -> list[Score]:
    """A run's scores (its own, its steps' and its messages'), newest first."""
    return list(
        Score.objects.filter(agent=agent, run_id=run_id).order_by("-created_at", "-id")[:200]
    )


def scores_of_conversation(*, agent: Agent, conversation_id: str) -> list[Score]:
    """Every score within a conversation (of it, its messages, its runs and their steps)."""
    return list(
        Score.objects.filter(agent=agent, conversation_id=conversation_id).order_by(
            "-created_at", "-id"
        )[:1000]
    )


def conversation_of_end_user_check(*, agent: Agent, conversation_id: str, end_user_id: str) -> None:
    """404 unless the conversation is the Agent's and the end user's."""
    found = (
        0 < len(conversation_id) <= ID_MAX_LENGTH
        and "\x00" not in conversation_id
        and Conversation.objects.filter(
            agent=agent, id=conversation_id, user_id=end_user_id
        ).exists()
    )
    if not found:
        raise NotFound("No such conversation of yours.")


def score_config_list(*, agent: Agent, archived: bool | None = False) -> QuerySet[ScoreConfig]:
    queryset = ScoreConfig.objects.filter(agent=agent)
    if archived is not None:
        queryset = queryset.filter(archived_at__isnull=not archived)
    return queryset


def score_names(*, agent: Agent) -> list[str]:
    """Names in use, for the console's filters: configs first, then names seen in the last
    90 days (a loose index scan would be exact; this is bounded and enough for a menu)."""
    names = list(
        ScoreConfig.objects.filter(agent=agent, archived_at__isnull=True)
        .order_by("name")
        .values_list("name", flat=True)
    )
    since = datetime.now(UTC) - timedelta(days=90)
    seen = (
        Score.objects.filter(agent=agent, created_at__gte=since)
        .values_list("name", flat=True)
        .distinct()
        .order_by("name")[:50]
    )
    return names + [name for name in seen if name not in names]


# --- the Overview: each score name over time -----------------------------------------------------


@dataclass
class ScoreSeries:
    name: str
    data_type: str
    # Per day: numeric -> {"average", "count"}; categorical/boolean -> {"count", "shares":
    # {category: share}}.
    days: dict[date, dict]
    total: int


def score_series(*, agent: Agent, first_day: date, last_day: date) -> list[ScoreSeries]:
    """Per score name and day from `first_day` to `last_day` (UTC): the average of numeric
    scores, the share of each category or of true/false. One grouped query over the
    (agent, name, created_at) index's range."""
    start = datetime(first_day.year, first_day.month, first_day.day, tzinfo=UTC)
    end = datetime(last_day.year, last_day.month, last_day.day, tzinfo=UTC) + timedelta(days=1)
    rows = (
        Score.objects.filter(agent=agent, created_at__gte=start, created_at__lt=end)
        .annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("name", "data_type", "day", "string_value", "boolean_value")
        .annotate(count=Count("row"), average=Avg("number_value"))
        .order_by()
    )
    series: dict[tuple[str, str], ScoreSeries] = {}
    counts: dict[tuple[str, str], dict[date, dict[str, int]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(int))
    )
    sums: dict[tuple[str, str], dict[date, list[float]]] = defaultdict(
        lambda: defaultdict(lambda: [0.0, 0])
    )
    for row in rows:
        key = (row["name"], row["data_type"])
        entry = series.setdefault(key, ScoreSeries(row["name"], row["data_type"], {}, 0))
        entry.total += row["count"]
        day = row["day"]
        if row["data_type"] == DataType.NUMERIC:
            acc = sums[key][day]
            acc[0] += (row["average"] or 0.0) * row["count"]
            acc[1] += row["count"]
        else:
            category = str(
                row["string_value"]
                if row["data_type"] == DataType.CATEGORICAL
                else ("true" if row["boolean_value"] else "false")
            )
            counts[key][day][category] += row["count"]
    for key, entry in series.items():
        if entry.data_type == DataType.NUMERIC:
            for day, (total, count) in sums[key].items():
                entry.days[day] = {"average": total / count, "count": count}
        else:
            for day, by_category in counts[key].items():
                count = sum(by_category.values())
                entry.days[day] = {
                    "count": count,
                    "shares": {c: n / count for c, n in sorted(by_category.items())},
                }
    # Feedback first (what owners look at most), then by name.
    return sorted(series.values(), key=lambda s: (s.name != FEEDBACK_NAME, s.name, s.data_type))
