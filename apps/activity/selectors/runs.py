"""Reads of an Agent's runs: the Runs list and its orders, one run, its steps (the API's list,
the run page's waterfall, one step) and the messages it produced, the values the console's
filters suggest, and how often runs retrieved a knowledge document.
"""

from datetime import timedelta

from django.db.models import BigIntegerField, F, QuerySet, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from apps.activity.models import Message, Run, RunStep
from apps.activity.selectors.filters import RUN_FILTERS, is_id, list_where, sorted_as_chosen
from apps.common.errors import NotFound
from apps.common.keyset import Keyset
from apps.common.listing import ListQuery
from apps.common.sorting import ListSorts, SortColumn
from apps.workspaces.models import Agent

RUN_KEYSET = Keyset("runs", "created_at", descending=True)
STEP_KEYSET = Keyset("steps", "started_at", descending=False)


def run_query(*, agent: Agent, filters: dict | None = None) -> ListQuery:
    """An Agent's runs matching `filters` (RUN_FILTERS)."""
    return ListQuery(Run, list_where(agent, RUN_FILTERS, filters))


def run_list(*, agent: Agent, filters: dict | None = None) -> QuerySet[Run]:
    return run_query(agent=agent, filters=filters).queryset()


# The Runs page's orders: newest first (the API's), or by tokens, credits or latency, where a
# missing value sorts below every real one (last when the biggest come first), by status (Z to A
# first, then newest first) or by model (A to Z first; no model sorts first). Each has an index
# on (agent, the same expression, id) in Run.Meta (status: with created_at before the id). The
# user, tools and scores columns are not orders of the runs table (a join, an array, another
# table's rows; scores sort once a score is chosen, apps.activity.score_filters).
RUN_SORTS = ListSorts(
    RUN_KEYSET,
    (
        SortColumn("created", "Created", "created_at", "time"),
        # As a plain integer: Django finds nothing for `<= -1` on a positive field's values,
        # which lost every run past a page that ended on a run without tokens.
        SortColumn(
            "tokens",
            "Tokens",
            Coalesce(F("total_tokens"), Value(-1), output_field=BigIntegerField()),
            "number",
            css="num",
        ),
        SortColumn(
            "credits", "Credits", Coalesce(F("credits_charged"), Value(-1.0)), "number", css="num"
        ),
        SortColumn(
            "latency",
            "Latency",
            Coalesce(F("total_turn_latency_ms"), Value(-1.0)),
            "number",
            css="num",
        ),
        # Newest first within a status, from the status filter's index (run_agent_status):
        # streaming and failed runs first, as one looks for them; turned around, the oldest
        # aborted run first.
        SortColumn("status", "Status", "status", "text", "desc", then="created_at"),
        SortColumn("model", "Model", Coalesce(F("model_id"), Value("")), "text", "asc"),
    ),
)


def run_list_sorted(
    queryset: QuerySet[Run], *, sort: str, descending: bool
) -> tuple[QuerySet[Run], Keyset]:
    """The runs in the console's chosen order, and the keyset that pages through it. An unknown
    column is the default order (newest first)."""
    return sorted_as_chosen(RUN_SORTS, queryset, sort=sort, descending=descending)


def run_get(*, agent: Agent, run_id: str) -> Run:
    run = Run.objects.filter(agent=agent, id=run_id).first() if is_id(run_id) else None
    if run is None:
        raise NotFound(f"No run {run_id!r} for this Agent.")
    return run


def step_list(*, agent: Agent, run_id: str) -> QuerySet[RunStep]:
    """A run's steps, first started first (index step_run_started); 404 for another Agent's."""
    run_get(agent=agent, run_id=run_id)
    return RunStep.objects.filter(agent=agent, run_id=run_id)


def run_trace(*, agent: Agent, run_id: str, limit: int) -> list[RunStep]:
    """The first `limit + 1` steps of a run in start order, for the run page's waterfall
    (without the large values a row does not show: a step's own page reads them)."""
    return list(
        RunStep.objects.filter(agent=agent, run_id=run_id)
        .defer("input", "output", "attributes", "query")
        .order_by(*STEP_KEYSET.order_by)[: limit + 1]
    )


def step_get(*, agent: Agent, run_id: str, step_id: str) -> RunStep:
    step = (
        RunStep.objects.filter(agent=agent, run_id=run_id, id=step_id).first()
        if is_id(step_id)
        else None
    )
    if step is None:
        raise NotFound(f"No step {step_id!r} in run {run_id!r}.")
    return step


def run_messages(*, agent: Agent, run_id: str) -> list[Message]:
    """The messages a run produced (index msg_agent_run)."""
    return list(Message.objects.filter(agent=agent, run_id=run_id).order_by("created_at", "id"))


RECENT_RUNS_FOR_CHOICES = 1000


def recent_run_values(*, agent: Agent, field: str) -> list[str]:
    """Distinct non-empty values of `field` (model_id, error_code) among the newest runs, for
    the console's filter suggestions: bounded, so it stays fast on an Agent with millions."""
    newest = Run.objects.filter(agent=agent).order_by(*RUN_KEYSET.order_by)[
        :RECENT_RUNS_FOR_CHOICES
    ]
    values = Run.objects.filter(pk__in=newest.values("pk")).exclude(**{f"{field}__isnull": True})
    return sorted(set(values.values_list(field, flat=True)) - {""})


def document_run_counts(*, agent: Agent, document_id: str, days: tuple[int, ...]) -> dict[int, int]:
    """How many runs of the last N days retrieved the document, for each N of `days`."""
    now = timezone.now()
    base = Run.objects.filter(agent=agent, document_ids__contains=[document_id])
    return {span: base.filter(created_at__gte=now - timedelta(days=span)).count() for span in days}
