"""Tool-server API shapes: `...In` validate request bodies strictly, `...Out` describe the
output (built by apps.tools.rendering) for the OpenAPI document."""

from rest_framework import serializers

from apps.api.serializers import StrictBooleanField, StrictCharField, StrictSerializer
from apps.tools.models import McpDiscovery, McpServer
from apps.tools.services import MAX_HEADER_VALUE_LENGTH, MAX_HEADERS

STATUS_HELP = (
    "`pending`: a discovery is queued or running; `connected`: the last discovery listed the "
    "server's tools; `failed`: the last discovery failed (see `error_message`)."
)
HEADERS_HELP = (
    f"Header name to value, at most {MAX_HEADERS} (for example `Authorization`). Stored "
    "encrypted; only the names are ever returned. Headers the connection sets itself (Host, "
    "Accept, Content-Type, Mcp-Session-Id, ...) are refused."
)


class AuthHeadersField(serializers.DictField):
    def __init__(self, **kwargs):
        child = StrictCharField(min_length=1, max_length=MAX_HEADER_VALUE_LENGTH)
        super().__init__(child=child, **kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("Must be a JSON object of header name to value.")
        if len(data) > MAX_HEADERS:
            raise serializers.ValidationError(f"At most {MAX_HEADERS} headers.")
        return super().to_internal_value(data)


class McpServerCreateIn(StrictSerializer):
    url = StrictCharField(
        min_length=1,
        max_length=2048,
        help_text="The server's MCP endpoint: a public http(s) URL (a bare host becomes https).",
    )
    name = StrictCharField(
        required=False, min_length=1, max_length=120, help_text="Defaults to the URL's host."
    )
    auth_headers = AuthHeadersField(required=False, help_text=HEADERS_HELP)
    enabled = StrictBooleanField(
        required=False, default=True, help_text="Whether the Agent may use the server's tools."
    )


class McpServerUpdateIn(StrictSerializer):
    name = StrictCharField(required=False, min_length=1, max_length=120)
    url = StrictCharField(
        required=False, min_length=1, max_length=2048, help_text="A new URL queues a discovery."
    )
    enabled = StrictBooleanField(required=False)
    auth_headers = AuthHeadersField(
        required=False,
        allow_null=True,
        help_text=HEADERS_HELP + " Replaces the whole set and queues a discovery; null or {} "
        "removes them.",
    )

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError(
                "Send at least one of name, url, enabled and auth_headers."
            )
        return attrs


class McpToolUpdateIn(StrictSerializer):
    enabled = StrictBooleanField(help_text="Whether the Agent may use this tool.")


class McpServerOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["mcp_server"])
    id = serializers.CharField()
    agent_id = serializers.CharField()
    name = serializers.CharField()
    url = serializers.CharField()
    enabled = serializers.BooleanField()
    status = serializers.ChoiceField(choices=McpServer.Status.values, help_text=STATUS_HELP)
    error_message = serializers.CharField(
        allow_null=True, help_text="Why the last discovery failed; null otherwise."
    )
    transport = serializers.ChoiceField(
        choices=McpServer.Transport.values,
        allow_null=True,
        help_text="What the last successful discovery spoke: Streamable HTTP, or the older "
        "HTTP+SSE transport for servers that only offer that.",
    )
    auth_header_names = serializers.ListField(
        child=serializers.CharField(), help_text="Names of the stored auth headers (never values)."
    )
    tool_count = serializers.IntegerField(min_value=0)
    last_discovered_at = serializers.DateTimeField(
        allow_null=True, help_text="The last successful discovery."
    )
    next_discovery_at = serializers.DateTimeField(
        allow_null=True, help_text="When the daily rediscovery is due (enabled servers)."
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class McpToolOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["mcp_tool"])
    id = serializers.CharField()
    server_id = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    input_schema = serializers.DictField(help_text="The tool's JSON Schema for its arguments.")
    enabled = serializers.BooleanField(
        help_text="The owner's choice. Tools of a server's first discovery start enabled; tools "
        "that appear later start disabled."
    )
    first_seen_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class McpDiscoveryOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["mcp_discovery"])
    id = serializers.CharField()
    server_id = serializers.CharField()
    status = serializers.ChoiceField(choices=McpDiscovery.Status.values)
    trigger = serializers.ChoiceField(
        choices=McpDiscovery.Trigger.values,
        help_text="`created`, `updated` (new URL or headers), `manual` (discover), `schedule`.",
    )
    error_message = serializers.CharField(allow_null=True)
    transport = serializers.ChoiceField(choices=McpServer.Transport.values, allow_null=True)
    tool_count = serializers.IntegerField(allow_null=True, min_value=0)
    tools_added = serializers.ListField(
        child=serializers.CharField(), help_text="New tools, and tools listed again."
    )
    tools_removed = serializers.ListField(child=serializers.CharField())
    tools_schema_changed = serializers.ListField(child=serializers.CharField())
    tools_description_changed = serializers.ListField(child=serializers.CharField())
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField()
