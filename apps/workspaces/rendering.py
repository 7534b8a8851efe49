"""Rows to API objects (Agent, Agent revision, Workspace): plain functions, exact field sets."""

from apps.common.time import iso
from apps.workspaces.configuration import CONFIGURATION_FIELDS, snapshot
from apps.workspaces.models import Agent, AgentRevision, ApiKey, AuditEvent, Workspace


def agent_to_dict(agent: Agent) -> dict:
    return {
        "object": "agent",
        "id": agent.pk,
        "workspace_id": agent.workspace_id,
        **snapshot(agent),  # the configuration fields, as a revision stores them
        "status": agent.status,
        "revision": agent.revision,
        "created_at": iso(agent.created_at),
        "updated_at": iso(agent.updated_at),
        "archived_at": iso(agent.archived_at),
    }


def revision_to_dict(revision: AgentRevision) -> dict:
    stored = revision.configuration
    return {
        "object": "agent_revision",
        "id": revision.pk,
        "agent_id": revision.agent_id,
        "number": revision.number,
        "kind": revision.kind,
        "restored_from": revision.restored_from,
        "changed_fields": list(revision.changed_fields),
        "configuration": {field: stored.get(field) for field in CONFIGURATION_FIELDS},
        "actor": {
            "type": revision.actor_type,
            "id": revision.actor_id,
            "name": revision.actor_name,
        },
        "created_at": iso(revision.created_at),
    }


def workspace_to_dict(workspace: Workspace) -> dict:
    """`workspace.role` is annotated by selectors.workspace_list_for_key."""
    return {
        "object": "workspace",
        "id": workspace.pk,
        "name": workspace.name,
        "role": getattr(workspace, "role", None),
        "created_at": iso(workspace.created_at),
    }


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


def audit_event_to_dict(event: AuditEvent) -> dict:
    """An audit entry as GET /v1/audit_events and the exports show it."""
    return {
        "object": "audit_event",
        "id": event.pk,
        "workspace_id": event.workspace_id,
        "agent_id": event.agent_id or None,
        "action": event.action,
        "actor": {
            "type": event.actor_type,
            "id": event.actor_id or None,
            "name": event.actor_name,
        },
        "target": {
            "type": event.target_type,
            "id": event.target_id or None,
            "name": event.target_name or None,
        },
        "changes": event.changes,
        "ip": event.ip,
        "request_id": event.request_id or None,
        "created_at": iso(event.created_at),
    }


def audit_event_to_row(event: AuditEvent) -> dict:
    """The same entry flat, one column per field, for the CSV export."""
    data = audit_event_to_dict(event)
    return {
        "id": data["id"],
        "created_at": data["created_at"],
        "action": data["action"],
        "actor_type": event.actor_type,
        "actor_id": data["actor"]["id"],
        "actor_name": event.actor_name,
        "ip": data["ip"],
        "target_type": event.target_type,
        "target_id": data["target"]["id"],
        "target_name": data["target"]["name"],
        "agent_id": data["agent_id"],
        "changes": event.changes,
        "request_id": data["request_id"],
    }


def person_name(user) -> str:
    """How the console, e-mails and the audit log name a person: full name, else e-mail."""
    return user.get_full_name() or user.email or user.get_username()
