"""Reads of activity, shared by the API and the console: always the Agent first.

Each list has one keyset (its order) and a few filters, each validated here once so the API
answers 400 and the console shows the same message. Every filter combination stays an index
range scan: see the indexes in models.py.
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db.models import BigIntegerField, Count, F, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, Lower
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from apps.activity.dimensions import metadata_filter_parse
from apps.activity.models import (
    ID_MAX_LENGTH,
    Conversation,
    EndUser,
    Message,
    Run,
    RunStatus,
    RunStep,
)
from apps.common.errors import BadRequest, NotFound
from apps.common.keyset import Keyset
from apps.common.listing import Condition, ListQuery, Through
from apps.common.sorting import ListSorts, SortColumn
from apps.workspaces.models import Agent

USER_KEYSET = Keyset("users", "last_seen_at", descending=True)
CONVERSATION_KEYSET = Keyset("conversations", "updated_at", descending=True)
MESSAGE_KEYSET = Keyset("messages", "created_at", descending=False)
RUN_KEYSET = Keyset("runs", "created_at", descending=True)
STEP_KEYSET = Keyset("steps", "started_at", descending=False)

STATUSES = tuple(RunStatus.values)


def _is_id(value: str) -> bool:
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


def _where(agent: Agent, specs: tuple[Filter, ...], filters: dict | None) -> tuple[Condition, ...]:
    """The Agent, then each present filter in the specs' order (one order per combination, so
    the compiled lists write one statement for it)."""
    filters = filters or {}
    return (
        Condition("agent", "exact", agent.pk),
        *(spec.condition(filters[spec.name]) for spec in specs if spec.name in filters),
    )


# --- users ---------------------------------------------------------------------------------------


def user_query(*, agent: Agent, filters: dict | None = None) -> ListQuery:
    """An Agent's users matching `filters` (USER_FILTERS)."""
    return ListQuery(EndUser, _where(agent, USER_FILTERS, filters))


def user_list(
    *, agent: Agent, filters: dict | None = None, search: str = "", identity_type: str = ""
) -> QuerySet[EndUser]:
    """An Agent's users; `search` (the console's box) matches name, email or external id, and
    `identity_type` (the console's, one of EndUser.IdentityType) keeps that kind only."""
    queryset = user_query(agent=agent, filters=filters).queryset()
    if identity_type:
        queryset = queryset.filter(identity_type=identity_type)
    if search:
        queryset = queryset.filter(
            Q(display_name__icontains=search)
            | Q(email__icontains=search)
            | Q(external_id__icontains=search)
        )
    return queryset


def user_get(*, agent: Agent, user_id: str) -> EndUser:
    user = EndUser.objects.filter(agent=agent, id=user_id).first() if _is_id(user_id) else None
    if user is None:
        raise NotFound(f"No user {user_id!r} for this Agent.")
    return user


USER_PICKER_LIMIT = 10


def user_pick(*, agent: Agent, text: str) -> tuple[EndUser | None, list[EndUser]]:
    """The user a console filter names, and the users it could mean.

    An exact id picks that user; otherwise name, email or external id are searched, and a single
    match picks it. Several or none pick nobody (the page asks to choose); at most
    USER_PICKER_LIMIT candidates, most recently seen first.
    """
    exact = EndUser.objects.filter(agent=agent, id=text).first() if _is_id(text) else None
    if exact is not None:
        return exact, [exact]
    candidates = list(
        user_list(agent=agent, search=text).order_by(*USER_KEYSET.order_by)[:USER_PICKER_LIMIT]
    )
    return (candidates[0] if len(candidates) == 1 else None), candidates


# --- conversations -------------------------------------------------------------------------------


def conversation_query(*, agent: Agent, filters: dict | None = None) -> ListQuery:
    """An Agent's conversations matching `filters` (CONVERSATION_FILTERS)."""
    return ListQuery(Conversation, _where(agent, CONVERSATION_FILTERS, filters))


def conversation_list(
    *,
    agent: Agent,
    filters: dict | None = None,
    title_search: str = "",
    or_ids: list[str] | None = None,
) -> QuerySet[Conversation]:
    """An Agent's conversations; `title_search` keeps those whose title holds the text, or
    whose id is in `or_ids` (the console's word search: conversations whose messages match)."""
    queryset = conversation_query(agent=agent, filters=filters).queryset()
    if title_search:
        queryset = queryset.filter(Q(title__icontains=title_search) | Q(id__in=or_ids or []))
    return queryset


def conversation_get(*, agent: Agent, conversation_id: str) -> Conversation:
    conversation = (
        Conversation.objects.filter(agent=agent, id=conversation_id).first()
        if _is_id(conversation_id)
        else None
    )
    if conversation is None:
        raise NotFound(f"No conversation {conversation_id!r} for this Agent.")
    return conversation


