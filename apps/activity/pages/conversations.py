"""The Conversations list and one conversation's page: its transcript, each turn's usage and
the runs that answered it."""

from django.http import HttpResponse
from django.shortcuts import render

from apps.activity import score_filters, selectors
from apps.activity.bulk_bar import bulk_actions
from apps.activity.models import Conversation, RunStatus
from apps.activity.pages.lists import (
    _dimension_choices,
    _filters,
    _page,
    _score_filtered,
    _score_names,
    _search_text,
    _user_filter,
)
from apps.activity.search_pages import word_matches
from apps.activity.transcript import message_view, runs_by_turn, turn_usage
from apps.common.sorting import sorted_list
from apps.knowledge import events as knowledge_events
from apps.workspaces.console import (
    ConsoleRequest,
    bounded_count,
    console_view,
    remote_images_allowed,
    render_page,
)

TRANSCRIPT_LIMIT = 500
CONVERSATION_RUNS_LIMIT = 200


@console_view
def conversation_list(request: ConsoleRequest) -> HttpResponse:
    picked_user, params, user_error = _user_filter(request)
    filters, error = _filters(
        request,
        selectors.CONVERSATION_FILTERS,
        dates=("updated_after", "updated_before"),
        params=params,
    )
    error = error or user_error
    search = _search_text(request)
    words = word_matches(request, search, subject="conversations")
    queryset = selectors.conversation_list(
        agent=request.agent, filters=filters, title_search=search, or_ids=words.ids
    ).select_related("user")
    words.keep_within(queryset)
    queryset, conversation_sorts, scored, score_error = _score_filtered(
        request, queryset, "conversation_id", selectors.CONVERSATION_SORTS
    )
    error = error or score_error
    ordered, keyset, sort_columns = sorted_list(conversation_sorts, queryset, request.GET)
    page, page_error = _page(request, ordered, keyset)
    score_filters.score_summaries_attach(page.rows, agent=request.agent, column="conversation_id")
    count = bounded_count(queryset)
    totals = selectors.conversation_totals(
        agent=request.agent, conversation_ids=[row.id for row in page.rows]
    )
    for row in page.rows:
        row.totals = totals[row.id]
    context = {
        "section": "conversations",
        "sort_columns": sort_columns,
        "bulk_actions": bulk_actions("conversations", is_owner=request.is_owner),
        "picked_user": picked_user,
        "page": page,
        "count": count,
        "error": error or page_error,
        "q": search,
        "words": words,
        "statuses": RunStatus.values,
        "sources": Conversation.Source.values,
        **_dimension_choices(request),
        "score_filter": scored,
        "score_names": _score_names(request),
        "filtering": bool(filters or search or scored),
        "is_first_page": not (request.GET.get("after") or request.GET.get("before")),
    }
    return render_page(
        request, "activity/conversation_list.html", context, partial="conversation-table"
    )


@console_view
def conversation_detail(request: ConsoleRequest, conversation_id: str) -> HttpResponse:
    conversation = selectors.conversation_get(agent=request.agent, conversation_id=conversation_id)
    messages = selectors.transcript_messages(
        agent=request.agent, conversation_id=conversation.id, limit=TRANSCRIPT_LIMIT
    )
    shown = messages[:TRANSCRIPT_LIMIT]
    runs = selectors.conversation_runs(
        agent=request.agent, conversation_id=conversation.id, limit=CONVERSATION_RUNS_LIMIT
    )
    turns = runs_by_turn(shown, runs)
    transcript = []
    for message in shown:
        item = message_view(message)
        if message.id in turns:
            item["turn"] = turn_usage(turns[message.id])
        transcript.append(item)
    _link_sources_to_documents(request, transcript)
    context = {
        "section": "conversations",
        "conversation": conversation,
        "end_user": selectors.end_user_find(agent=request.agent, user_id=conversation.user_id),
        "transcript": transcript,
        "truncated": len(messages) > TRANSCRIPT_LIMIT,
        "remote_images": remote_images_allowed(request),
        "runs": runs,
    }
    return render(request, "activity/conversation_detail.html", context)


def _link_sources_to_documents(request: ConsoleRequest, transcript: list[dict]) -> None:
    """AI SDK source parts whose `sourceId` is one of the Agent's documents link to its page."""
    sources = [part for item in transcript for part in item["parts"] if part["kind"] == "source"]
    ids = {part["source_id"] for part in sources if part["source_id"]}
    known = knowledge_events.known_document_ids(agent=request.agent, ids=ids)
    for part in sources:
        if part["source_id"] in known:
            part["document_id"] = part["source_id"]
