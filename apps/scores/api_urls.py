"""Routes of this app under /v1, served in both forms by config.api_urls."""

from apps.api.routing import Route
from apps.scores.api import MeFeedbackViewSet, ScoreConfigViewSet, ScoreViewSet
from apps.workspaces.cors import browser_cors

routes: list[Route] = [
    Route("scores", ScoreViewSet.as_view({"get": "list", "post": "create"}), "score-list"),
    Route(
        "scores/<str:id>",
        ScoreViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
        "score-detail",
    ),
    Route(
        "score_configs",
        ScoreConfigViewSet.as_view({"get": "list", "post": "create"}),
        "score-config-list",
    ),
    Route(
        "score_configs/<str:id>",
        ScoreConfigViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        "score-config-detail",
    ),
    Route(
        "score_configs/<str:id>/archive",
        ScoreConfigViewSet.as_view({"post": "archive"}),
        "score-config-archive",
    ),
    Route(
        "score_configs/<str:id>/restore",
        ScoreConfigViewSet.as_view({"post": "restore"}),
        "score-config-restore",
    ),
]
# A browser token names its Agent, so /v1/me has the short form only, with CORS.
browser_routes: list[Route] = [
    Route(
        "me/messages/<str:id>/feedback",
        browser_cors(
            MeFeedbackViewSet.as_view({"put": "give", "delete": "withdraw"}),
            methods=("PUT", "DELETE"),
        ),
        "me-message-feedback",
    ),
    Route(
        "me/conversations/<str:id>/feedback",
        browser_cors(MeFeedbackViewSet.as_view({"get": "list"})),
        "me-conversation-feedback",
    ),
]
