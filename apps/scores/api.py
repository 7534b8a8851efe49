"""/v1/scores, /v1/score_configs (API keys) and /v1/me/... feedback (browser tokens).

Thin: parse, call a selector or service, render with plain functions."""

from typing import cast

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema

from apps.api.pagination import PAGE_PARAMETERS
from apps.api.parsing import IngestJsonParser
from apps.api.serializers import list_envelope
from apps.api.views import json_response, require_no_body_fields
from apps.common.errors import BadRequest, InsufficientScope
from apps.scores import selectors, services
from apps.scores.models import COMMENT_MAX_LENGTH, FEEDBACK_NAME, Source
from apps.scores.rendering import score_config_to_dict, score_to_dict
from apps.scores.serializers import (
    FeedbackIn,
    ScoreBatchOut,
    ScoreConfigCreateIn,
    ScoreConfigOut,
    ScoreConfigUpdateIn,
    ScoreCreateIn,
    ScoreOut,
)
from apps.workspaces.selectors import agent_allowed_origins
from apps.workspaces.viewsets import AgentViewSet

READ, WRITE = "scores:read", "scores:write"
ScoreList = list_envelope(ScoreOut, "ScoreList")
ScoreConfigList = list_envelope(ScoreConfigOut, "ScoreConfigList")
ID_PARAMETER = [OpenApiParameter("id", OpenApiTypes.STR, OpenApiParameter.PATH)]
SCORE_FILTER_PARAMETERS = [
    OpenApiParameter(
        name,
        OpenApiTypes.DATETIME if name.startswith("created_") else OpenApiTypes.STR,
        description=description,
    )
    for name, description in selectors.SCORE_FILTERS.items()
]

_EXAMPLES = [
    OpenApiExample(
        "One score on a run",
        {"run_id": "run_01JD0000000000000000000001", "name": "correctness", "value": 0.9},
        request_only=True,
    ),
    OpenApiExample(
        "A batch, idempotent by id",
        [
            {
                "id": "eval-2025-01-31-run1-relevance",
                "run_id": "run_01JD0000000000000000000001",
                "name": "relevance",
                "value": "partially",
                "comment": "Answered the refund question, not the delivery one.",
            },
            {
                "id": "eval-2025-01-31-msg7-pii",
                "message_id": "msg_01JD0000000000000000000007",
                "name": "contains_pii",
                "value": False,
            },
        ],
        request_only=True,
    ),
]


class ScoresJsonParser(IngestJsonParser):
    """A batch of up to 1,000 scores takes ingest's body limit; a single score's fields are
    named by their own keys (a batch's items as `[i]`), not as ingest's `records`."""

    root_name = ""


class ScoreViewSet(AgentViewSet):
    required_scopes = {"list": READ, "retrieve": READ, "create": WRITE, "destroy": WRITE}
    extension_actions = tuple(required_scopes)
    error_statuses = {"retrieve": (404,), "destroy": (404,), "create": (409, 413)}
    openapi_tags = ["Scores"]
    parser_classes = [ScoresJsonParser]

    @extend_schema(
        summary="List scores (extension)",
        description="The Agent's scores, newest first. Filters combine; an unknown query "
        "parameter is a 400 naming it. `run_id` finds the run's own scores and those of its "
        "steps and messages; `conversation_id` every score within the conversation.",
        parameters=PAGE_PARAMETERS + SCORE_FILTER_PARAMETERS,
        responses={200: ScoreList},
    )
    def list(self, request, agent_id: str | None = None):
        selectors.params_check(
            request.query_params, (*selectors.PAGE_PARAMS, *selectors.SCORE_FILTERS)
        )
        filters = selectors.score_filters_parse(request.query_params)
        queryset = selectors.score_list(agent=self.agent, filters=filters)
        return self.paginated(queryset, keyset=selectors.SCORE_KEYSET, render=score_to_dict)

    @extend_schema(
        summary="Record scores (extension)",
        description=(
            "One score (a JSON object; answered with the score, 201 when new, 200 when the "
            "same id and body were recorded before) or a batch (a JSON array of 1 to 1,000; "
            "answered 200 with a `score_batch`). Each names exactly one target (`run_id`, "
            "`step_id`, `conversation_id` or `message_id`) of the Agent. A name with a score "
            "config is checked against it (type, range, categories): 400 naming the rule. "
            "A batch is all or nothing: a 400 names every invalid item (`scores[3].value: "
            "...`) and keeps none. Sending the same ids with the same bodies again records "
            "nothing new; the same id with another body is 409. See docs/scores.md."
        ),
        request=ScoreCreateIn,
        responses={200: ScoreBatchOut, 201: ScoreOut},
        examples=_EXAMPLES,
    )
    def create(self, request, agent_id: str | None = None):
        data = request.data
        scores = services.scores_parse(data)
        result = services.scores_create(
            agent=self.agent,
            scores=scores,
            source=Source.API,
            author={"api_key_id": self.credential.key.pk},
        )
        if isinstance(data, dict):
            return json_response(result.data[0], status=201 if result.created else 200)
        return json_response(
            {
                "object": "score_batch",
                "created": len(result.created),
                "unchanged": len(result.data) - len(result.created),
                "data": result.data,
            }
        )

    @extend_schema(
        summary="Retrieve a score (extension)", parameters=ID_PARAMETER, responses={200: ScoreOut}
    )
    def retrieve(self, request, id: str, agent_id: str | None = None):
        return json_response(score_to_dict(selectors.score_get(agent=self.agent, score_id=id)))

    @extend_schema(
        summary="Delete a score (extension)",
        parameters=ID_PARAMETER,
        responses={204: OpenApiResponse(description="Deleted.")},
    )
    def destroy(self, request, id: str, agent_id: str | None = None):
        require_no_body_fields(request)
        services.score_delete(agent=self.agent, score_id=id)
        return HttpResponse(status=204)