def message_query(*, agent: Agent, conversation_id: str, user_id: str | None = None) -> ListQuery:
    """Messages of one conversation of the Agent; another Agent's conversation is not found,
    and so is another end user's when `user_id` is given (a browser token's own user).

    For the Agent, a message on the page proves the conversation, so whether it exists is asked
    only when a page is empty (`ListQuery.parent_check`). Messages carry no end user: for a
    browser token the conversation's owner is checked first."""
    not_found = NotFound(f"No conversation {conversation_id!r} for this Agent.")
    if not _is_id(conversation_id):
        raise not_found
    conversations = Conversation.objects.filter(agent=agent, id=conversation_id)
    if user_id is not None:
        conversations = conversations.filter(user_id=user_id)

    def conversation_check() -> None:
        if not conversations.exists():
            raise not_found

    if user_id is not None:
        conversation_check()
    return ListQuery(
        Message,
        (
            Condition("agent", "exact", agent.pk),
            Condition("conversation_id", "exact", conversation_id),
        ),
        parent_check=None if user_id is not None else conversation_check,
    )


def message_list(
    *, agent: Agent, conversation_id: str, user_id: str | None = None
) -> QuerySet[Message]:
    """`message_query`'s messages through the ORM; NotFound at once for a missing
    conversation."""
    query = message_query(agent=agent, conversation_id=conversation_id, user_id=user_id)
    if query.parent_check is not None:
        query.parent_check()
    return query.queryset()


# --- runs ----------------------------------------------------------------------------------------


def run_query(*, agent: Agent, filters: dict | None = None) -> ListQuery:
    """An Agent's runs matching `filters` (RUN_FILTERS)."""
    return ListQuery(Run, _where(agent, RUN_FILTERS, filters))


def run_list(*, agent: Agent, filters: dict | None = None) -> QuerySet[Run]:
    return run_query(agent=agent, filters=filters).queryset()


# The Runs page's orders: newest first (the API's), or by tokens, credits or latency, where a
# missing value sorts below every real one (last when the biggest come first), or by status or
# model (A to Z first; no model sorts first). Each has an index on (agent, the same expression,
# id) in Run.Meta. The user, tools and scores columns are not orders of the runs table (a join,
# an array, another table's rows; scores sort once a score is chosen, apps.activity.score_filters).
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
        SortColumn("status", "Status", "status", "text", "asc"),
        SortColumn("model", "Model", Coalesce(F("model_id"), Value("")), "text", "asc"),
    ),
)

# The Conversations page's orders: by last activity (the API's) or by start, either way; by
# title, status or source (missing ones first A to Z). The messages, runs and credits columns
# are totals counted for the page's rows (selectors.conversation_totals), not columns of the
# table, so they cannot be read in order from an index: they do not sort.
CONVERSATION_SORTS = ListSorts(
    CONVERSATION_KEYSET,
    (
        SortColumn("updated", "Updated", "updated_at", "time"),
        SortColumn("created", "Created", "created_at", "time"),
        SortColumn("title", "Title", Lower(Coalesce(F("title"), Value(""))), "text", "asc"),
        SortColumn("status", "Status", Coalesce(F("status"), Value("")), "text", "asc"),
        SortColumn("source", "Source", Coalesce(F("source"), Value("")), "text", "asc"),
    ),
)

# The Users page's orders: last seen (the API's), first seen, or by the name shown (the display
# name, else the id; case aside), email (case aside), external id or identity. Indexes in
# EndUser.Meta. The runs, tokens and credits columns are totals over the user's runs, counted
# for the page's rows: they do not sort (no index holds them in order).
USER_SORTS = ListSorts(
    USER_KEYSET,
    (
        SortColumn("last_seen", "Last seen", "last_seen_at", "time"),
        SortColumn("first_seen", "First seen", "first_seen_at", "time"),
        SortColumn("name", "User", Lower(Coalesce(F("display_name"), F("id"))), "text", "asc"),
        SortColumn("email", "Email", Lower(Coalesce(F("email"), Value(""))), "text", "asc"),
        SortColumn(
            "external_id", "External id", Coalesce(F("external_id"), Value("")), "text", "asc"
        ),
        SortColumn("identity", "Identity", "identity_type", "text", "asc"),
    ),
)


def run_list_sorted(
    queryset: QuerySet[Run], *, sort: str, descending: bool
) -> tuple[QuerySet[Run], Keyset]:
    """The runs in the console's chosen order, and the keyset that pages through it. An unknown
    column is the default order (newest first)."""
    return _sorted(RUN_SORTS, queryset, sort=sort, descending=descending)


def conversation_list_sorted(
    queryset: QuerySet[Conversation], *, sort: str, descending: bool
) -> tuple[QuerySet[Conversation], Keyset]:
    """The conversations in the console's chosen order and the keyset paging through it; an
    unknown column is the default order."""
    return _sorted(CONVERSATION_SORTS, queryset, sort=sort, descending=descending)


