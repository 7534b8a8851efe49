"""The Audit log page: owners read every change to their workspace, filter it and export it.

It reads the same selector as GET /v1/audit_events (`audit_event_list`), and exports with the
API's own output function, so a download holds exactly what the API would return.
"""

from __future__ import annotations

from typing import Any

import orjson
from django.contrib import messages
from django.db.models import F
from django.db.models.functions import Lower
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET

from apps.common.errors import BadRequest
from apps.common.export import export_format, export_response
from apps.common.keyset import Keyset, paginate
from apps.common.sorting import ListSorts, SortColumn, sorted_list
from apps.workspaces.audit import AUDIT_ACTIONS, audit_record
from apps.workspaces.console import (
    ConsoleRequest,
    bounded_count,
    console_view,
    keyset_page,
    render_page,
)
from apps.workspaces.models import ActorType, Agent, AuditEvent
from apps.workspaces.rendering import audit_event_to_dict, audit_event_to_row
from apps.workspaces.selectors import (
    AUDIT_FILTERS,
    AuditFilters,
    audit_event_list,
    audit_filters_parse,
)

TEMPLATE = "workspaces/audit_log.html"
KEYSET = Keyset("audit-log-page", "created_at", descending=True)
PAGE_SIZE = 25  # as every other console list
# Newest first (the API's order), oldest first, by actor or by action: each one range of an
# AuditEvent index (audit_ws_created, audit_ws_actor_name, audit_ws_action_id) at any depth.
AUDIT_SORTS = ListSorts(
    KEYSET,
    (
        SortColumn("when", "When", "created_at", "time"),
        SortColumn("actor", "Actor", Lower(F("actor_name")), "text", "asc"),
        SortColumn("action", "Action", "action", "text", "asc"),
    ),
)


def _value_text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def change_lines(changes: dict) -> list[str]:
    """An entry's changes as short lines: `name: old → new`, `secret changed`, `count: 3`."""
    lines = []
    for name, value in changes.items():
        label = name.replace("_", " ")
        if isinstance(value, dict) and set(value) == {"from", "to"}:
            lines.append(f"{label}: {_value_text(value['from'])} → {_value_text(value['to'])}")
        elif value == {"changed": True}:
            lines.append(f"{label} changed")
        else:
            lines.append(f"{label}: {_value_text(value)}")
    return lines


def _action_groups() -> list[tuple[str, list[str]]]:
    groups: dict[str, list[str]] = {}
    for action in AUDIT_ACTIONS:
        groups.setdefault(action.split(".", 1)[0], []).append(action)
    return list(groups.items())


def _filters(request: ConsoleRequest) -> tuple[AuditFilters, str | None]:
    try:
        return audit_filters_parse(request.GET), None
    except BadRequest as exc:
        return AuditFilters(), exc.message


@require_GET
@console_view(owner_required=True)
def audit_log(request: ConsoleRequest) -> HttpResponse:
    filters, error = _filters(request)
    queryset = audit_event_list(workspace_id=request.workspace.pk, filters=filters)
    ordered, keyset, sort_columns = sorted_list(AUDIT_SORTS, queryset, request.GET)
    page, stale = keyset_page(
        request, lambda wanted: paginate(ordered, keyset=keyset, page=wanted), limit=PAGE_SIZE
    )
    rows = [
        {
            "event": event,
            "changes": change_lines(event.changes),
            "description": AUDIT_ACTIONS.get(event.action, ""),
        }
        for event in page.rows
    ]
    context = {
        "section": "audit_log",
        "sort_columns": sort_columns,
        "page": page,
        "rows": rows,
        "count": bounded_count(queryset),
        "error": error or stale,
        "filtering": not filters.is_empty,
        "is_first_page": not request.GET.get("after") and not request.GET.get("before"),
        "values": {name: request.GET.get(name, "") for name in AUDIT_FILTERS},
        "action_groups": _action_groups(),
        "actor_types": ActorType.choices,
        "agents": Agent.objects.filter(workspace=request.workspace).order_by("name"),
    }
    return render_page(request, TEMPLATE, context, partial="audit-table")


@require_GET
@console_view(owner_required=True)
def audit_log_export(request: ConsoleRequest) -> HttpResponseBase:
    """`/audit-log/export/?format=csv|json&<the page's filters and order>`: every matching
    entry, in the order the page shows them."""
    try:
        filters = audit_filters_parse(request.GET)
        fmt = export_format(request.GET.get("format"))
    except BadRequest as exc:
        messages.error(request, f"Nothing exported: {exc.message}")
        return redirect(reverse("workspaces:audit_log"))
    # Who took a copy of the log, and of what, is itself worth knowing.
    audit_record(
        workspace_id=request.workspace.pk,
        action="audit_log.exported",
        target_type="workspace",
        target_id=request.workspace.pk,
        target_name=request.workspace.name,
        changes={
            "format": fmt,
            "filters": {k: v for k, v in request.GET.items() if k in AUDIT_FILTERS and v},
        },
    )
    csv = fmt == "csv"
    render = audit_event_to_row if csv else audit_event_to_dict
    ordered, keyset, _headers = sorted_list(
        AUDIT_SORTS,
        audit_event_list(workspace_id=request.workspace.pk, filters=filters),
        request.GET,
    )
    return export_response(
        queryset=ordered,
        keyset=keyset,
        render=render,
        columns=list(audit_event_to_row(AuditEvent(workspace_id=request.workspace.pk))),
        filename=f"audit-log-{request.workspace.pk}",
        fmt=fmt,
    )
