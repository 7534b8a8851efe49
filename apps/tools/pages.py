"""The console's Tools page: an Agent's MCP tool servers (add, status, discover), each
server's tools with per-tool toggles, and its change log. Members view; owners change.

Thin: every rule lives in apps.tools.services and selectors, shared with the API.
"""

from __future__ import annotations

from django.contrib import messages
from django.db.models import F
from django.db.models.functions import Lower
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from apps.common.errors import ServiceError
from apps.common.keyset import paginate
from apps.common.sorting import ListSorts, SortColumn, sorted_list, time_or_never
from apps.tools import selectors, services
from apps.tools.api import DISCOVERY_KEYSET, SERVER_KEYSET, TOOL_KEYSET
from apps.tools.models import McpServer
from apps.workspaces.console import (
    ConsoleRequest,
    bounded_count,
    console_view,
    keyset_page,
    render_page,
)

LIST_TEMPLATE = "tools/server_list.html"
DETAIL_TEMPLATE = "tools/server_detail.html"
PAGE_SIZE = 50
SERVER_PAGE_SIZE = 25  # as every other console list
HEADER_ROWS = 3
# An Agent connects a handful of servers: these orders sort the few rows `tools_server_list`
# finds, so they need no index of their own.
SERVER_SORTS = ListSorts(
    SERVER_KEYSET,
    (
        SortColumn("created", "Added", "created_at", "time"),
        SortColumn("name", "Server", Lower(F("name")), "text", "asc"),
        SortColumn("tools", "Tools", "tool_count", "number", css="num"),
        SortColumn(
            "discovered",
            "Last discovered",
            time_or_never("last_discovered_at"),
            "time",
        ),
    ),
)
ENABLED_CHOICES = (("yes", "Enabled"), ("no", "Disabled"))


def _page(
    queryset, keyset, request: ConsoleRequest, *, param: str = "after", size: int = PAGE_SIZE
):
    page, _stale = keyset_page(
        request,
        lambda page: paginate(queryset, keyset=keyset, page=page),
        limit=size,
        param=param,
    )
    return page


def _headers_from_form(request: ConsoleRequest) -> dict[str, str]:
    names = request.POST.getlist("header_name")
    values = request.POST.getlist("header_value")
    headers: dict[str, str] = {}
    for name, value in zip(names, values, strict=False):
        if name.strip() or value.strip():
            headers[name.strip()] = value
    return headers


def _list(request: ConsoleRequest, *, status: int = 200, form: dict | None = None) -> HttpResponse:
    servers = selectors.server_list(agent=request.agent)
    server_status = request.GET.get("status", "")
    if server_status in McpServer.Status.values:
        servers = servers.filter(status=server_status)
    else:
        server_status = ""
    enabled = request.GET.get("enabled", "")
    if enabled in ("yes", "no"):
        servers = servers.filter(enabled=enabled == "yes")
    else:
        enabled = ""
    ordered, keyset, sort_columns = sorted_list(SERVER_SORTS, servers, request.GET)
    page = _page(ordered, keyset, request, size=SERVER_PAGE_SIZE)
    context = {
        "section": "tools",
        "servers": page.rows,
        "count": bounded_count(servers),
        "filtering": bool(server_status or enabled),
        "server_status": server_status,
        "server_statuses": McpServer.Status.choices,
        "enabled": enabled,
        "enabled_choices": ENABLED_CHOICES,
        "sort_columns": sort_columns,
        "next_cursor": page.next_cursor,
        "previous_cursor": page.previous_cursor,
        "is_first_page": not (request.GET.get("after") or request.GET.get("before")),
        "form": form or {},
        "header_rows": range(HEADER_ROWS),
        "tools_used": selectors.tools_used(agent=request.agent),
        "tools_used_runs": selectors.TOOLS_USED_RUNS,
    }
    return render_page(request, LIST_TEMPLATE, context, partial="server-table", status=status)


@require_GET
@console_view
def server_list(request: ConsoleRequest) -> HttpResponse:
    return _list(request)


@require_POST
@console_view(owner_required=True)
def server_add(request: ConsoleRequest) -> HttpResponse:
    url = request.POST.get("url", "")
    name = request.POST.get("name", "").strip() or None
    try:
        server = services.server_create(
            agent=request.agent, url=url, name=name, auth_headers=_headers_from_form(request)
        )
    except ServiceError as exc:
        form = {"error": exc.message, "url": url, "name": name or ""}
        return _list(request, status=400, form=form)
    messages.success(request, f"Added {server.name}; discovering its tools.")
    return redirect("tools:server_detail", server_id=server.pk)


def _detail_context(request: ConsoleRequest, server_id: str) -> dict:
    server = selectors.server_get(agent=request.agent, server_id=server_id)
    tools = _page(
        selectors.tool_list(agent=request.agent, server_id=server_id),
        TOOL_KEYSET,
        request,
        param="tools_after",
    )
    changes = _page(
        selectors.discovery_list(agent=request.agent, server_id=server_id),
        DISCOVERY_KEYSET,
        request,
    )
    return {
        "section": "tools",
        "server": server,
        "tools": tools.rows,
        "tools_next": tools.next_cursor,
        "tools_previous": tools.previous_cursor,
        "changes": changes.rows,
        "changes_next": changes.next_cursor,
        "changes_previous": changes.previous_cursor,
    }


@require_GET
@console_view
def server_detail(request: ConsoleRequest, server_id: str) -> HttpResponse:
    if request.htmx and request.GET.get("partial") == "status":
        server = selectors.server_get(agent=request.agent, server_id=server_id)
        response = render(request, f"{DETAIL_TEMPLATE}#server-status", {"server": server})
        if server.status != server.Status.PENDING:
            # Settled: stop polling and reload, so the tools and the change log show.
            response.status_code = HttpResponseStopPolling.status_code
            response["HX-Refresh"] = "true"
        return response
    return render(request, DETAIL_TEMPLATE, _detail_context(request, server_id))


@require_POST
@console_view(owner_required=True)
def server_discover(request: ConsoleRequest, server_id: str) -> HttpResponse:
    services.server_discover_request(agent=request.agent, server_id=server_id)
    if request.htmx:
        server = selectors.server_get(agent=request.agent, server_id=server_id)
        return render(request, f"{DETAIL_TEMPLATE}#server-status", {"server": server})
    return redirect("tools:server_detail", server_id=server_id)


@require_POST
@console_view(owner_required=True)
def server_toggle(request: ConsoleRequest, server_id: str) -> HttpResponse:
    enabled = request.POST.get("enabled") == "true"
    services.server_update(agent=request.agent, server_id=server_id, enabled=enabled)
    messages.success(request, "Server enabled." if enabled else "Server disabled.")
    return redirect("tools:server_detail", server_id=server_id)


@require_POST
@console_view(owner_required=True)
def server_delete(request: ConsoleRequest, server_id: str) -> HttpResponse:
    server = selectors.server_get(agent=request.agent, server_id=server_id)
    services.server_delete(agent=request.agent, server_id=server_id)
    messages.success(request, f"Removed “{server.name}” and its tools.")
    return redirect("tools:server_list")


@require_POST
@console_view(owner_required=True)
def tool_toggle(request: ConsoleRequest, server_id: str, name: str) -> HttpResponse:
    enabled = request.POST.get("enabled") == "true"
    tool = services.tool_set_enabled(
        agent=request.agent, server_id=server_id, name=name, enabled=enabled
    )
    if request.htmx:
        return render(request, f"{DETAIL_TEMPLATE}#tool-row", {"tool": tool, "server": tool.server})
    return redirect("tools:server_detail", server_id=server_id)
