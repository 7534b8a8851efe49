"""/v1/agents/{agentId}/webhook... (contract 4.3): owner-only, any active Agent of the key's
workspace. Thin: parse, call a selector or service, render with plain functions."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema

from apps.api.pagination import PAGE_PARAMETERS, list_operation
from apps.api.serializers import list_envelope
from apps.api.views import json_response
from apps.webhooks import selectors, services
from apps.webhooks.models import EVENT_TYPES, DeliveryStatus
from apps.webhooks.rendering import (
    delivery_to_dict,
    health_to_dict,
    recovery_to_dict,
    secret_to_dict,
    webhook_to_dict,
)
from apps.webhooks.serializers import (
    WebhookDeliveryOut,
    WebhookHealthOut,
    WebhookOut,
    WebhookRecoverIn,
    WebhookRecoveryOut,
    WebhookSecretOut,
    WebhookTestIn,
    WebhookUpdateIn,
)
from apps.workspaces.viewsets import AgentViewSet

WebhookDeliveryList = list_envelope(WebhookDeliveryOut, "WebhookDeliveryList")

AGENT_PARAMETER = OpenApiParameter(
    "agent_id",
    {"type": "string", "minLength": 1},
    OpenApiParameter.PATH,
    description="Any active Agent of the key's workspace.",
)
DELIVERY_PARAMETER = OpenApiParameter(
    "delivery_id", {"type": "string", "minLength": 1}, OpenApiParameter.PATH
)
LIST_PARAMETERS = [
    *PAGE_PARAMETERS,
    OpenApiParameter(
        "status",
        OpenApiTypes.STR,
        enum=list(DeliveryStatus.values),
        description="Only deliveries in this status (extension).",
    ),
    OpenApiParameter(
        "event_type",
        OpenApiTypes.STR,
        enum=list(EVENT_TYPES),
        description="Only deliveries of this event (extension).",
    ),
]


def _has_body(request) -> bool:
    return bool(request._request.body.strip())


class WorkspaceAgentViewSet(AgentViewSet):
    """Webhook operations may target any active Agent of the key's workspace."""

    agent_scope = "workspace"


class WebhookViewSet(WorkspaceAgentViewSet):
    required_scopes = {
        "retrieve": "webhooks:read",
        "partial_update": "webhooks:write",
        "test": "webhooks:write",
        "rotate_secret": "webhooks:write",
        "health": "webhooks:read",
    }
    extension_actions = ("partial_update", "test", "rotate_secret", "health")
    error_statuses = {"test": (409,)}
    openapi_tags = ["Webhooks"]

    @extend_schema(
        summary="Retrieve the webhook configuration",
        description="The Agent's webhook configuration (never the secret). An Agent that has "
        "never configured one reports `enabled: false`, no events, `url: null`.",
        parameters=[AGENT_PARAMETER],
        responses={200: WebhookOut},
    )
    def retrieve(self, request, agent_id: str):
        webhook = selectors.webhook_get(agent=self.agent)
        return json_response(webhook_to_dict(webhook, agent=self.agent))

    @extend_schema(
        summary="Configure the webhook",
        description="Change any of `url` (checked: public http(s) only), `events`, `enabled` "
        "and `paused`. Unpausing sends the deliveries that waited while paused.",
        parameters=[AGENT_PARAMETER],
        request=WebhookUpdateIn,
        responses={200: WebhookOut},
    )
    def partial_update(self, request, agent_id: str):
        serializer = WebhookUpdateIn(data=request.data)
        serializer.is_valid(raise_exception=True)
        webhook = services.webhook_update(agent=self.agent, **serializer.validated_data)
        return json_response(webhook_to_dict(webhook, agent=self.agent))

    @extend_schema(
        summary="Send a test event",
        description="Sends a signed test event now (`is_test: true`), even while paused or "
        "disabled, and returns the delivery with its attempt. The body is optional. 409 when "
        "no URL is configured.",
        parameters=[AGENT_PARAMETER],
        request=WebhookTestIn,
        responses={200: WebhookDeliveryOut},
    )
    def test(self, request, agent_id: str):
        data = {}
        if _has_body(request):
            serializer = WebhookTestIn(data=request.data)
            serializer.is_valid(raise_exception=True)
            data = serializer.validated_data
        delivery = services.delivery_send_test(agent=self.agent, event_type=data.get("event_type"))
        return json_response(delivery_to_dict(delivery))

    @extend_schema(
        summary="Delivery health",
        description="What the webhook is doing: `healthy`, `failing` since when with the last "
        "error, `paused`, `disabled`, ... and how many deliveries wait or failed. The console's "
        "badge shows the same.",
        parameters=[AGENT_PARAMETER],
        responses={200: WebhookHealthOut},
    )
    def health(self, request, agent_id: str):
        health = selectors.webhook_health(agent=self.agent)
        return json_response(health_to_dict(health, agent=self.agent))

    @extend_schema(
        summary="Rotate the signing secret",
        description="Creates a new `whsec_` secret and returns it; it is not shown again. "
        "For 24 hours deliveries are signed with both the new and the previous secret.",
        parameters=[AGENT_PARAMETER],
        request=None,
        responses={200: WebhookSecretOut},
    )
    def rotate_secret(self, request, agent_id: str):
        webhook, secret = services.webhook_secret_rotate(agent=self.agent)
        return json_response(secret_to_dict(webhook, secret))


