"""GET /v1/knowledge/gaps and one group's reads and actions (an extension of the contract: its
own object, `knowledge_gap`). Thin: parse, call a selector or service, render."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers

from apps.api.pagination import PAGE_PARAMETERS
from apps.api.serializers import list_envelope
from apps.api.views import json_response, require_no_body_fields
from apps.knowledge.gaps import resolution, selectors
from apps.knowledge.gaps.rendering import gap_detail_out, gap_out
from apps.workspaces.viewsets import AgentViewSet

READ, WRITE = "knowledge:read", "knowledge:write"
ID_PARAMETER = OpenApiParameter(
    "id", OpenApiTypes.STR, OpenApiParameter.PATH, description="The group's id (`gap_...`)."
)


class KnowledgeGapPassageOut(serializers.Serializer):
    document_id = serializers.CharField(allow_null=True)
    document_name = serializers.CharField(allow_null=True)
    passage = serializers.CharField(allow_null=True)
    score = serializers.FloatField(
        allow_null=True, help_text="The passage's relevance as the retrieval step recorded it."
    )


class KnowledgeGapExampleOut(serializers.Serializer):
    conversation_id = serializers.CharField()
    run_id = serializers.CharField()
    question = serializers.CharField()
    asked_at = serializers.DateTimeField()


@extend_schema_serializer(component_name="KnowledgeGap")
class KnowledgeGapOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["knowledge_gap"])
    id = serializers.CharField()
    status = serializers.ChoiceField(
        choices=list(selectors.STATUSES),
        help_text="`resolved` once marked so; a question of the group asked later opens it "
        "again (`reopened_at`).",
    )
    representative_question = serializers.CharField(
        help_text="The group's most asked question (ties: the first asked)."
    )
    question_count = serializers.IntegerField(
        min_value=0, help_text="Retrieval steps that asked a question of the group."
    )
    no_answer_count = serializers.IntegerField(
        min_value=0,
        help_text="Of those, the searches that found nothing at or above the threshold (the "
        "others found only passages scoring under 0.5, or their run got negative feedback).",
    )
    negative_feedback_count = serializers.IntegerField(
        min_value=0, help_text="Of those, the ones whose run an end user gave a thumbs down."
    )
    distinct_question_count = serializers.IntegerField(min_value=0)
    first_seen_at = serializers.DateTimeField()
    last_seen_at = serializers.DateTimeField()
    best_passage = KnowledgeGapPassageOut(
        allow_null=True, help_text="The best passage any of its searches found, or null."
    )
    example_conversations = KnowledgeGapExampleOut(
        many=True, help_text="Conversations of its latest askings, newest first (up to 3)."
    )
    resolved_at = serializers.DateTimeField(allow_null=True)
    reopened_at = serializers.DateTimeField(allow_null=True)


class KnowledgeGapQuestionOut(serializers.Serializer):
    question = serializers.CharField()
    count = serializers.IntegerField(min_value=1)
    first_seen_at = serializers.DateTimeField()
    last_seen_at = serializers.DateTimeField()


class KnowledgeGapAskingOut(serializers.Serializer):
    question = serializers.CharField()
    reason = serializers.ChoiceField(choices=["no_answer", "low_score", "negative_feedback"])
    negative_feedback = serializers.BooleanField()
    best_score = serializers.FloatField(allow_null=True)
    best_document_id = serializers.CharField(allow_null=True)
    run_id = serializers.CharField()
    conversation_id = serializers.CharField(allow_null=True)
    asked_at = serializers.DateTimeField()


@extend_schema_serializer(component_name="KnowledgeGapDetail")
class KnowledgeGapDetailOut(KnowledgeGapOut):
    example_conversations = KnowledgeGapExampleOut(
        many=True, help_text="Conversations of its latest askings, newest first (up to 10)."
    )
    questions = KnowledgeGapQuestionOut(
        many=True, help_text="Its distinct questions, most asked first (up to 20)."
    )
    askings = KnowledgeGapAskingOut(many=True, help_text="Its latest askings (up to 20).")


KnowledgeGapListOut = list_envelope(KnowledgeGapOut, "KnowledgeGapList")


class KnowledgeGapViewSet(AgentViewSet):
    openapi_tags = ["Knowledge"]
    required_scopes = {"list": READ, "retrieve": READ, "resolve": WRITE, "reopen": WRITE}
    error_statuses = {"retrieve": (404,), "resolve": (404, 409), "reopen": (404, 409)}
    extension_actions = ("list", "retrieve", "resolve", "reopen")

    @extend_schema(
        summary="List unanswered questions",
        description="The questions the Agent's knowledge could not answer, grouped by meaning: "
        "retrieval steps whose search found nothing at or above the threshold or whose best "
        "passage scored under 0.5, and runs with negative feedback that used retrieval. Last "
        "asked first. The groups are kept current by a background sweep (every minute), not "
        "computed per request. Any other query parameter is a 400.",
        parameters=[
            *PAGE_PARAMETERS,
            OpenApiParameter(
                "status",
                {"type": "string", "enum": list(selectors.STATUSES)},
                description="Only groups with this status.",
            ),
        ],
        responses={200: KnowledgeGapListOut},
    )
    def list(self, request, agent_id: str | None = None):
        filters, page = selectors.gap_filters_parse(request.query_params)
        result = selectors.gap_list(agent=self.agent, filters=filters, page=page)
        return json_response(result.envelope(gap_out))

    @extend_schema(
        summary="Get a group of unanswered questions",
        description="With its distinct questions and latest askings.",
        parameters=[ID_PARAMETER],
        responses={200: KnowledgeGapDetailOut},
    )
    def retrieve(self, request, id: str, agent_id: str | None = None):
        gap = selectors.gap_get(agent=self.agent, gap_id=id)
        return json_response(
            gap_detail_out(
                gap,
                questions=selectors.gap_questions(gap=gap),
                askings=selectors.gap_askings(gap=gap),
            )
        )

    @extend_schema(
        summary="Mark a group of unanswered questions resolved",
        description="Once a document answers them. A question of the group asked later opens "
        "it again. 409 when it is already resolved.",
        parameters=[ID_PARAMETER],
        request=None,
        responses={200: KnowledgeGapOut},
    )
    def resolve(self, request, id: str, agent_id: str | None = None):
        require_no_body_fields(request)
        gap = resolution.gap_resolve(agent=self.agent, gap_id=id)
        return json_response(gap_out(selectors.gap_get(agent=self.agent, gap_id=gap.pk)))

    @extend_schema(
        summary="Open a resolved group of unanswered questions again",
        description="409 when it is open.",
        parameters=[ID_PARAMETER],
        request=None,
        responses={200: KnowledgeGapOut},
    )
    def reopen(self, request, id: str, agent_id: str | None = None):
        require_no_body_fields(request)
        gap = resolution.gap_reopen(agent=self.agent, gap_id=id)
        return json_response(gap_out(selectors.gap_get(agent=self.agent, gap_id=gap.pk)))
