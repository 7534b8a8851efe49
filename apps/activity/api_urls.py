"""Routes of this app under /v1, served in both forms by apps.api.urls."""

from apps.activity.api import ConversationViewSet, IngestViewSet, RunViewSet, UserViewSet
from apps.api.routing import Route

routes: list[Route] = [
    Route("users", UserViewSet.as_view({"get": "list"}), "user-list"),
    Route("users/<str:id>", UserViewSet.as_view({"get": "retrieve"}), "user-detail"),
    Route("conversations", ConversationViewSet.as_view({"get": "list"}), "conversation-list"),
    Route(
        "conversations/<str:id>",
        ConversationViewSet.as_view({"get": "retrieve"}),
        "conversation-detail",
    ),
    Route(
        "conversations/<str:id>/messages",
        ConversationViewSet.as_view({"get": "messages"}),
        "conversation-messages",
    ),
    Route("runs", RunViewSet.as_view({"get": "list"}), "run-list"),
    Route("runs/<str:id>", RunViewSet.as_view({"get": "retrieve"}), "run-detail"),
    Route("ingest", IngestViewSet.as_view({"post": "create"}), "activity-ingest"),
]
agent_only_routes: list[Route] = []
