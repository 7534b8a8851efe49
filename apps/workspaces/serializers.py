"""Agent and workspace API shapes: `...Out` describe the output for OpenAPI (built by
apps.workspaces.rendering), `...In` check request bodies strictly. The rules beyond JSON types
(origins, model ids, blank names) live once in apps.workspaces.configuration."""

from django.core.validators import RegexValidator
from rest_framework import serializers

from apps.api.scopes import ALL_SCOPES
from apps.api.serializers import (
    StrictBooleanField,
    StrictCharField,
    StrictDateTimeField,
    StrictSerializer,
    list_envelope,
)
from apps.workspaces import configuration as config
from apps.workspaces.audit import AUDIT_ACTIONS
from apps.workspaces.models import ActorType, Agent, AgentRevision, Membership

EFFORT_HELP = (
    "How much reasoning the model spends: `low`, `medium` or `high`; null uses the model's "
    "default. Models without a reasoning setting ignore it."
)
MODEL_ID_HELP = (
    "The model the Agent runtime calls, as the provider names it (for example "
    "`gpt-4.1-mini`); null uses the runtime's default."
)
ORIGINS_HELP = (
    "Browser origins (`scheme://host[:port]`, http or https, no path and no wildcard) allowed "
    f"to use the Agent with browser tokens; at most {config.MAX_ORIGINS}. Stored in lower case "
    "without a default port, duplicates dropped."
)
_model_id_pattern = RegexValidator(
    f"^{config.MODEL_ID_PATTERN.pattern}$", "Letters, digits and . _ : / @ + - only."
)


def _name_field(**kwargs) -> StrictCharField:
    return StrictCharField(min_length=1, max_length=config.MAX_NAME, **kwargs)


class _ConfigurationIn(StrictSerializer):
    description = StrictCharField(
        required=False, allow_blank=True, max_length=config.MAX_DESCRIPTION
    )
    instructions = StrictCharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        max_length=config.MAX_INSTRUCTIONS,
        help_text="The system prompt.",
    )
    model_id = StrictCharField(
        required=False,
        allow_null=True,
        min_length=1,
        max_length=config.MAX_MODEL_ID,
        validators=[_model_id_pattern],
        help_text=MODEL_ID_HELP,
    )
    effort = serializers.ChoiceField(
        choices=config.EFFORTS, required=False, allow_null=True, help_text=EFFORT_HELP
    )
    knowledge_search_enabled = StrictBooleanField(
        required=False, help_text="Whether the Agent searches its knowledge documents."
    )
    allowed_origins = serializers.ListField(
        child=StrictCharField(max_length=config.MAX_ORIGIN_LENGTH),
        required=False,
        max_length=config.MAX_ORIGINS,
        help_text=ORIGINS_HELP,
    )


class AgentCreateIn(_ConfigurationIn):
    name = _name_field()


class AgentUpdateIn(_ConfigurationIn):
    name = _name_field(required=False)

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError(
                "Send at least one of " + ", ".join(config.CONFIGURATION_FIELDS) + "."
            )
        return attrs


class AgentOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["agent"])
    id = serializers.CharField()
    workspace_id = serializers.CharField()
    name = serializers.CharField(max_length=config.MAX_NAME)
    description = serializers.CharField(allow_blank=True, help_text="Empty when not set.")
    instructions = serializers.CharField(
        allow_blank=True, help_text="The system prompt; empty when not set."
    )
    model_id = serializers.CharField(allow_null=True, help_text=MODEL_ID_HELP)
    effort = serializers.ChoiceField(choices=config.EFFORTS, allow_null=True, help_text=EFFORT_HELP)
    knowledge_search_enabled = serializers.BooleanField()
    allowed_origins = serializers.ListField(child=serializers.CharField(), help_text=ORIGINS_HELP)
    status = serializers.ChoiceField(
        choices=Agent.Status.values,
        help_text="`archived` Agents keep everything; their keys answer 401 and their "
        "scheduled refreshes and webhook deliveries wait until they are restored.",
    )
    revision = serializers.IntegerField(
        min_value=1, help_text="Number of the current configuration's revision."
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField(help_text="Last change of configuration or status.")
    archived_at = serializers.DateTimeField(allow_null=True)


class AgentConfigurationOut(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    instructions = serializers.CharField(allow_blank=True)
    model_id = serializers.CharField(allow_null=True)
    effort = serializers.ChoiceField(choices=config.EFFORTS, allow_null=True)
    knowledge_search_enabled = serializers.BooleanField()
    allowed_origins = serializers.ListField(child=serializers.CharField())


class RevisionActorOut(serializers.Serializer):
    type = serializers.ChoiceField(choices=AgentRevision.ActorType.values)
    id = serializers.CharField(
        allow_null=True,
        help_text="The API key's id (`key_...`) or the user's email address; null for the "
        "system (migrations, the demo seed).",
    )
    name = serializers.CharField(help_text="The key's or the person's name at the time.")


class AgentRevisionOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["agent_revision"])
    id = serializers.CharField()
    agent_id = serializers.CharField()
    number = serializers.IntegerField(min_value=1, help_text="1 for the creation, then +1.")
    kind = serializers.ChoiceField(
        choices=AgentRevision.Kind.values,
        help_text="`created` (revision 1), `updated` (a configuration change) or `restored` "
        "(an earlier revision brought back).",
    )
    restored_from = serializers.IntegerField(
        allow_null=True, help_text="For `restored`: the number of the revision brought back."
    )
    changed_fields = serializers.ListField(
        child=serializers.ChoiceField(choices=config.CONFIGURATION_FIELDS),
        help_text="Fields that differ from the previous revision (every field for revision 1).",
    )
    configuration = AgentConfigurationOut(help_text="The whole configuration after the change.")
    actor = RevisionActorOut()
    created_at = serializers.DateTimeField()


class WorkspaceOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["workspace"])
    id = serializers.CharField()
    name = serializers.CharField()
    role = serializers.ChoiceField(
        choices=Membership.Role.values,
        allow_null=True,
        help_text="The credential creator's role in the workspace now; null when the key has "
        "no creator or the creator is no longer a member.",
    )
    created_at = serializers.DateTimeField()


AgentListOut = list_envelope(AgentOut, "AgentList")
AgentRevisionListOut = list_envelope(AgentRevisionOut, "AgentRevisionList")
WorkspaceListOut = list_envelope(WorkspaceOut, "WorkspaceList")


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


class AuditActorOut(serializers.Serializer):
    type = serializers.ChoiceField(
        choices=ActorType.values,
        help_text="`user` (a person in the console), `api_key`, `oauth_app` (a connected "
        "application through its resource token) or `system` (workers, beat, commands).",
    )
    id = serializers.CharField(
        allow_null=True,
        help_text="The user's email address, the key's id (`key_...`) or the connected "
        "application's grant key id; null for the system.",
    )
    name = serializers.CharField(help_text="The person's, key's or application's name then.")


class AuditTargetOut(serializers.Serializer):
    type = serializers.CharField(
        help_text="`workspace`, `agent`, `api_key`, `connected_app`, `webhook`, `document`, "
        "`mcp_server`, `mcp_tool`, `retention_policy` or `member`."
    )
    id = serializers.CharField(allow_null=True)
    name = serializers.CharField(allow_null=True, help_text="Its name at the time.")


class AuditEventOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["audit_event"])
    id = serializers.CharField()
    workspace_id = serializers.CharField()
    agent_id = serializers.CharField(allow_null=True, help_text="The Agent concerned, if one.")
    action = serializers.ChoiceField(
        choices=list(AUDIT_ACTIONS), help_text="What happened (docs/audit-log.md)."
    )
    actor = AuditActorOut()
    target = AuditTargetOut()
    changes = serializers.DictField(
        help_text='Changed fields as `{"field": {"from": old, "to": new}}`, and facts '
        "of the change (counts, names). Never a secret: a secret that changed reads "
        '`{"changed": true}`.'
    )
    ip = serializers.IPAddressField(
        allow_null=True, help_text="The client's address; null for the system."
    )
    request_id = serializers.CharField(
        allow_null=True, help_text="The request's `X-Request-Id`, as in the request log."
    )
    created_at = serializers.DateTimeField()


AuditEventListOut = list_envelope(AuditEventOut, "AuditEventList")
