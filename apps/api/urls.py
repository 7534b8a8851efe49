"""All of /v1: each app's routes in both path forms, the platform's own, then a JSON 404."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from apps.activity import api_urls as activity
from apps.api import views
from apps.api.routing import Route, agent_form_only, both_forms
from apps.knowledge import api_urls as knowledge
from apps.webhooks import api_urls as webhooks

platform_routes = [
    Route("connection", views.ConnectionViewSet.as_view({"get": "retrieve"}), "connection"),
]

urlpatterns = [
    path("openapi.json", SpectacularAPIView.as_view(), name="openapi"),
    path("docs", SpectacularSwaggerView.as_view(url_name="openapi"), name="api-docs"),
    *both_forms(platform_routes + activity.routes + knowledge.routes + webhooks.routes),
    *agent_form_only(
        activity.agent_only_routes + knowledge.agent_only_routes + webhooks.agent_only_routes
    ),
    re_path(r"^(?P<rest>.*)$", views.unknown_path),
]
