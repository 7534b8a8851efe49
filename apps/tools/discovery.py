"""The worker side of tool servers: discover one server, and the beat sweeper.

A discovery is claimed with a conditional update that sets a lease (`claimed_until`); the MCP
exchange runs with no transaction open and no row locked; the result is written in one short
transaction that locks the server row and re-reads it, so a server deleted meanwhile is left
alone ("obsolete") and one whose URL or headers changed meanwhile is discovered again instead
of getting a stale answer. Every failure becomes `status=failed` with a short message.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.tools import mcp_client
from apps.tools.mcp_client import DiscoveryError, Limits, Listing
from apps.tools.models import McpDiscovery, McpServer, McpTool
from apps.tools.secrets import UnreadableSecret, decrypt_headers
from apps.tools.services import enqueue_discovery_after_commit

logger = logging.getLogger(__name__)

Status = McpServer.Status
Trigger = McpDiscovery.Trigger

REDISCOVER_EVERY = timedelta(days=1)
# Longer than the task's hard time limit, so a live worker never loses its claim.
LEASE = timedelta(minutes=5)
# Discovery queued this long ago and never claimed is queued again (the broker lost it).
QUEUE_GRACE = timedelta(minutes=5)
MAX_ATTEMPTS = 3
INTERRUPTED = "Discovery was interrupted several times; run it again."
UNEXPECTED = "Discovery failed unexpectedly."
WORK = Q(status=Status.PENDING)


def limits_from_settings() -> Limits:
    return Limits(
        connect_timeout=settings.TOOLS_DISCOVERY_CONNECT_TIMEOUT,
        read_timeout=settings.TOOLS_DISCOVERY_READ_TIMEOUT,
        total_timeout=settings.TOOLS_DISCOVERY_TOTAL_TIMEOUT,
        max_bytes=settings.TOOLS_DISCOVERY_MAX_BYTES,
        max_tools=settings.TOOLS_DISCOVERY_MAX_TOOLS,
    )


def _claim(server_id: str) -> tuple[str, McpServer | None]:
    now = timezone.now()
    claimed = (
        McpServer.objects.filter(WORK, pk=server_id)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .update(claimed_until=now + LEASE, attempts=F("attempts") + 1)
    )
    if not claimed:
        busy = McpServer.objects.filter(WORK, pk=server_id).exists()
        return ("busy" if busy else "obsolete"), None
    server = McpServer.objects.filter(pk=server_id).first()
    return ("claimed", server) if server is not None else ("obsolete", None)


def server_discover(*, server_id: str) -> str:
    """Discover one pending server: "connected", "failed", "busy", "obsolete" or "again"."""
    outcome, server = _claim(server_id)
    if server is None:
        return outcome
    started_at = timezone.now()
    if server.attempts > MAX_ATTEMPTS:
        return _finish(server, started_at=started_at, error=INTERRUPTED)
    try:
        headers = decrypt_headers(server.auth_headers_encrypted)
        # Looked up here, not imported with the module: it loads the MCP SDK (mcp_client).
        listing = mcp_client.list_remote_tools(
            server.url, headers=headers, limits=limits_from_settings()
        )
    except (DiscoveryError, UnreadableSecret) as exc:
        return _finish(server, started_at=started_at, error=str(exc))
    except Exception:
        # The URL and the headers stay out of the log: either may hold a token.
        logger.exception("tools discovery of %s failed unexpectedly", server_id)
        return _finish(server, started_at=started_at, error=UNEXPECTED)
    return _finish(server, started_at=started_at, listing=listing)


def _finish(
    claimed: McpServer,
    *,
    started_at,
    listing: Listing | None = None,
    error: str | None = None,
) -> str:
    now = timezone.now()
    with transaction.atomic():
        server = McpServer.objects.select_for_update().filter(pk=claimed.pk).first()
        if server is None:
            return "obsolete"
        if (server.url, server.auth_headers_encrypted) != (
            claimed.url,
            claimed.auth_headers_encrypted,
        ):
            # Changed while we were connecting: this answer is for the old settings.
            McpServer.objects.filter(pk=server.pk).update(
                claimed_until=None, attempts=0, queued_at=now
            )
            enqueue_discovery_after_commit(server.pk)
            return "again"
        trigger = server.pending_trigger or Trigger.MANUAL
        record = McpDiscovery(
            server=server, trigger=trigger, started_at=started_at, finished_at=now
        )
        changes = {
            "claimed_until": None,
            "queued_at": None,
            "attempts": 0,
            "pending_trigger": "",
            "updated_at": now,
            "next_discovery_at": now + REDISCOVER_EVERY if server.enabled else None,
        }
        if listing is None:
            record.status = McpDiscovery.Status.FAILED
            record.error_message = (error or UNEXPECTED)[:500]
            changes.update(status=Status.FAILED, error_message=record.error_message)
        else:
            record.status = McpDiscovery.Status.SUCCEEDED
            _apply_listing(server, listing, record=record, now=now)
            changes.update(
                status=Status.CONNECTED,
                error_message=None,
                transport=listing.transport,
                tool_count=len(listing.tools),
                last_discovered_at=now,
            )
        record.save(force_insert=True)
        McpServer.objects.filter(pk=server.pk).update(**changes)
    return "connected" if listing is not None else "failed"


def _apply_listing(server: McpServer, listing: Listing, *, record: McpDiscovery, now) -> None:
    """Bring the server's tool rows in line with the listing and note what changed.

    Tools of the first successful discovery start enabled; a tool that appears later starts
    disabled, so a server cannot hand the Agent a new capability without the owner's choice.
    """
    first_listing = server.last_discovered_at is None
    existing = {tool.name: tool for tool in McpTool.objects.filter(server=server)}
    listed = {tool.name for tool in listing.tools}
    created: list[McpTool] = []
    updated: list[McpTool] = []
    for remote in listing.tools:
        row = existing.get(remote.name)
        if row is None:
            created.append(
                McpTool(
                    server=server,
                    name=remote.name,
                    description=remote.description,
                    input_schema=remote.input_schema,
                    enabled=first_listing,
                )
            )
            record.tools_added.append(remote.name)
            continue
        if row.removed_at is not None:
            record.tools_added.append(remote.name)  # back again, with the owner's choice
        else:
            if row.input_schema != remote.input_schema:
                record.tools_schema_changed.append(remote.name)
            if row.description != remote.description:
                record.tools_description_changed.append(remote.name)
        row.description = remote.description
        row.input_schema = remote.input_schema
        row.removed_at = None
        row.updated_at = now
        updated.append(row)
    for name, row in existing.items():
        if name not in listed and row.removed_at is None:
            row.removed_at = now
            row.updated_at = now
            updated.append(row)
            record.tools_removed.append(name)
    McpTool.objects.bulk_create(created, batch_size=500)
    McpTool.objects.bulk_update(
        updated, ["description", "input_schema", "removed_at", "updated_at"], batch_size=500
    )
    record.transport = listing.transport
    record.tool_count = len(listing.tools)
    for names in (
        record.tools_added,
        record.tools_removed,
        record.tools_schema_changed,
        record.tools_description_changed,
    ):
        names.sort()


def servers_discover_due(*, batch_size: int = 100) -> list[str]:
    """Queue the daily rediscovery of enabled servers that are due, and queue again the
    discoveries whose worker died or whose task the broker lost.

    `FOR UPDATE SKIP LOCKED` lets several beats run at once: each server is claimed by one.
    """
    now = timezone.now()
    with transaction.atomic():
        due = list(
            McpServer.objects.select_for_update(skip_locked=True)
            .filter(enabled=True, next_discovery_at__isnull=False, next_discovery_at__lte=now)
            .exclude(status=Status.PENDING)
            .order_by("next_discovery_at")
            .values_list("pk", flat=True)[:batch_size]
        )
        if due:
            McpServer.objects.filter(pk__in=due).update(
                status=Status.PENDING,
                error_message=None,
                next_discovery_at=None,
                queued_at=now,
                attempts=0,
                pending_trigger=Trigger.SCHEDULE,
                updated_at=now,
            )
        stalled = list(
            McpServer.objects.select_for_update(skip_locked=True)
            .filter(WORK)
            .filter(
                Q(claimed_until__lt=now)
                | Q(claimed_until__isnull=True, queued_at__lt=now - QUEUE_GRACE)
                | Q(claimed_until__isnull=True, queued_at__isnull=True)
            )
            .exclude(pk__in=due)
            .order_by("queued_at")
            .values_list("pk", flat=True)[:batch_size]
        )
        if stalled:
            McpServer.objects.filter(pk__in=stalled).update(claimed_until=None, queued_at=now)
        for server_id in [*due, *stalled]:
            enqueue_discovery_after_commit(server_id)
    return [*due, *stalled]
