"""Routes of this app under /v1, served in both forms by config.api_urls."""

from apps.activity.analytics_api import AnalyticsViewSet
from apps.activity.api import ConversationViewSet, RunViewSet, UserViewSet
from apps.activity.browser_token_api import AuthTokenViewSet, MeConversationViewSet
from apps.activity.ingest_api import IngestViewSet, OtlpTracesViewSet
from apps.activity.search_api import SearchViewSet
from apps.api.routing import Route
from apps.workspaces.cors import browser_cors

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
    Route(
        "runs/<str:id>/attributes",
        RunViewSet.as_view({"get": "attributes"}),
        "run-attributes",
    ),
    Route("runs/<str:id>/steps", RunViewSet.as_view({"get": "steps"}), "run-steps"),
    Route("analytics/steps", AnalyticsViewSet.as_view({"get": "steps"}), "analytics-steps"),
    Route("analytics/runs", AnalyticsViewSet.as_view({"get": "runs"}), "analytics-runs"),
    Route("search/messages", SearchViewSet.as_view({"get": "messages"}), "search-messages"),
    Route("search/steps", SearchViewSet.as_view({"get": "steps"}), "search-steps"),
    Route("ingest", IngestViewSet.as_view({"post": "create"}), "activity-ingest"),
    # OTEL_EXPORTER_OTLP_ENDPOINT=<base>/v1/otlp: the exporter appends /v1/traces itself.
    Route("otlp/v1/traces", OtlpTracesViewSet.as_view({"post": "create"}), "otlp-traces"),
    Route("auth_tokens", AuthTokenViewSet.as_view({"post": "create"}), "auth-token-create"),
]
# A browser token names its Agent, so /v1/me has the short form only, with CORS.
browser_routes: list[Route] = [
    Route(
        "me/conversations",
        browser_cors(MeConversationViewSet.as_view({"get": "list"})),
        "me-conversation-list",
    ),
    Route(
        "me/conversations/<str:id>/messages",
        browser_cors(MeConversationViewSet.as_view({"get": "messages"})),
        "me-conversation-messages",
    ),
]
agent_only_routes: list[Route] = []
