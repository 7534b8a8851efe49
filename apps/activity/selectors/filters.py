"""What a request to an activity list may ask, checked here once for the API and the console:
its filters (each list's documented query parameters, with the comparison each makes), their
parsing (a bad value is a 400 naming it, or the console's message), the Agent's condition that
leads every list query, and the console's choice of order.
"""

from dataclasses import dataclass
from datetime import UTC, datetime

from django.db.models import QuerySet
from django.utils.dateparse import parse_date, parse_datetime

from apps.activity.dimensions import metadata_filter_parse
from apps.activity.models import ID_MAX_LENGTH, Run, RunStatus
from apps.common.errors import BadRequest
from apps.common.listing import Condition, Through
from apps.common.sorting import ListSorts
from apps.workspaces.models import Agent

STATUSES = tuple(RunStatus.values)


def is_id(value: str) -> bool:
    """Whether a path id could name a row: longer ones or NUL bytes never do (and PostgreSQL
    refuses NUL in text, so such ids must not reach a query)."""
    return 0 < len(value) <= ID_MAX_LENGTH and "\x00" not in value


@dataclass(frozen=True)
class Filter:
    """A documented query parameter of a list: its name, kind and help text, and the
    comparison it makes (`field`, default the name, `lookup` the value): the ORM and the
    compiled SQL of the /v1 lists both apply it from here."""

    name: str
    kind: str  # "id", "choice", "datetime", "text", "key_value" (key:value, a JSON object)
    description: str
    choices: tuple[str, ...] = ()
    field: str = ""
    lookup: str = "exact"
    # The field is a linked row's (a conversation's runs), not the list's own.
    through: Through | None = None

    def condition(self, value) -> Condition:
        # A JSON array field holds the value: containment of a one-item array.
        if self.lookup == "contains" and not isinstance(value, dict):
            value = [value]
        return Condition(self.field or self.name, self.lookup, value, self.through)


# A conversation's runs: its filters by what its runs were (one run meets them all).
_RUNS_OF_CONVERSATION = Through(Run, (("agent", "agent"), ("conversation_id", "id")))


def _run_dimension_filters(subject: str, through: Through | None = None) -> tuple[Filter, ...]:
    """The filters on a run's model, tools, error and dimensions, for runs (`through` None)
    or for conversations (through their runs)."""
    return (
        Filter("model_id", "text", f"Only {subject} of this model.", through=through),
        Filter(
            "tool_name",
            "text",
            f"Only {subject} that called this tool (a GIN index on tool_names).",
            field="tool_names",
            lookup="contains",
            through=through,
        ),
        Filter(
            "error_code",
            "text",
            f"Only {subject} that failed with this error code (an exception type, a code).",
            through=through,
        ),
        Filter(
            "environment",
            "text",
            f"Only {subject} recorded in this environment (run attributes).",
            through=through,
        ),
        Filter(
            "release",
            "text",
            f"Only {subject} of this release (run attributes).",
            through=through,
        ),
        Filter(
            "tag",
            "text",
            f"Only {subject} tagged with this tag (run attributes; a GIN index).",
            field="tags",
            lookup="contains",
            through=through,
        ),
        Filter(
            "metadata",
            "key_value",
            f"Only {subject} whose metadata has key = value, as `key:value` (run attributes; "
            "a value reading as a number, true or false matches that JSON value).",
            lookup="contains",
            through=through,
        ),
    )


USER_FILTERS = (Filter("external_id", "text", "Only the user with this external id."),)
CONVERSATION_FILTERS = (
    Filter("user_id", "id", "Only conversations of this user."),
    Filter("status", "choice", "Only conversations with this status.", STATUSES),
    Filter("source", "choice", "Only conversations from this source.", ("embed", "preview")),
    Filter(
        "updated_after",
        "datetime",
        "Only conversations updated at or after this date-time.",
        field="updated_at",
        lookup="gte",
    ),
    Filter(
        "updated_before",
        "datetime",
        "Only conversations updated before this date-time.",
        field="updated_at",
        lookup="lt",
    ),
    *_run_dimension_filters("conversations with a run", _RUNS_OF_CONVERSATION),
)
RUN_FILTERS = (
    Filter("conversation_id", "id", "Only runs of this conversation."),
    Filter("user_id", "id", "Only runs of this user."),
    Filter("status", "choice", "Only runs with this status.", STATUSES),
    *_run_dimension_filters("runs"),
    Filter(
        "failed_tool",
        "text",
        "Only runs in which this tool failed (a GIN index on failed_tool_names).",
        field="failed_tool_names",
        lookup="contains",
    ),
    Filter(
        "document_id",
        "text",
        "Only runs whose retrieval steps returned this knowledge document (a GIN index).",
        field="document_ids",
        lookup="contains",
    ),
    Filter(
        "created_after",
        "datetime",
        "Only runs created at or after this date-time.",
        field="created_at",
        lookup="gte",
    ),
    Filter(
        "created_before",
        "datetime",
        "Only runs created before this date-time.",
        field="created_at",
        lookup="lt",
    ),
)


def _parse_datetime(name: str, raw: str) -> datetime:
    value = None
    try:
        value = parse_datetime(raw)
        if value is None:
            day = parse_date(raw)
            if day is not None:
                value = datetime(day.year, day.month, day.day)
    except ValueError:
        value = None
    if value is None:
        raise BadRequest(
            f"{name} must be an ISO 8601 date or date-time (for example 2025-01-31T00:00:00Z); "
            f"got {raw!r}."
        )
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        # In UTC, so an exotic offset (PostgreSQL accepts at most +-15:59) never reaches SQL.
        return value.astimezone(UTC)
    except OverflowError:
        raise BadRequest(f"{name} is out of range; got {raw!r}.") from None


def filters_parse(params, filters: tuple[Filter, ...]) -> dict:
    """Validated filter values from a query dict; absent or empty parameters are left out."""
    values: dict = {}
    for spec in filters:
        raw = params.get(spec.name)
        if raw is None or raw == "":
            continue
        if "\x00" in raw:
            raise BadRequest(f"{spec.name} must not contain NUL characters.")
        if spec.kind == "choice" and raw not in spec.choices:
            raise BadRequest(f"{spec.name} must be one of: {', '.join(spec.choices)}; got {raw!r}.")
        if spec.kind in ("id", "text") and len(raw) > 255:
            raise BadRequest(f"{spec.name} is too long (at most 255 characters).")
        if spec.kind == "datetime":
            values[spec.name] = _parse_datetime(spec.name, raw)
        elif spec.kind == "key_value":
            try:
                values[spec.name] = metadata_filter_parse(raw)
            except ValueError as exc:
                raise BadRequest(f"{spec.name} {exc}; got {raw[:100]!r}.") from None
        else:
            values[spec.name] = raw
    return values


def list_where(
    agent: Agent, specs: tuple[Filter, ...], filters: dict | None
) -> tuple[Condition, ...]:
    """The Agent, then each present filter in the specs' order (one order per combination, so
    the compiled lists write one statement for it)."""
    filters = filters or {}
    return (
        Condition("agent", "exact", agent.pk),
        *(spec.condition(filters[spec.name]) for spec in specs if spec.name in filters),
    )


def sorted_as_chosen(sorts: ListSorts, queryset: QuerySet, *, sort: str, descending: bool):
    choice = sorts.choose({"sort": sort, "dir": "desc" if descending else "asc"})
    return sorts.apply(queryset, choice)
