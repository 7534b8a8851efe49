"""All of /v1: each app's routes in both path forms, the platform's own, then a JSON 404. It
sits in config/, where every app may be known: the platform (apps.api) knows none of them."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView
from rest_framework.permissions import AllowAny

from apps.activity import api_urls as activity
from apps.api import views
from apps.api.routing import agent_form_only, both_forms, plain_form_only
from apps.knowledge import api_urls as knowledge
from apps.scores import api_urls as scores
from apps.tools import api_urls as tools
from apps.usage import api_urls as usage
from apps.webhooks import api_urls as webhooks
from apps.workspaces import api_urls as workspaces

# The document and its viewer are public: they describe the API, they expose no data.
PUBLIC = {"authentication_classes": [], "permission_classes": [AllowAny], "throttle_classes": []}

urlpatterns = [
    path("openapi.json", SpectacularJSONAPIView.as_view(**PUBLIC), name="openapi"),
    path("docs", SpectacularSwaggerView.as_view(url_name="openapi", **PUBLIC), name="api-docs"),
    *both_forms(
        workspaces.connection_routes
        + activity.routes
        + knowledge.routes
        + webhooks.routes
        + workspaces.routes
        + usage.routes
        + tools.routes
        + scores.routes
    ),
    *plain_form_only(activity.browser_routes + scores.browser_routes),
    *agent_form_only(
        activity.agent_only_routes + knowledge.agent_only_routes + webhooks.agent_only_routes
    ),
    *plain_form_only(workspaces.plain_routes),
    re_path(r"^(?P<rest>.*)$", views.unknown_path),
]
