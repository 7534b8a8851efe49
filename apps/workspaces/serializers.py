"""Integration keys over /v1: strict input, and `...Out` shapes for the OpenAPI document
(output is built by apps.workspaces.rendering)."""

from rest_framework import serializers

from apps.api.serializers import StrictCharField, StrictDateTimeField, StrictSerializer
from apps.workspaces.scopes import ALL_SCOPES

_STATUSES = ["active", "expired", "revoked"]


class ApiKeyCreateIn(StrictSerializer):
    name = StrictCharField(max_length=120, help_text="1 to 120 characters.")
    scopes = serializers.ListField(
        child=StrictCharField(),
        allow_empty=False,
        help_text="Permissions of the new key: a non-empty subset of the calling key's, "
        "never `api_keys:create`.",
    )
    agent_id = StrictCharField(
        required=False,
        max_length=40,
        help_text="An active Agent of the workspace; default the calling key's Agent (or the "
        "path's on `/v1/agents/{agentId}/api_keys`).",
    )
    expires_at = StrictDateTimeField(
        required=False,
        help_text="ISO 8601, in the future; never later than the calling key's own expiry "
        "(which is also the default when the calling key expires).",
    )

    def validate_scopes(self, value: list[str]) -> list[str]:
        unknown = sorted({scope for scope in value if scope not in ALL_SCOPES})
        if unknown:
            raise serializers.ValidationError(f"Unknown permission(s): {', '.join(unknown)}")
        return value


class ApiKeyOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["api_key"])
    id = serializers.CharField()
    name = serializers.CharField()
    prefix = serializers.CharField(help_text="Public start of the key; never the secret.")
    agent_id = serializers.CharField()
    scopes = serializers.ListField(child=serializers.CharField())
    status = serializers.ChoiceField(choices=_STATUSES)
    parent_id = serializers.CharField(
        allow_null=True, help_text="The key that created this one over the API, if any."
    )
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


class ApiKeyCreatedOut(ApiKeyOut):
    secret = serializers.CharField(help_text="The full key. Shown once: store it now.")
