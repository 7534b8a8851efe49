"""Routes of this app under /v1, served in both forms by apps.api.urls."""

from apps.api.routing import Route
from apps.workspaces.api import ApiKeyViewSet

routes: list[Route] = [
    Route("api_keys", ApiKeyViewSet.as_view({"get": "list", "post": "create"}), "api-key-list"),
    Route(
        "api_keys/<str:id>/revoke",
        ApiKeyViewSet.as_view({"post": "revoke"}),
        "api-key-revoke",
    ),
]