class ScoreConfigViewSet(AgentViewSet):
    required_scopes = {
        "list": READ,
        "retrieve": READ,
        "create": WRITE,
        "partial_update": WRITE,
        "archive": WRITE,
        "restore": WRITE,
    }
    extension_actions = tuple(required_scopes)
    error_statuses = {
        "retrieve": (404,),
        "create": (409,),
        "partial_update": (404,),
        "archive": (404,),
        "restore": (404,),
    }
    openapi_tags = ["Scores"]

    @extend_schema(
        summary="List score configs (extension)",
        description="The Agent's score configs by name: active ones, or `archived=true` for "
        "the archived ones.",
        parameters=[
            *PAGE_PARAMETERS,
            OpenApiParameter(
                "archived", OpenApiTypes.BOOL, description=selectors.CONFIG_FILTERS["archived"]
            ),
        ],
        responses={200: ScoreConfigList},
    )
    def list(self, request, agent_id: str | None = None):
        params = request.query_params
        selectors.params_check(params, (*selectors.PAGE_PARAMS, *selectors.CONFIG_FILTERS))
        archived = params.get("archived", "false")
        if archived not in ("true", "false"):
            raise BadRequest(f"archived must be true or false; got {archived!r}.")
        queryset = selectors.score_config_list(agent=self.agent, archived=archived == "true")
        return self.paginated(queryset, keyset=selectors.CONFIG_KEYSET, render=score_config_to_dict)

    @extend_schema(
        summary="Create a score config (extension)",
        description="What scores of this name must be: `numeric` (optional `min_value`, "
        "`max_value`), `categorical` (`categories`) or `boolean`. The name is unique per "
        "Agent (409). Scores whose name has an active config are checked against it.",
        request=ScoreConfigCreateIn,
        responses={201: ScoreConfigOut},
    )
    def create(self, request, agent_id: str | None = None):
        config = services.score_config_create(agent=self.agent, data=request.data)
        return json_response(score_config_to_dict(config), status=201)

    @extend_schema(
        summary="Retrieve a score config (extension)",
        parameters=ID_PARAMETER,
        responses={200: ScoreConfigOut},
    )
    def retrieve(self, request, id: str, agent_id: str | None = None):
        config = services.score_config_get(agent=self.agent, config_id=id)
        return json_response(score_config_to_dict(config))

    @extend_schema(
        summary="Update a score config (extension)",
        description="Range, categories, description, or `archived`. The name and data type "
        "do not change (400): archive the config and create another.",
        parameters=ID_PARAMETER,
        request=ScoreConfigUpdateIn,
        responses={200: ScoreConfigOut},
    )
    def partial_update(self, request, id: str, agent_id: str | None = None):
        config = services.score_config_update(agent=self.agent, config_id=id, data=request.data)
        return json_response(score_config_to_dict(config))

    @extend_schema(
        summary="Archive a score config (extension)",
        description="Its name is free-form again until it is restored; scores already given stay.",
        parameters=ID_PARAMETER,
        request=None,
        responses={200: ScoreConfigOut},
    )
    def archive(self, request, id: str, agent_id: str | None = None):
        require_no_body_fields(request)
        config = services.score_config_archive(agent=self.agent, config_id=id, archived=True)
        return json_response(score_config_to_dict(config))

    @extend_schema(
        summary="Restore an archived score config (extension)",
        parameters=ID_PARAMETER,
        request=None,
        responses={200: ScoreConfigOut},
    )
    def restore(self, request, id: str, agent_id: str | None = None):
        require_no_body_fields(request)
        config = services.score_config_archive(agent=self.agent, config_id=id, archived=False)
        return json_response(score_config_to_dict(config))


