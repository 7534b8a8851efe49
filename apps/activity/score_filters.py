"""The Runs and Conversations lists' score filter, score column, score order and export columns.

Scores are apps.scores' rows; activity reads them (never writes) through `apps.scores.models`,
the one thing of another feature app it may import for that. Every score stores the run and
conversation its target implies, so each rule here is one EXISTS probe or one grouped read of
the `(agent, run_id, name)` / `(agent, conversation_id, name)` indexes:

- `?score=<name>` keeps the rows with a score of that name, `&score_value=` narrows it to a value
  (`true`/`false`, a category, a number, `>=0.5`, `<3`); `?feedback=negative` keeps the rows
  with an end user's thumbs down (`user_feedback` = false, apps.scores.models), `positive` those
  with a thumbs up;
- the column: each row's scores, summarised (`row.scores`, one query per page);
- the order: `?sort=score` by the chosen score's value (its average when a run has several),
  rows without one last.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.db.models import (
    Avg,
    Case,
    Exists,
    FloatField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce

from apps.common.errors import BadRequest
from apps.common.sorting import ListSorts, SortColumn
from apps.scores.models import FEEDBACK_NAME, NAME_MAX_LENGTH, DataType, Score, Source
from apps.workspaces.models import Agent

PARAMS = ("score", "score_value", "feedback")
FEEDBACK_CHOICES = ("negative", "positive")
# Rows without the chosen score sort below every real value.
NO_SCORE = -1e300


@dataclass(frozen=True)
class ScoreFilter:
    name: str = ""
    value: str = ""
    feedback: str = ""

    def __bool__(self) -> bool:
        return bool(self.name or self.feedback)


def score_filter_parse(params: Mapping[str, str]) -> ScoreFilter:
    """The score filter of a list's query string; BadRequest says what is wrong."""
    name = (params.get("score") or "").strip()
    value = (params.get("score_value") or "").strip()
    feedback = (params.get("feedback") or "").strip()
    if len(name) > NAME_MAX_LENGTH or "\x00" in name or "\x00" in value or len(value) > 100:
        raise BadRequest("The score filter is too long.")
    if value and not name:
        raise BadRequest("Score value: choose the score's name too.")
    if feedback and feedback not in FEEDBACK_CHOICES:
        raise BadRequest(f"Feedback must be one of: {', '.join(FEEDBACK_CHOICES)}.")
    if value:
        _value_q(value)  # refuses a malformed comparison now, with the others
    return ScoreFilter(name=name, value=value, feedback=feedback)


def _value_q(raw: str) -> Q:
    text = raw.strip()
    lowered = text.lower()
    if lowered in ("true", "false"):
        return Q(boolean_value=lowered == "true")
    for op, lookup in ((">=", "gte"), ("<=", "lte"), (">", "gt"), ("<", "lt")):
        if text.startswith(op):
            try:
                return Q(**{f"number_value__{lookup}": float(text[len(op) :])})
            except ValueError:
                raise BadRequest(f"Score value {raw!r}: a number must follow {op}.") from None
    try:
        return Q(number_value=float(text)) | Q(string_value=text)
    except ValueError:
        return Q(string_value=text)


def _scores(agent: Agent, column: str) -> QuerySet[Score]:
    return Score.objects.filter(agent_id=agent.pk, **{column: OuterRef("id")})


def score_filter_apply(
    queryset: QuerySet, *, agent: Agent, chosen: ScoreFilter, column: str
) -> QuerySet:
    """`queryset` (runs: column "run_id"; conversations: "conversation_id") narrowed to rows
    with the chosen score and/or feedback: EXISTS probes on the scores' (agent, column, name)
    index."""
    if chosen.name:
        scores = _scores(agent, column).filter(name=chosen.name)
        if chosen.value:
            scores = scores.filter(_value_q(chosen.value))
        queryset = queryset.filter(Exists(scores))
    if chosen.feedback:
        feedback = _scores(agent, column).filter(
            name=FEEDBACK_NAME,
            source=Source.END_USER,
            boolean_value=chosen.feedback == "positive",
        )
        queryset = queryset.filter(Exists(feedback))
    return queryset


