"""Reads of an Agent's end users: the Users list and its orders, one user, the user a console
filter box names, and what a user's page shows (their usage, latest conversations and runs).
"""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, F, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, Lower

from apps.activity.models import Conversation, EndUser, Run
from apps.activity.selectors.conversations import CONVERSATION_KEYSET, conversation_list
from apps.activity.selectors.filters import USER_FILTERS, is_id, list_where
from apps.activity.selectors.runs import RUN_KEYSET, run_list
from apps.common.errors import NotFound
from apps.common.keyset import Keyset
from apps.common.listing import ListQuery
from apps.common.sorting import ListSorts, SortColumn
from apps.workspaces.models import Agent

USER_KEYSET = Keyset("users", "last_seen_at", descending=True)


def user_query(*, agent: Agent, filters: dict | None = None) -> ListQuery:
    """An Agent's users matching `filters` (USER_FILTERS)."""
    return ListQuery(EndUser, list_where(agent, USER_FILTERS, filters))


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
    user = EndUser.objects.filter(agent=agent, id=user_id).first() if is_id(user_id) else None
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
    exact = EndUser.objects.filter(agent=agent, id=text).first() if is_id(text) else None
    if exact is not None:
        return exact, [exact]
    candidates = list(
        user_list(agent=agent, search=text).order_by(*USER_KEYSET.order_by)[:USER_PICKER_LIMIT]
    )
    return (candidates[0] if len(candidates) == 1 else None), candidates


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


def end_user_find(*, agent: Agent, user_id: str | None) -> EndUser | None:
    if not user_id:
        return None
    return EndUser.objects.filter(agent=agent, id=user_id).first()


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
