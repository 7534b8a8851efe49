"""Webhook shapes: `...Out` describe the output for OpenAPI (built by apps.webhooks.rendering),
`...In` validate request bodies strictly."""

from rest_framework import serializers

from apps.api.serializers import (
    StrictBooleanField,
    StrictCharField,
    StrictDateTimeField,
    StrictListField,
    StrictSerializer,
)
from apps.webhooks.models import EVENT_TYPES, AttemptStatus, DeliveryStatus
from apps.webhooks.selectors import HEALTH_COUNT_CAP, HealthState

DELIVERY_STATUS_HELP = (
    "`pending`: waiting for its first attempt or its next automatic retry (`next_attempt_at`); "
    "`sending`: an attempt is in flight; `succeeded`: the endpoint answered 2xx; "
    "`failed`: no more automatic attempts (the retry schedule is used up, or a test or manual "
    "send failed); `paused`: waiting because the webhook is paused or disabled, sent when it "
    "resumes."
)
ATTEMPT_STATUS_HELP = (
    "`succeeded`: 2xx answer; `failed`: any other HTTP status (`response_status` set); "
    "`timeout`: no connection or no answer within the connect or read timeout; `error`: the "
    "connection failed (refused, TLS, address refused by the network guard) or the attempt was "
    "interrupted before its result was recorded."
)


class WebhookOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["webhook"])
    agent_id = serializers.CharField()
    enabled = serializers.BooleanField()
    events = serializers.ListField(child=serializers.ChoiceField(choices=EVENT_TYPES))
    url = serializers.CharField(
        allow_null=True, help_text="The target URL; null until one is configured."
    )
    paused_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When deliveries were paused (by an owner, or automatically after repeated "
        "failed deliveries); null while not paused.",
    )
    updated_at = serializers.DateTimeField(
        help_text="Last configuration change; the Agent's creation time if never configured."
    )


class WebhookAttemptOut(serializers.Serializer):
    attempt = serializers.IntegerField(min_value=1, help_text="1 for the first attempt.")
    retry = serializers.IntegerField(
        min_value=0,
        help_text="Position in the automatic retry schedule when the attempt was made: 0 for "
        "the first send, n for the n-th automatic retry. Manual retries keep the position.",
    )
    status = serializers.ChoiceField(choices=AttemptStatus.values, help_text=ATTEMPT_STATUS_HELP)
    response_status = serializers.IntegerField(
        allow_null=True, help_text="HTTP status of the answer; null without an answer."
    )
    error_message = serializers.CharField(allow_null=True, help_text="Null on success.")
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField()


class WebhookDeliveryOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["webhook_delivery"])
    id = serializers.CharField(
        help_text="Also sent as the `webhook-id` header: de-duplicate on it."
    )
    agent_id = serializers.CharField()
    run_id = serializers.CharField(
        allow_null=True, help_text="The run of a `run.*` event; null for `usage.threshold_reached`."
    )
    event_type = serializers.ChoiceField(choices=EVENT_TYPES)
    is_test = serializers.BooleanField()
    status = serializers.ChoiceField(choices=DeliveryStatus.values, help_text=DELIVERY_STATUS_HELP)
    attempts = serializers.IntegerField(min_value=0, help_text="Attempts made, manual included.")
    retry_count = serializers.IntegerField(
        min_value=0, help_text="Automatic retries used of the schedule (at most 6)."
    )
    response_status = serializers.IntegerField(
        allow_null=True, help_text="HTTP status of the latest attempt; null without an answer."
    )
    error_message = serializers.CharField(
        allow_null=True, help_text="Why the latest attempt failed; null on success or before any."
    )
    next_attempt_at = serializers.DateTimeField(
        allow_null=True, help_text="When the next automatic attempt is due; null when none is."
    )
    attempt_history = WebhookAttemptOut(many=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class WebhookSecretOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["webhook_secret"])
    agent_id = serializers.CharField()
    secret = serializers.CharField(
        help_text="`whsec_` and base64: the Standard Webhooks signing secret. Shown only here."
    )


class WebhookUpdateIn(StrictSerializer):
    url = StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=2048,
        help_text="A public http(s) URL; a bare host name becomes https. Empty or null clears it.",
    )
    events = StrictListField(
        child=serializers.ChoiceField(choices=EVENT_TYPES),
        required=False,
        max_length=len(EVENT_TYPES),
    )
    enabled = StrictBooleanField(required=False, help_text="Enabling needs a URL.")
    paused = StrictBooleanField(
        required=False, help_text="true pauses deliveries; false resumes the ones that waited."
    )

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError(
                "Send at least one of url, events, enabled and paused."
            )
        return attrs


class WebhookTestIn(StrictSerializer):
    event_type = serializers.ChoiceField(
        choices=EVENT_TYPES,
        required=False,
        help_text="The event to simulate; default the first subscribed event.",
    )


class WebhookHealthOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["webhook_health"])
    agent_id = serializers.CharField()
    state = serializers.ChoiceField(
        choices=[
            HealthState.NOT_CONFIGURED,
            HealthState.DISABLED,
            HealthState.NO_EVENTS,
            HealthState.PAUSED,
            HealthState.FAILING,
            HealthState.HEALTHY,
        ],
        help_text="`not_configured`: no URL; `disabled`: sending is off; `no_events`: "
        "subscribed to nothing; `paused`: by an owner or after repeated failed deliveries; "
        "`failing`: the latest attempt failed, and every one since `since`; `healthy`: the "
        "latest attempt succeeded, or none was made yet.",
    )
    since = serializers.DateTimeField(
        allow_null=True,
        help_text="When the state began: the pause while paused, the first failure of the "
        "streak while failing; null otherwise.",
    )
    failing_since = serializers.DateTimeField(
        allow_null=True, help_text="The first failed attempt since the latest success."
    )
    last_attempt_at = serializers.DateTimeField(allow_null=True)
    last_success_at = serializers.DateTimeField(allow_null=True)
    last_error = serializers.CharField(allow_null=True, help_text="Why the latest failure failed.")
    last_error_at = serializers.DateTimeField(allow_null=True)
    waiting_deliveries = serializers.IntegerField(
        min_value=0, help_text=f"Pending or held deliveries, counted up to {HEALTH_COUNT_CAP:,}."
    )
    failed_deliveries = serializers.IntegerField(
        min_value=0, help_text=f"Failed deliveries, counted up to {HEALTH_COUNT_CAP:,}."
    )
    counts_capped = serializers.BooleanField(help_text="A count reached its cap.")
    auto_paused = serializers.BooleanField(
        help_text="The pause came from repeated failed deliveries, not from an owner."
    )


class WebhookRecoverIn(StrictSerializer):
    since = StrictDateTimeField(
        help_text="Every failed delivery created at or after this time is sent again (test "
        "sends excepted). Without an offset the time is UTC."
    )


class WebhookRecoveryOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["webhook_recovery"])
    agent_id = serializers.CharField()
    since = serializers.DateTimeField()
    recovered = serializers.IntegerField(
        min_value=0, help_text="How many failed deliveries are due again."
    )