def _sorted(sorts: ListSorts, queryset: QuerySet, *, sort: str, descending: bool):
    choice = sorts.choose({"sort": sort, "dir": "desc" if descending else "asc"})
    return sorts.apply(queryset, choice)


def run_get(*, agent: Agent, run_id: str) -> Run:
    run = Run.objects.filter(agent=agent, id=run_id).first() if _is_id(run_id) else None
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
        if _is_id(step_id)
        else None
    )
    if step is None:
        raise NotFound(f"No step {step_id!r} in run {run_id!r}.")
    return step


def run_messages(*, agent: Agent, run_id: str) -> list[Message]:
    """The messages a run produced (index msg_agent_run)."""
    return list(Message.objects.filter(agent=agent, run_id=run_id).order_by("created_at", "id"))


# --- Console reads: a few rows around one record, in display order ------------------------------


def conversation_find(*, agent: Agent, conversation_id: str | None) -> Conversation | None:
    """The conversation if it exists for the Agent, else None (a run's link may dangle)."""
    if not conversation_id:
        return None
    return Conversation.objects.filter(agent=agent, id=conversation_id).first()


def end_user_find(*, agent: Agent, user_id: str | None) -> EndUser | None:
    if not user_id:
        return None
    return EndUser.objects.filter(agent=agent, id=user_id).first()


def transcript_messages(*, agent: Agent, conversation_id: str, limit: int) -> list[Message]:
    """The first `limit + 1` messages, oldest first: one more than shown tells truncation."""
    return list(
        message_list(agent=agent, conversation_id=conversation_id).order_by(
            *MESSAGE_KEYSET.order_by
        )[: limit + 1]
    )


@dataclass(frozen=True)
class ConversationTotals:
    messages: int = 0
    runs: int = 0
    credits: float | None = None


def conversation_totals(
    *, agent: Agent, conversation_ids: list[str]
) -> dict[str, ConversationTotals]:
    """Messages, runs and credits of each conversation of one list page: two grouped queries
    whatever the page size, each an index range per conversation (msg_conv_created,
    run_agent_conv)."""
    if not conversation_ids:
        return {}
    messages = dict(
        Message.objects.filter(agent=agent, conversation_id__in=conversation_ids)
        .values("conversation_id")
        .annotate(count=Count("row"))
        .values_list("conversation_id", "count")
    )
    runs = {
        conversation_id: (count, credits)
        for conversation_id, count, credits in Run.objects.filter(
            agent=agent, conversation_id__in=conversation_ids
        )
        .values("conversation_id")
        .annotate(count=Count("row"), credits=Sum("credits_charged"))
        .values_list("conversation_id", "count", "credits")
    }
    return {
        conversation_id: ConversationTotals(
            messages=messages.get(conversation_id, 0),
            runs=runs.get(conversation_id, (0, None))[0],
            credits=runs.get(conversation_id, (0, None))[1],
        )
        for conversation_id in conversation_ids
    }


def conversation_runs(*, agent: Agent, conversation_id: str, limit: int) -> list[Run]:
    """A conversation's runs in the order they happened."""
    return list(
        run_list(agent=agent, filters={"conversation_id": conversation_id}).order_by(
            "created_at", "id"
        )[:limit]
    )


def user_recent_conversations(*, agent: Agent, user_id: str, limit: int) -> list[Conversation]:
    return list(
        conversation_list(agent=agent, filters={"user_id": user_id}).order_by(
            *CONVERSATION_KEYSET.order_by
        )[:limit]
    )


@dataclass(frozen=True)
class UserUsage:
    """What an end user's runs cost: how many, their tokens and their credits."""

    runs: int = 0
    tokens: int = 0
    credits: float = 0.0


def user_usage(
    *, agent: Agent, user_ids: list[str], since: datetime | None = None
) -> dict[str, UserUsage]:
    """Each user's runs, tokens and credits (all time, or since `since`), for one page of the
    Users list or one user's page: one grouped query, an index-only scan of run_agent_user
    (its key is the Agent and user, and it carries the tokens and credits)."""
    if not user_ids:
        return {}
    runs = Run.objects.filter(agent=agent, user_id__in=user_ids)
    if since is not None:
        runs = runs.filter(created_at__gte=since)
    rows = (
        runs.values("user_id")
        .annotate(n=Count("user_id"), tokens=Sum("total_tokens"), credits=Sum("credits_charged"))
        .order_by()
    )
    found = {
        row["user_id"]: UserUsage(row["n"], row["tokens"] or 0, row["credits"] or 0.0)
        for row in rows
    }
    return {user_id: found.get(user_id, UserUsage()) for user_id in user_ids}


def user_recent_runs(*, agent: Agent, user_id: str, limit: int) -> list[Run]:
    return list(
        run_list(agent=agent, filters={"user_id": user_id}).order_by(*RUN_KEYSET.order_by)[:limit]
    )


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
