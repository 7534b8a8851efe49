"""Routes of this app under /v1: webhook operations exist only in the agent-scoped form."""

from apps.api.routing import Route
from apps.webhooks.api import WebhookDeliveryViewSet, WebhookViewSet

routes: list[Route] = []
agent_only_routes: list[Route] = [
    Route(
        "webhook",
        WebhookViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        "webhook",
    ),
    Route("webhook/test", WebhookViewSet.as_view({"post": "test"}), "webhook-test"),
    Route("webhook/health", WebhookViewSet.as_view({"get": "health"}), "webhook-health"),
    Route("webhook/secret", WebhookViewSet.as_view({"post": "rotate_secret"}), "webhook-secret"),
    Route(
        "webhook/deliveries",
        WebhookDeliveryViewSet.as_view({"get": "list"}),
        "webhook-delivery-list",
    ),
    Route(
        "webhook/deliveries/recover",
        WebhookDeliveryViewSet.as_view({"post": "recover"}),
        "webhook-delivery-recover",
    ),
    Route(
        "webhook/deliveries/<str:delivery_id>",
        WebhookDeliveryViewSet.as_view({"get": "retrieve"}),
        "webhook-delivery-detail",
    ),
    Route(
        "webhook/deliveries/<str:delivery_id>/retry",
        WebhookDeliveryViewSet.as_view({"post": "retry"}),
        "webhook-delivery-retry",
    ),
]