# --- End users' feedback, with their browser token ------------------------------------------------


def _feedback_body(data) -> tuple[bool, str | None]:
    if not isinstance(data, dict):
        raise BadRequest('The body must be a JSON object: {"value": true|false, "comment": ...}.')
    unknown = sorted(set(data) - {"value", "comment"})
    if unknown:
        raise BadRequest(f"{unknown[0]}: unknown field; allowed fields: value, comment.")
    value = data.get("value")
    if not isinstance(value, bool):
        raise BadRequest("value: required, true (thumbs up) or false (thumbs down).")
    comment = data.get("comment")
    if comment is not None:
        if not isinstance(comment, str) or "\x00" in comment:
            raise BadRequest("comment: must be a string.")
        if len(comment) > COMMENT_MAX_LENGTH:
            raise BadRequest(f"comment: at most {COMMENT_MAX_LENGTH} characters.")
        comment = comment.strip() or None
    return value, comment


class MeFeedbackViewSet(AgentViewSet):
    """/v1/me/...feedback: the end user of a browser token votes on the assistant's messages
    of their own conversations, from the Agent's allowed origins."""

    # Every browser token holds both (apps.workspaces.credentials.BROWSER_TOKEN_SCOPES).
    required_scopes = {"give": WRITE, "withdraw": WRITE, "list": "conversations:read"}
    credential_kinds = ("browser_token",)
    extension_actions = ("give", "withdraw", "list")
    error_statuses = {"give": (404,), "withdraw": (404,), "list": (404,)}
    openapi_tags = ["Browser tokens"]

    @property
    def end_user_id(self) -> str:
        return cast(str, self.credential.end_user_id)

    def _origin_check(self, request) -> None:
        # CORS only keeps a foreign page from reading answers; a write must also not happen
        # from one: a browser always says where a cross-origin request comes from.
        origin = request.headers.get("Origin")
        if origin and origin.rstrip("/").lower() not in agent_allowed_origins(agent=self.agent):
            raise InsufficientScope(
                "conversations:read",
                f"The origin {origin} is not one of this Agent's allowed origins; nothing "
                "was recorded.",
            )

    @extend_schema(
        summary="Give feedback on a message (browser token, extension)",
        description="Thumbs up (`true`) or down (`false`), with an optional comment, on an "
        "assistant message of one of the token's end user's conversations. One per message "
        "and user: sending again changes it (200; 201 the first time). Another user's "
        "message, a user message or an unknown one: 404, nothing written. CORS for the "
        "Agent's allowed origins; from another origin 403. See docs/scores.md.",
        parameters=ID_PARAMETER,
        request=FeedbackIn,
        responses={200: ScoreOut, 201: ScoreOut},
    )
    def give(self, request, id: str):
        self._origin_check(request)
        value, comment = _feedback_body(request.data)
        score, created = services.feedback_give(
            agent=self.agent,
            end_user_id=self.end_user_id,
            message_id=id,
            value=value,
            comment=comment,
        )
        return json_response(score_to_dict(score), status=201 if created else 200)

    @extend_schema(
        summary="Withdraw feedback on a message (browser token, extension)",
        parameters=ID_PARAMETER,
        request=None,
        responses={204: OpenApiResponse(description="Deleted.")},
    )
    def withdraw(self, request, id: str):
        self._origin_check(request)
        require_no_body_fields(request)
        services.feedback_withdraw(agent=self.agent, end_user_id=self.end_user_id, message_id=id)
        return HttpResponse(status=204)

    @extend_schema(
        summary="My feedback in a conversation (browser token, extension)",
        description="The token's end user's feedback on the messages of one of their "
        "conversations (to show the thumbs as they were left); another user's conversation "
        "is 404.",
        parameters=ID_PARAMETER + PAGE_PARAMETERS,
        responses={200: ScoreList},
    )
    def list(self, request, id: str):
        selectors.params_check(request.query_params, selectors.PAGE_PARAMS)
        selectors.conversation_of_end_user_check(
            agent=self.agent, conversation_id=id, end_user_id=self.end_user_id
        )
        queryset = selectors.score_list(
            agent=self.agent,
            filters={"conversation_id": id, "source": Source.END_USER, "name": FEEDBACK_NAME},
        ).filter(end_user_id=self.end_user_id)
        return self.paginated(queryset, keyset=selectors.SCORE_KEYSET, render=score_to_dict)
