# ruff: noqa: DJ001 - the API tells null ("none yet") from "" apart, so some strings are nullable.
"""Third-party MCP tool-server connections of an Agent, the tools they list, and the log of
each discovery with what it changed.

A server's `status` tells the last discovery's outcome: `pending` while one is queued or
running, then `connected` or `failed` (with `error_message`). Tools are kept across
discoveries so the owner's per-tool `enabled` choice survives; a tool the server stops listing
keeps its row with `removed_at` set, and gets its choice back if it returns.
"""

import json

from django.db import models
from django.db.models import Q

from apps.common.ids import id_factory


class McpServer(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"  # a discovery is queued or running
        CONNECTED = "connected", "Connected"  # the last discovery listed the tools
        FAILED = "failed", "Failed"  # the last discovery failed; see error_message

    class Transport(models.TextChoices):
        STREAMABLE_HTTP = "streamable_http", "Streamable HTTP"
        SSE = "sse", "HTTP+SSE"

    id = models.CharField(
        primary_key=True, max_length=40, default=id_factory("mcp"), editable=False
    )
    agent = models.ForeignKey(
        "workspaces.Agent", on_delete=models.CASCADE, related_name="mcp_servers"
    )
    name = models.CharField(max_length=120)
    # The guard's canonical form: what "the same URL" means for duplicates.
    url = models.CharField(max_length=2048)
    enabled = models.BooleanField(default=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    error_message = models.CharField(max_length=500, null=True, blank=True)
    # The transport the last successful discovery spoke; null before one succeeded.
    transport = models.CharField(max_length=16, choices=Transport.choices, null=True, blank=True)
    # Auth headers: names in clear (shown to people), the name->value map Fernet-encrypted
    # (apps.tools.secrets); the values are never returned by the API or the console.
    auth_header_names = models.JSONField(default=list)
    auth_headers_encrypted = models.TextField(blank=True)
    tool_count = models.PositiveIntegerField(default=0)
    last_discovered_at = models.DateTimeField(null=True, blank=True)
    # When the scheduled rediscovery is due (tools.discover_due); null: not scheduled.
    next_discovery_at = models.DateTimeField(null=True, blank=True)
    # Work bookkeeping, as knowledge documents do it: when discovery was queued, the lease of
    # the worker running it (expired = the worker died), and why it was asked for.
    queued_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    pending_trigger = models.CharField(max_length=10, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "tools_mcp_server"
        constraints = [
            models.UniqueConstraint(fields=["agent", "url"], name="tools_mcp_server_unique_url"),
        ]
        indexes = [
            # GET /mcp_servers and the console list: an Agent's servers, newest first (keyset).
            models.Index(fields=["agent", "-created_at", "-id"], name="tools_server_list"),
            # tools.discover_due: servers whose scheduled rediscovery is due.
            models.Index(
                fields=["next_discovery_at"],
                condition=Q(next_discovery_at__isnull=False),
                name="tools_server_due",
            ),
            # tools.discover_due's recovery half: discoveries queued or running.
            models.Index(
                fields=["queued_at"], condition=Q(status="pending"), name="tools_server_pending"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class McpTool(models.Model):
    id = models.CharField(
        primary_key=True, max_length=40, default=id_factory("mcpt"), editable=False
    )
    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=128)
    description = models.TextField(blank=True)
    input_schema = models.JSONField(default=dict)
    # The owner's choice; kept across rediscoveries (and while the tool is absent).
    enabled = models.BooleanField(default=True)
    # Set while the server no longer lists the tool; cleared if it comes back.
    removed_at = models.DateTimeField(null=True, blank=True)
    first_seen_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "tools_mcp_tool"
        constraints = [
            models.UniqueConstraint(fields=["server", "name"], name="tools_mcp_tool_unique_name"),
        ]
        indexes = [
            # GET /mcp_servers/{id}/tools and the console: a server's present tools by name.
            models.Index(
                fields=["server", "name", "id"],
                condition=Q(removed_at__isnull=True),
                name="tools_tool_list",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def input_schema_json(self) -> str:
        """The schema as indented JSON, for people to read."""
        return json.dumps(self.input_schema, indent=2, sort_keys=True)


class McpDiscovery(models.Model):
    """One discovery attempt of a server and what it changed: the server's change log."""

    class Status(models.TextChoices):
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    class Trigger(models.TextChoices):
        CREATED = "created", "Server added"
        UPDATED = "updated", "Server changed"
        MANUAL = "manual", "Discover now"
        SCHEDULE = "schedule", "Daily rediscovery"

    id = models.CharField(
        primary_key=True, max_length=40, default=id_factory("mcpd"), editable=False
    )
    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="discoveries")
    status = models.CharField(max_length=10, choices=Status.choices)
    trigger = models.CharField(max_length=10, choices=Trigger.choices)
    error_message = models.CharField(max_length=500, null=True, blank=True)
    transport = models.CharField(
        max_length=16, choices=McpServer.Transport.choices, null=True, blank=True
    )
    tool_count = models.PositiveIntegerField(null=True, blank=True)
    tools_added = models.JSONField(default=list)
    tools_removed = models.JSONField(default=list)
    # Tools whose input schema, or whose description, differs from the previous discovery.
    # Both matter: the description is what a model reads to decide how to use a tool.
    tools_schema_changed = models.JSONField(default=list)
    tools_description_changed = models.JSONField(default=list)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "tools_mcp_discovery"
        indexes = [
            # GET /mcp_servers/{id}/changes and the console's change log: newest first (keyset).
            models.Index(fields=["server", "-created_at", "-id"], name="tools_discovery_list"),
        ]

    def __str__(self) -> str:
        return f"{self.server_id} {self.status}"

    @property
    def has_changes(self) -> bool:
        return bool(
            self.tools_added
            or self.tools_removed
            or self.tools_schema_changed
            or self.tools_description_changed
        )
