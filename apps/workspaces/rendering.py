"""API output of the workspaces app, built by plain functions (see DESIGN: output)."""

from apps.common.time import iso
from apps.workspaces.models import ApiKey


def api_key_to_dict(key: ApiKey) -> dict:
    return {
        "object": "api_key",
        "id": key.pk,
        "name": key.name,
        "prefix": key.prefix,
        "agent_id": key.agent_id,
        "scopes": list(key.scopes),
        "status": key.status,
        "parent_id": key.parent_id,
        "created_at": iso(key.created_at),
        "last_used_at": iso(key.last_used_at),
        "expires_at": iso(key.expires_at),
        "revoked_at": iso(key.revoked_at),
    }
