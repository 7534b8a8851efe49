"""The audit log's recording side (docs/audit-log.md): every change an owner, a member, a key or
a connected application makes to a workspace, written by the service that makes it.

Services call `audit_record(...)` inside the transaction of their change: one INSERT that
commits or rolls back with it; reads record nothing, so the hot read paths pay nothing.

Who made the change and from where is read from the request being served, which
`AuditRequestMiddleware` puts in a context variable for the request's duration: the credential
/v1 authentication verified (`request.api_credential`), else the signed-in console user. Outside
a request (Celery workers, beat, management commands) the actor is the system. A caller that
knows its actor better passes `actor=` explicitly.

Never a secret: services pass only names and safe values, and `audit_record` replaces the value
of any field whose name says it holds one (`SECRET_WORDS`) by "[redacted]" all the same.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from apps.common.time import iso
from apps.workspaces.models import ActorType, ApiKey, AuditEvent
from apps.workspaces.rendering import person_name


@dataclass(frozen=True)
class Actor:
    """Who made a change, as written into the audit log and Agent revisions."""

    type: str
    id: str | None
    name: str


SYSTEM_ACTOR = Actor(type=ActorType.SYSTEM, id=None, name="System")


def actor_for_user(user) -> Actor:
    # Users sign in with their email address: it is their stable, readable identity.
    return Actor(
        type=ActorType.USER,
        id=user.email or user.get_username(),
        name=person_name(user),
    )


def actor_for_key(key: ApiKey) -> Actor:
    """An API key, or a connected application acting through its grant key."""
    if key.kind == ApiKey.Kind.CONNECTED_APP:
        return Actor(type=ActorType.OAUTH_APP, id=key.pk, name=key.name)
    return Actor(type=ActorType.API_KEY, id=key.pk, name=key.name)


# Every action the log records, with what it means (docs/audit-log.md lists the same): the
# API's `action` filter and the console's choices read it; `audit_record` refuses others.
AUDIT_ACTIONS: dict[str, str] = {
    "workspace.created": "A workspace was created with its first owner",
    "workspace.credit_limit_changed": "The monthly credit limit was set, changed or removed",
    "member.added": "A person joined the workspace",
    "member.invited": "A person was invited to the workspace",
    "member.invitation_revoked": "An invitation was withdrawn",
    "member.role_changed": "A member's role changed (owner or member)",
    "member.ownership_transferred": "An owner handed the workspace to a member (roles swapped)",
    "member.removed": "A person was removed from the workspace",
    "agent.created": "An Agent was created",
    "agent.updated": "An Agent's configuration changed (a new revision)",
    "agent.revision_restored": "An earlier configuration of an Agent was restored",
    "agent.archived": "An Agent was archived",
    "agent.restored": "An archived Agent was made active again",
    "api_key.created": "An API key was created",
    "api_key.revoked": "An API key was revoked",
    "connected_app.connected": "An application was connected over OAuth",
    "connected_app.disconnected": "A connected application was disconnected",
    "end_user.data_deleted": "An end user's conversations, runs and feedback were deleted on request",
    "score.deleted": "Scores were deleted from the console (their count)",
    "score_config.created": "A score config was created",
    "score_config.updated": "A score config's range, categories or description changed",
    "score_config.archived": "A score config was archived (its name is free-form again)",
    "score_config.restored": "An archived score config was restored",
    "webhook.updated": "The webhook's URL, events, enabled or paused state changed",
    "webhook.paused": "The service paused the webhook after repeated failures",
    "webhook.secret_revealed": "The webhook's signing secret was shown",
    "webhook.secret_rotated": "The webhook's signing secret was rotated",
    "webhook.test_sent": "A test event was sent",
    "webhook.delivery_retried": "A delivery was sent again",
    "webhook.deliveries_retried": "Several deliveries were queued again",
    "webhook.deliveries_recovered": "Every failed delivery since a time was queued again",
    "document.created": "A knowledge document was added (file or URL)",
    "document.updated": "A knowledge document was renamed",
    "document.enabled": "A knowledge document was enabled for search",
    "document.disabled": "A knowledge document was disabled for search",
    "document.deleted": "A knowledge document was deleted",
    "document.refresh_requested": "A refresh of a URL document was started",
    "document.retried": "A failed document's ingestion was started again",
    "document.schedule_changed": "A URL document's refresh schedule changed",
    "knowledge_gap.resolved": "A group of unanswered questions was marked resolved",
    "knowledge_gap.reopened": "A resolved group of unanswered questions was opened again by hand",
    "mcp_server.created": "A tool server (MCP) was connected",
    "mcp_server.updated": "A tool server's name, URL, enabled state or headers changed",
    "mcp_server.deleted": "A tool server was removed",
    "mcp_server.discovery_requested": "A discovery of a tool server's tools was started",
    "mcp_tool.enabled": "A tool of a tool server was turned on",
    "mcp_tool.disabled": "A tool of a tool server was turned off",
    "retention.policy_changed": "How long activity is kept changed",
    "retention.activity_purged": "Retention deleted expired activity (counts)",
    "retention.audit_events_purged": "Retention deleted audit entries past their period",
    "audit_log.exported": "The audit log was exported from the console",
}


# --- The request being served ----------------------------------------------------------------

_request: ContextVar[HttpRequest | None] = ContextVar("audit_request", default=None)


@contextmanager
def audit_request(request: HttpRequest | None) -> Iterator[None]:
    """Changes recorded inside this block were made by `request` (its credential or user)."""
    token = _request.set(request)
    try:
        yield
    finally:
        _request.reset(token)


class AuditRequestMiddleware:
    """Makes the request being served known to `audit_record` (a context variable: one per
    thread or task, so concurrent requests never see each other's, and a Celery task none)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = _request.set(request)  # what `audit_request` does, without a generator's cost
        try:
            return self.get_response(request)
        finally:
            _request.reset(token)


def actor_of_request(request: HttpRequest | None) -> Actor:
    """The credential /v1 verified for the request, else its console user, else the system."""
    if request is None:
        return SYSTEM_ACTOR
    credential = getattr(request, "api_credential", None)
    key = getattr(credential, "key", None)
    if isinstance(key, ApiKey):
        return actor_for_key(key)
    # Read only when a change is recorded: the session lookup costs nothing on reads.
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return actor_for_user(user)
    return SYSTEM_ACTOR


def current_actor() -> Actor:
    """Who is acting in the request being served now (the system outside one)."""
    return actor_of_request(_request.get())


def client_ip(request: HttpRequest) -> str | None:
    """The client's address: REMOTE_ADDR, or behind `TRUSTED_PROXY_COUNT` reverse proxies the
    address the outermost of them saw (X-Forwarded-For, counted from the right, since a
    client can write anything to the left of what the proxies appended)."""
    address = request.META.get("REMOTE_ADDR", "")
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies:
        hops = [
            hop.strip()
            for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
            if hop.strip()
        ]
        if len(hops) >= proxies:
            address = hops[-proxies]
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return None


# --- What changed ----------------------------------------------------------------------------

# A field whose name contains one of these holds a secret, or may: its value is never written.
SECRET_WORDS = ("secret", "token", "password", "authorization", "credential", "auth_headers")
REDACTED = "[redacted]"


def is_secret_field(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in SECRET_WORDS)


# Longer text (an Agent's instructions) is cut: the Agent's revisions keep every word.
MAX_TEXT = 1000


def _plain(value: Any) -> Any:
    """A JSON value for the log: times in ISO 8601 UTC, decimals as strings, text cut."""
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return value[:MAX_TEXT] + "…"
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return value


CHANGED = {"changed": True}


def _redacted(changes: Mapping[str, Any]) -> dict[str, Any]:
    return {
        name: (
            (CHANGED if value == CHANGED else REDACTED) if is_secret_field(name) else _plain(value)
        )
        for name, value in changes.items()
    }


def audit_diff(
    before: Mapping[str, Any], after: Mapping[str, Any], fields: Iterable[str] | None = None
) -> dict[str, dict[str, Any]]:
    """`{"field": {"from": old, "to": new}}` for each of `fields` (default: every key of
    `after`) whose value differs; a secret field says only that it changed."""
    diff: dict[str, dict[str, Any]] = {}
    for name in fields if fields is not None else after:
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if is_secret_field(name):
            diff[name] = CHANGED
        else:
            diff[name] = {"from": _plain(old), "to": _plain(new)}
    return diff


def audit_record(
    *,
    workspace_id: str,
    action: str,
    target_type: str,
    target_id: str = "",
    target_name: str = "",
    agent_id: str | None = None,
    changes: Mapping[str, Any] | None = None,
    actor: Actor | None = None,
) -> AuditEvent:
    """Write one audit entry. Call it inside the transaction of the change it records.

    `action` is "<target>.<what happened>" from the list in docs/audit-log.md; `changes` the
    fields changed (`audit_diff`) or the facts of the change (counts, names), never a secret.
    """
    if action not in AUDIT_ACTIONS:
        raise ValueError(f"Unknown audit action {action!r}: add it to AUDIT_ACTIONS and the docs.")
    request = _request.get()
    who = actor or actor_of_request(request)
    return AuditEvent.objects.create(
        workspace_id=workspace_id,
        agent_id=agent_id or "",
        action=action,
        actor_type=who.type,
        actor_id=(who.id or "")[:254],
        actor_name=who.name[:254],
        ip=client_ip(request) if request is not None else None,
        request_id=str(getattr(request, "request_id", ""))[:128],
        target_type=target_type,
        target_id=target_id[:254],
        target_name=target_name[:254],
        changes=_redacted(changes or {}),
    )


def audit_events_purge_batch(*, before: datetime, batch_size: int = 1000) -> dict[str, int]:
    """Delete up to `batch_size` entries older than `before` (AUDIT_RETENTION_DAYS, applied by
    the retention task); returns how many went, by workspace. Empty: nothing is left."""
    expired = list(
        AuditEvent.objects.filter(created_at__lt=before)
        .order_by("created_at")
        .values_list("id", "workspace_id")[:batch_size]
    )
    counts: dict[str, int] = {}
    for _id, workspace_id in expired:
        counts[workspace_id] = counts.get(workspace_id, 0) + 1
    AuditEvent.objects.filter(pk__in=[row_id for row_id, _ in expired]).delete()
    return counts
