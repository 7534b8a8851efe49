"""Reads of an Agent's conversations: the Conversations list and its orders, one conversation,
its messages (the API's list and the console's transcript), and the totals and runs its page
and list rows show.
"""

from dataclasses import dataclass

from django.db.models import Count, F, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, Lower

from apps.activity.models import Conversation, Message, Run
from apps.activity.selectors.filters import (
    CONVERSATION_FILTERS,
    is_id,
    list_where,
    sorted_as_chosen,
)
from apps.activity.selectors.runs import run_list
from apps.common.errors import NotFound
from apps.common.keyset import Keyset
from apps.common.listing import Condition, ListQuery
from apps.common.sorting import ListSorts, SortColumn
from apps.workspaces.models import Agent

CONVERSATION_KEYSET = Keyset("conversations", "updated_at", descending=True)
MESSAGE_KEYSET = Keyset("messages", "created_at", descending=False)


def conversation_query(*, agent: Agent, filters: dict | None = None) -> ListQuery:
    """An Agent's conversations matching `filters` (CONVERSATION_FILTERS)."""
    return ListQuery(Conversation, list_where(agent, CONVERSATION_FILTERS, filters))


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
        if is_id(conversation_id)
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
    if not is_id(conversation_id):
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


def conversation_list_sorted(
    queryset: QuerySet[Conversation], *, sort: str, descending: bool
) -> tuple[QuerySet[Conversation], Keyset]:
    """The conversations in the console's chosen order and the keyset paging through it; an
    unknown column is the default order."""
    return sorted_as_chosen(CONVERSATION_SORTS, queryset, sort=sort, descending=descending)


def conversation_find(*, agent: Agent, conversation_id: str | None) -> Conversation | None:
    """The conversation if it exists for the Agent, else None (a run's link may dangle)."""
    if not conversation_id:
        return None
    return Conversation.objects.filter(agent=agent, id=conversation_id).first()


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
