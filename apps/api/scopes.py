"""Permissions an API key can hold: contract section 5.3, plus our extensions. The /v1 platform
owns this vocabulary (the scope check and the document read it); keys store these names."""

CONTRACT_SCOPES: dict[str, str] = {
    "auth_tokens:create": "Connect the Agent to an application (browser tokens)",
    "users:read": "View users",
    "conversations:read": "View conversations and messages",
    "runs:read": "View run history",
    "knowledge:read": "List knowledge documents and read extracted markdown",
    "knowledge:write": "Add, update, refresh, schedule and delete knowledge documents",
    "workspaces:read": "List granted workspaces",
    "usage:read": "Read workspace usage, credits, limits",
    "agents:read": "List Agents and inspect configuration",
    "agents:write": "Create Agents and update configuration",
    "agents:archive": "Archive or restore Agents (owner required)",
    "mcp_servers:read": "Inspect third-party tool-server connections",
    "mcp_servers:write": "Manage connections and discover tools (owner required)",
    "webhooks:read": "Inspect webhook configuration and deliveries (owner required)",
    "webhooks:write": "Configure webhooks, test or retry delivery (owner required)",
    "api_keys:create": "Create a narrow integration key (owner plus auth_tokens:create required)",
}

# Extensions: opt-in, never granted unless asked for (existing keys keep their permissions).
EXTENSION_SCOPES: dict[str, str] = {
    "activity:write": "Record activity from the Agent runtime (POST /v1/ingest)",
    "audit_log:read": "Read the workspace's audit log (owner required)",
    "scores:read": "Read scores and score configs (GET /v1/scores, /v1/score_configs)",
    "scores:write": "Record and delete scores, manage score configs",
}

ALL_SCOPES: dict[str, str] = {**CONTRACT_SCOPES, **EXTENSION_SCOPES}

# Scopes whose operations also need the key's creator to be a workspace owner.
OWNER_SCOPES = frozenset(
    {
        "agents:archive",
        "mcp_servers:write",
        "webhooks:read",
        "webhooks:write",
        "api_keys:create",
        "audit_log:read",
    }
)


def parse_scopes(raw: str | list[str]) -> list[str]:
    """Validate a scope list; unknown names raise ValueError naming them."""
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    scopes = sorted({item.strip() for item in items if item.strip()})
    unknown = [scope for scope in scopes if scope not in ALL_SCOPES]
    if unknown:
        raise ValueError(f"Unknown permission(s): {', '.join(unknown)}")
    if not scopes:
        raise ValueError("Choose at least one permission.")
    return scopes
