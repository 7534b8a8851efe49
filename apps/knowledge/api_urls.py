"""Routes of this app under /v1, served in both forms by config.api_urls."""

from apps.api.routing import Route
from apps.knowledge.api import KnowledgeFileViewSet, KnowledgeViewSet
from apps.knowledge.gaps.api import KnowledgeGapViewSet

routes: list[Route] = [
    Route("knowledge", KnowledgeViewSet.as_view({"get": "list"}), "knowledge-list"),
    Route(
        "knowledge/files",
        KnowledgeFileViewSet.as_view({"post": "create_file"}),
        "knowledge-files",
    ),
    Route("knowledge/urls", KnowledgeViewSet.as_view({"post": "create_url"}), "knowledge-urls"),
    Route("knowledge/search", KnowledgeViewSet.as_view({"post": "search"}), "knowledge-search"),
    # Unanswered questions (apps.knowledge.gaps), before the document routes they would match.
    Route("knowledge/gaps", KnowledgeGapViewSet.as_view({"get": "list"}), "knowledge-gaps"),
    Route(
        "knowledge/gaps/<str:id>",
        KnowledgeGapViewSet.as_view({"get": "retrieve"}),
        "knowledge-gap-detail",
    ),
    Route(
        "knowledge/gaps/<str:id>/resolve",
        KnowledgeGapViewSet.as_view({"post": "resolve"}),
        "knowledge-gap-resolve",
    ),
    Route(
        "knowledge/gaps/<str:id>/reopen",
        KnowledgeGapViewSet.as_view({"post": "reopen"}),
        "knowledge-gap-reopen",
    ),
    Route(
        "knowledge/<str:id>",
        KnowledgeViewSet.as_view(
            {"get": "retrieve", "patch": "partial_update", "delete": "destroy"}
        ),
        "knowledge-detail",
    ),
    Route(
        "knowledge/<str:id>/content",
        KnowledgeViewSet.as_view({"get": "content"}),
        "knowledge-content",
    ),
    Route(
        "knowledge/<str:id>/indexing",
        KnowledgeViewSet.as_view({"get": "indexing"}),
        "knowledge-indexing",
    ),
    Route(
        "knowledge/<str:id>/refresh",
        KnowledgeViewSet.as_view({"post": "refresh"}),
        "knowledge-refresh",
    ),
    Route(
        "knowledge/<str:id>/schedule",
        KnowledgeViewSet.as_view({"patch": "schedule"}),
        "knowledge-schedule",
    ),
]
agent_only_routes: list[Route] = []