class WebhookDeliveryViewSet(WorkspaceAgentViewSet):
    required_scopes = {
        "list": "webhooks:read",
        "retrieve": "webhooks:read",
        "retry": "webhooks:write",
        "recover": "webhooks:write",
    }
    extension_actions = ("retrieve", "recover")
    error_statuses = {"retrieve": (404,), "retry": (404, 409), "recover": (409,)}
    openapi_tags = ["Webhooks"]

    @list_operation(
        summary="List webhook deliveries",
        description="The Agent's deliveries with their attempt history, newest first.",
        parameters=[AGENT_PARAMETER, *LIST_PARAMETERS],
        responses={200: WebhookDeliveryList},
    )
    def list(self, request, agent_id: str):
        queryset = selectors.delivery_list(
            agent=self.agent,
            status=request.query_params.get("status"),
            event_type=request.query_params.get("event_type"),
        )
        return self.paginated(queryset, keyset=selectors.DELIVERY_KEYSET, render=delivery_to_dict)

    @extend_schema(
        summary="Retrieve a webhook delivery",
        parameters=[AGENT_PARAMETER, DELIVERY_PARAMETER],
        responses={200: WebhookDeliveryOut},
    )
    def retrieve(self, request, agent_id: str, delivery_id: str):
        delivery = selectors.delivery_get(agent=self.agent, delivery_id=delivery_id)
        return json_response(delivery_to_dict(delivery))

    @extend_schema(
        summary="Retry a webhook delivery",
        description="Sends the delivery now, whatever its status, and returns it with the new "
        "attempt appended. A manual retry does not change the automatic schedule. 409 while "
        "the delivery is being sent.",
        parameters=[AGENT_PARAMETER, DELIVERY_PARAMETER],
        request=None,
        responses={200: WebhookDeliveryOut},
    )
    def retry(self, request, agent_id: str, delivery_id: str):
        delivery = services.delivery_retry(agent=self.agent, delivery_id=delivery_id)
        return json_response(delivery_to_dict(delivery))

    @extend_schema(
        summary="Retry all failed deliveries since a time",
        description="Every failed delivery created at or after `since` (test sends excepted) "
        "becomes due now and is sent again by the dispatcher, once, on the schedule it had "
        '(Svix\'s "recover"). While the webhook is paused or disabled they wait and go when '
        "it resumes. 409 when no URL is configured.",
        parameters=[AGENT_PARAMETER],
        request=WebhookRecoverIn,
        responses={200: WebhookRecoveryOut},
    )
    def recover(self, request, agent_id: str):
        serializer = WebhookRecoverIn(data=request.data)
        serializer.is_valid(raise_exception=True)
        since = serializer.validated_data["since"]
        recovered = services.deliveries_recover(agent=self.agent, since=since)
        return json_response(recovery_to_dict(agent=self.agent, since=since, recovered=recovered))
