"""/v1 word search (extension): `?q=` on the conversation and run lists, ranked, and the
matches themselves with highlighted snippets at /v1/search/messages and /v1/search/steps.

Thin: parse, call apps.activity.word_search, render. docs/activity-recording.md, "Word search".
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter

from apps.activity import word_search
from apps.activity.search_serializers import MessageMatchOut, StepMatchOut
from apps.api.pagination import PAGE_PARAMETERS, list_operation
from apps.api.serializers import list_envelope
from apps.api.views import json_response
from apps.common.errors import BadRequest
from apps.common.keyset import page_request
from apps.common.listing import ListQuery
from apps.common.shapes import Shape, iso
from apps.workspaces.viewsets import AgentViewSet

_Q_HELP = (
    "Words to search for (websearch syntax: every word must match, stemmed in the query's "
    'language; "a phrase" as such; -word excludes; 1 to 200 characters; empty is a 400). '
    "Results are ranked, best first, among the newest {candidates} matching {what}; "
    "`after` takes the previous page's `next_cursor` as for every list (extension)."
)


def q_parameter(what: str) -> OpenApiParameter:
    return OpenApiParameter(
        "q",
        OpenApiTypes.STR,
        description=_Q_HELP.format(candidates=f"{word_search.CANDIDATES:,}", what=what),
    )


def ranked_list(
    request, *, agent, text: str, subject: str, query: ListQuery, shape: Shape, filtered: bool
):
    """A list of conversations (runs) matching `text`, best first, in the list envelope; the
    list's other filters (`query`) apply to the ranked ids."""

    def allowed(ids: list[str]) -> set[str]:
        return set(query.queryset().filter(id__in=ids).values_list("id", flat=True))

    ranked = word_search.ranked_ids(
        agent=agent,
        query=text,
        subject=subject,
        page=page_request(request.query_params),
        allowed=allowed if filtered else None,
    )
    ids = [row_id for _rank, row_id in ranked.items]
    rows = {row.id: row for row in query.queryset().filter(id__in=ids)}
    return json_response(
        {
            "object": "list",
            "data": [shape.from_model(rows[row_id]) for row_id in ids if row_id in rows],
            "has_more": ranked.has_more,
            "next_cursor": ranked.next_cursor,
        }
    )


def match_to_dict(match: word_search.Match) -> dict:
    if match.object == "message_match":
        return {
            "object": match.object,
            "conversation_id": match.parent_id,
            "message_id": match.id,
            "role": match.role,
            "snippet": match.snippet,
            "rank": match.rank,
            "created_at": iso(match.created_at),
        }
    return {
        "object": match.object,
        "run_id": match.parent_id,
        "step_id": match.id,
        "name": match.name,
        "kind": match.kind,
        "snippet": match.snippet,
        "rank": match.rank,
        "started_at": iso(match.created_at),
    }


def _required_query(request) -> str:
    text = word_search.query_parse(request.query_params)
    if text is None:
        raise BadRequest("q is required: the words to search for.")
    return text


class SearchViewSet(AgentViewSet):
    """GET /v1/search/messages and /v1/search/steps: what matched, where, with a snippet."""

    required_scopes = {"messages": "conversations:read", "steps": "runs:read"}
    extension_actions = ("messages", "steps")
    openapi_tags = ["Search"]

    def _answer(self, request, matcher):
        text = _required_query(request)
        matches, ranked = matcher(
            agent=self.agent, query=text, page=page_request(request.query_params)
        )
        return json_response(
            {
                "object": "list",
                "data": [match_to_dict(match) for match in matches],
                "has_more": ranked.has_more,
                "next_cursor": ranked.next_cursor,
            }
        )

    @list_operation(
        summary="Search messages (extension)",
        description="Messages of the Agent's conversations whose text or reasoning parts "
        "match `q` (required), best first, each with a highlighted snippet. A conversation's "
        "matches are also what ranks GET /v1/conversations?q=.",
        parameters=[q_parameter("messages"), *PAGE_PARAMETERS],
        responses={200: list_envelope(MessageMatchOut, "MessageMatchList")},
    )
    def messages(self, request, agent_id: str | None = None):
        return self._answer(request, word_search.message_matches)

    @list_operation(
        summary="Search run steps (extension)",
        description="Steps of the Agent's runs whose input, output, error or retrieval query "
        "match `q` (required), best first, each with a highlighted snippet. A run's matches "
        "are also what ranks GET /v1/runs?q=.",
        parameters=[q_parameter("steps"), *PAGE_PARAMETERS],
        responses={200: list_envelope(StepMatchOut, "StepMatchList")},
    )
    def steps(self, request, agent_id: str | None = None):
        return self._answer(request, word_search.step_matches)
