"""Changes to tool-server connections asked for by people (API and console alike).

Discovery itself runs in Celery (apps.tools.discovery). Every function takes the Agent first,
so another Agent's server is simply not found.
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import urlsplit

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.common.errors import BadRequest, Conflict
from apps.common.netguard import BlockedURL, check_url
from apps.tools.models import McpDiscovery, McpServer, McpTool
from apps.tools.secrets import encrypt_headers
from apps.tools.selectors import server_get, tool_get
from apps.workspaces.audit import CHANGED, audit_diff, audit_record
from apps.workspaces.models import Agent

logger = logging.getLogger(__name__)

MAX_NAME_LENGTH = 120
MAX_HEADERS = 10
MAX_HEADER_NAME_LENGTH = 100
MAX_HEADER_VALUE_LENGTH = 4096
# RFC 9110 token characters.
_HEADER_NAME_RE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# Headers the HTTP client or the MCP transport sets itself: an owner's value would break the
# exchange or let a stored header steer it (another virtual host, a compressed body).
RESERVED_HEADERS = frozenset(
    {
        "accept",
        "accept-encoding",
        "connection",
        "content-encoding",
        "content-length",
        "content-type",
        "host",
        "keep-alive",
        "last-event-id",
        "mcp-protocol-version",
        "mcp-session-id",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
    }
)

Status = McpServer.Status
Trigger = McpDiscovery.Trigger

_UNSET: Any = object()
# The fields of a server its audit entries show before and after.
AUDITED_FIELDS = ("name", "url", "enabled", "auth_header_names")


def enqueue_discovery_after_commit(server_id: str) -> None:
    """Queue `tools.discover` once the current transaction commits.

    A broker that is down is logged, not raised: the server stays `pending` with its
    `queued_at`, and the `tools.discover_due` sweeper queues it again.
    """

    def send() -> None:
        from apps.tools import tasks

        try:
            tasks.discover.apply_async(args=[server_id], retry=False)
        except Exception:
            logger.warning(
                "could not queue tools.discover for %s; discover_due will retry",
                server_id,
                exc_info=True,
            )

    transaction.on_commit(send)


def _check_name(name: str) -> str:
    name = name.strip()
    if not 1 <= len(name) <= MAX_NAME_LENGTH:
        raise BadRequest(f"name: must be 1 to {MAX_NAME_LENGTH} characters long.")
    return name


def _check_url(url: str) -> str:
    try:
        normalized, _addresses = check_url(url)
    except BlockedURL as exc:
        raise BadRequest(f"url: {exc}") from None
    return normalized


def check_auth_headers(headers: dict[str, str] | None) -> dict[str, str]:
    """Validate header names and values; the returned map keeps the names as given."""
    if not headers:
        return {}
    if len(headers) > MAX_HEADERS:
        raise BadRequest(f"auth_headers: at most {MAX_HEADERS} headers.")
    seen: set[str] = set()
    checked: dict[str, str] = {}
    for raw_name, value in headers.items():
        name = raw_name.strip()
        if not name or len(name) > MAX_HEADER_NAME_LENGTH or not _HEADER_NAME_RE.fullmatch(name):
            raise BadRequest(
                f"auth_headers: {name[:40]!r} is not a valid header name (letters, digits and "
                f"-_.!#$%&'*+^`|~, at most {MAX_HEADER_NAME_LENGTH} characters)."
            )
        lowered = name.lower()
        if lowered in RESERVED_HEADERS:
            raise BadRequest(f"auth_headers: {name} is set by the connection itself.")
        if lowered in seen:
            raise BadRequest(f"auth_headers: {name} is given twice.")
        seen.add(lowered)
        if not isinstance(value, str) or not value.strip():
            raise BadRequest(f"auth_headers: the value of {name} must be a non-empty string.")
        if len(value) > MAX_HEADER_VALUE_LENGTH or any(
            ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value if ch != "\t"
        ):
            raise BadRequest(
                f"auth_headers: the value of {name} must be at most {MAX_HEADER_VALUE_LENGTH} "
                "characters with no line breaks or control characters."
            )
        if not value.isascii():
            # An HTTP client sends header values as ASCII; discovery would fail later with a
            # misleading "not a valid MCP tool listing".
            raise BadRequest(
                f"auth_headers: the value of {name} must be ASCII (a token or key as issued); "
                "it holds other characters."
            )
        checked[name] = value.strip()
    return checked


def _audit(*, agent: Agent, server: McpServer, action: str, changes: dict | None = None) -> None:
    """One audit entry about a tool server (apps.workspaces.audit), in the caller's
    transaction. Auth headers appear by name only: their values are secrets."""
    audit_record(
        workspace_id=agent.workspace_id,
        agent_id=agent.pk,
        action=action,
        target_type="mcp_server",
        target_id=server.pk,
        target_name=server.name,
        changes=changes,
    )


def _duplicate(existing: McpServer) -> Conflict:
    return Conflict(
        f"This URL is already an MCP server of this Agent: “{existing.name}” ({existing.pk})."
    )


def _pending_changes(*, trigger: str, now) -> dict:
    return {
        "status": Status.PENDING,
        "error_message": None,
        "queued_at": now,
        "attempts": 0,
        "pending_trigger": trigger,
        "next_discovery_at": None,
    }


def server_create(
    *,
    agent: Agent,
    url: str,
    name: str | None = None,
    auth_headers: dict[str, str] | None = None,
    enabled: bool = True,
) -> McpServer:
    """Add a tool server (status `pending`) and queue its first discovery."""
    normalized = _check_url(url)
    name = _check_name(name if name is not None else urlsplit(normalized).hostname or normalized)
    headers = check_auth_headers(auth_headers)
    existing = McpServer.objects.filter(agent=agent, url=normalized).first()
    if existing is not None:
        raise _duplicate(existing)
    now = timezone.now()
    try:
        with transaction.atomic():
            server = McpServer.objects.create(
                agent=agent,
                name=name,
                url=normalized,
                enabled=enabled,
                auth_header_names=sorted(headers, key=str.lower),
                auth_headers_encrypted=encrypt_headers(headers),
                **_pending_changes(trigger=Trigger.CREATED, now=now),
            )
            _audit(
                agent=agent,
                server=server,
                action="mcp_server.created",
                changes={
                    "url": normalized,
                    "enabled": enabled,
                    "auth_header_names": server.auth_header_names,
                },
            )
            enqueue_discovery_after_commit(server.pk)
    except IntegrityError:
        existing = McpServer.objects.filter(agent=agent, url=normalized).first()
        if existing is not None:
            raise _duplicate(existing) from None
        raise
    return server


def server_update(
    *,
    agent: Agent,
    server_id: str,
    name: str | None = None,
    url: str | None = None,
    enabled: bool | None = None,
    auth_headers: dict[str, str] | None = _UNSET,
) -> McpServer:
    """Change a server. A new URL or new auth headers queue a discovery; `auth_headers`
    replaces the whole set (null or {} removes them)."""
    if name is None and url is None and enabled is None and auth_headers is _UNSET:
        raise BadRequest("Send at least one of name, url, enabled and auth_headers.")
    server = server_get(agent=agent, server_id=server_id)
    now = timezone.now()
    changes: dict[str, Any] = {"updated_at": now}
    rediscover = False
    if name is not None:
        changes["name"] = _check_name(name)
    if url is not None:
        normalized = _check_url(url)
        if normalized != server.url:
            clash = McpServer.objects.filter(agent=agent, url=normalized).first()
            if clash is not None:
                raise _duplicate(clash)
            changes["url"] = normalized
            rediscover = True
    if auth_headers is not _UNSET:
        headers = check_auth_headers(auth_headers)
        changes["auth_header_names"] = sorted(headers, key=str.lower)
        changes["auth_headers_encrypted"] = encrypt_headers(headers)
        rediscover = True
    if enabled is not None:
        changes["enabled"] = enabled
        if not enabled:
            changes["next_discovery_at"] = None
        elif not server.enabled and server.status != Status.PENDING:
            changes["next_discovery_at"] = now  # re-enabled: check it again soon
    if rediscover:
        changes.update(_pending_changes(trigger=Trigger.UPDATED, now=now))
    try:
        with transaction.atomic():
            McpServer.objects.filter(agent=agent, pk=server.pk).update(**changes)
            diff = audit_diff(
                {field: getattr(server, field) for field in AUDITED_FIELDS}, changes, AUDITED_FIELDS
            )
            if auth_headers is not _UNSET:
                # New values under the same names are a change too; never say which values.
                diff["auth_headers"] = CHANGED
            if diff:
                _audit(agent=agent, server=server, action="mcp_server.updated", changes=diff)
            if rediscover:
                enqueue_discovery_after_commit(server.pk)
    except IntegrityError:
        clash = McpServer.objects.filter(agent=agent, url=changes.get("url")).first()
        if clash is not None:
            raise _duplicate(clash) from None
        raise
    return server_get(agent=agent, server_id=server_id)


def server_delete(*, agent: Agent, server_id: str) -> None:
    """Delete the server with its tools and change log (a running discovery finds no row)."""
    server = server_get(agent=agent, server_id=server_id)
    with transaction.atomic():
        McpServer.objects.filter(agent=agent, pk=server.pk).delete()
        _audit(agent=agent, server=server, action="mcp_server.deleted", changes={"url": server.url})


def server_discover_request(
    *, agent: Agent, server_id: str, trigger: str = Trigger.MANUAL
) -> McpServer:
    """Queue a discovery now, or join the one already queued or running (202 either way)."""
    server = server_get(agent=agent, server_id=server_id)
    now = timezone.now()
    with transaction.atomic():
        started = (
            McpServer.objects.filter(agent=agent, pk=server.pk)
            .exclude(status=Status.PENDING)
            .update(updated_at=now, **_pending_changes(trigger=trigger, now=now))
        )
        if started:
            _audit(agent=agent, server=server, action="mcp_server.discovery_requested")
            enqueue_discovery_after_commit(server.pk)
    return server_get(agent=agent, server_id=server_id)


def tool_set_enabled(*, agent: Agent, server_id: str, name: str, enabled: bool) -> McpTool:
    """Turn one tool on or off for the Agent; the choice survives rediscoveries."""
    tool = tool_get(agent=agent, server_id=server_id, name=name)
    with transaction.atomic():
        McpTool.objects.filter(pk=tool.pk).update(enabled=enabled, updated_at=timezone.now())
        if tool.enabled != enabled:
            audit_record(
                workspace_id=agent.workspace_id,
                agent_id=agent.pk,
                action="mcp_tool.enabled" if enabled else "mcp_tool.disabled",
                target_type="mcp_tool",
                target_id=tool.pk,
                target_name=tool.name,
                changes={
                    "server_id": server_id,
                    "enabled": {"from": tool.enabled, "to": enabled},
                },
            )
    return tool_get(agent=agent, server_id=server_id, name=name)