def sorts_with_score(
    sorts: ListSorts, *, agent: Agent, chosen: ScoreFilter, column: str
) -> ListSorts:
    """The list's orders, plus "by the chosen score's value" when a score name is chosen."""
    if not chosen.name:
        return sorts
    value = (
        _scores(agent, column)
        .filter(name=chosen.name)
        .order_by()
        .values(column)
        .annotate(
            average=Avg(
                Coalesce(
                    "number_value",
                    Case(
                        When(boolean_value=True, then=Value(1.0)),
                        When(boolean_value=False, then=Value(0.0)),
                        output_field=FloatField(),
                    ),
                    output_field=FloatField(),
                )
            )
        )
        .values("average")[:1]
    )
    by = Coalesce(Subquery(value, output_field=FloatField()), Value(NO_SCORE))
    return ListSorts(
        sorts.default, (*sorts.columns, SortColumn("score", chosen.name, by, "number", css="num"))
    )


@dataclass
class ScoreSummary:
    """What a list row shows of its scores: end users' thumbs, then each other name."""

    thumbs_up: int = 0
    thumbs_down: int = 0
    # name -> values (numbers averaged for display, categories and booleans listed)
    values: dict[str, list] | None = None

    def shown(self) -> list[tuple[str, str]]:
        out = []
        for name, values in sorted((self.values or {}).items()):
            numbers = [v for v in values if isinstance(v, float)]
            if numbers and len(numbers) == len(values):
                text = f"{sum(numbers) / len(numbers):.3g}"
            else:
                text = ", ".join(sorted({str(v).lower() for v in values}))
            out.append((name, text))
        return out


def score_summaries(*, agent: Agent, ids: Iterable[str], column: str) -> dict[str, ScoreSummary]:
    """Each row's scores (runs: "run_id", conversations: "conversation_id"), one query."""
    ids = list(ids)
    summaries: dict[str, ScoreSummary] = defaultdict(ScoreSummary)
    if not ids:
        return summaries
    rows = Score.objects.filter(agent_id=agent.pk, **{f"{column}__in": ids}).values_list(
        column, "name", "source", "data_type", "number_value", "string_value", "boolean_value"
    )[:5000]
    for row_id, name, source, data_type, number, text, boolean in rows:
        summary = summaries[row_id]
        if name == FEEDBACK_NAME and source == Source.END_USER:
            if boolean:
                summary.thumbs_up += 1
            else:
                summary.thumbs_down += 1
            continue
        value = {DataType.NUMERIC: number, DataType.CATEGORICAL: text}.get(data_type, boolean)
        if summary.values is None:
            summary.values = {}
        summary.values.setdefault(name, []).append(value)
    return summaries


def score_summaries_attach(rows: list, *, agent: Agent, column: str) -> None:
    """`row.scores` on each row of a list page."""
    summaries = score_summaries(agent=agent, ids=[row.id for row in rows], column=column)
    for row in rows:
        row.scores = summaries.get(row.id) or ScoreSummary()


def export_scores_attach(rows: list, *, agent: Agent, column: str) -> None:
    """`row.export_scores` on each row of an export batch (one query per batch): the row's
    scores as {name, value, source, target_type}, oldest first, at most 100 a row."""
    by_row: dict[str, list[dict]] = defaultdict(list)
    found = Score.objects.filter(
        agent_id=agent.pk, **{f"{column}__in": [row.id for row in rows]}
    ).order_by("created_at", "id")
    for score in found.iterator(chunk_size=2000):
        kept = by_row[getattr(score, column)]
        if len(kept) < 100:
            kept.append(
                {
                    "name": score.name,
                    "value": score.value,
                    "source": score.source,
                    "target_type": score.target_type,
                }
            )
    for row in rows:
        row.export_scores = by_row.get(row.id, [])


def score_names(*, agent: Agent) -> list[str]:
    """Score names for the lists' filter menu: those with a config, then those seen lately
    (bounded: a menu, not an inventory)."""
    from apps.scores.models import ScoreConfig

    names = list(
        ScoreConfig.objects.filter(agent_id=agent.pk, archived_at__isnull=True)
        .order_by("name")
        .values_list("name", flat=True)
    )
    recent = (
        Score.objects.filter(agent_id=agent.pk)
        .order_by("-created_at")
        .values_list("name", flat=True)[:2000]
    )
    for name in recent:
        if name not in names:
            names.append(name)
        if len(names) >= 50:
            break
    return names
