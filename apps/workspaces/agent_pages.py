"""The console's Agents pages: the workspace's Agents (active and archived), creating one,
editing its configuration with the revision history (what changed, one-click restore), and
archive/restore for owners. Thin: every rule is in the services the API calls too."""

from dataclasses import dataclass

from django.contrib import messages
from django.db.models import F
from django.db.models.functions import Lower
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.common.errors import ServiceError
from apps.common.keyset import Page, paginate
from apps.common.sorting import ListSorts, SortColumn, sorted_list
from apps.workspaces import selectors, services
from apps.workspaces.api import AGENT_KEYSET, REVISION_KEYSET
from apps.workspaces.configuration import FieldDifference, differences
from apps.workspaces.console import ConsoleRequest, bounded_count, console_view, keyset_page
from apps.workspaces.forms import AgentConfigForm
from apps.workspaces.models import Agent, AgentRevision

AGENT_PAGE_SIZE = 25
REVISION_PAGE_SIZE = 10
LIST_TEMPLATE = "workspaces/agent_list.html"
DETAIL_TEMPLATE = "workspaces/agent_detail.html"
FORM_TEMPLATE = "workspaces/agent_form.html"

# A workspace has tens of Agents: the name and updated orders sort the few rows the
# `agent_ws_status` index finds, so they need no index of their own.
AGENT_SORTS = ListSorts(
    AGENT_KEYSET,
    (
        SortColumn("created", "Created", "created_at", "time"),
        SortColumn("name", "Name", Lower(F("name")), "text", "asc"),
        SortColumn("updated", "Updated", "updated_at", "time"),
    ),
)

FIELD_LABELS = {
    "name": "Name",
    "description": "Description",
    "instructions": "Instructions",
    "model_id": "Model",
    "effort": "Effort",
    "knowledge_search_enabled": "Knowledge search",
    "allowed_origins": "Allowed origins",
}
DEFAULT_TEXT = {"model_id": "runtime default", "effort": "model default"}


def _page(request: ConsoleRequest, queryset, keyset, size: int) -> Page:
    """The page the cursor names ("Older" sends `after`, "Newer" `before`); a stale or edited
    cursor starts from the first page."""
    page, _stale = keyset_page(
        request, lambda wanted: paginate(queryset, keyset=keyset, page=wanted), limit=size
    )
    return page


def _shown(field: str, value) -> str:
    if value is None:
        return DEFAULT_TEXT.get(field, "—")
    if isinstance(value, bool):
        return "On" if value else "Off"
    if isinstance(value, list):
        return ", ".join(value) if value else "none"
    return value if value != "" else "(empty)"


@dataclass(frozen=True)
class ShownChange:
    label: str
    before: str
    after: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class HistoryEntry:
    revision: AgentRevision
    changes: list[ShownChange]
    is_current: bool


def _history(request: ConsoleRequest, agent: Agent) -> dict:
    page = _page(
        request, selectors.agent_revision_list(agent=agent), REVISION_KEYSET, REVISION_PAGE_SIZE
    )
    # Each revision is shown against the one before it: one more query for the page.
    numbers = [revision.number - 1 for revision in page.rows]
    previous = {
        revision.number: revision.configuration
        for revision in selectors.agent_revision_list(agent=agent).filter(number__in=numbers)
    }
    entries = []
    for revision in page.rows:
        before = previous.get(revision.number - 1)
        changes = [
            _shown_change(difference, first=before is None)
            for difference in differences(before, revision.configuration)
        ]
        entries.append(
            HistoryEntry(
                revision=revision, changes=changes, is_current=revision.number == agent.revision
            )
        )
    return {
        "agent": agent,
        "history": entries,
        "next_cursor": page.next_cursor,
        "previous_cursor": page.previous_cursor,
        "is_first_page": not (request.GET.get("after") or request.GET.get("before")),
    }


def _shown_change(difference: FieldDifference, *, first: bool) -> ShownChange:
    return ShownChange(
        label=FIELD_LABELS[difference.field],
        before="" if first else _shown(difference.field, difference.before),
        after=_shown(difference.field, difference.after),
        lines=difference.lines,
    )


@console_view
def agent_list_page(request: ConsoleRequest) -> HttpResponse:
    status = Agent.Status.ARCHIVED if request.GET.get("status") == "archived" else "active"
    search = request.GET.get("q", "").strip()[:200]
    queryset = selectors.agent_list(workspace_id=request.workspace.pk, status=status)
    if search:
        queryset = queryset.filter(name__icontains=search)
    ordered, keyset, sort_columns = sorted_list(AGENT_SORTS, queryset, request.GET)
    page = _page(request, ordered, keyset, AGENT_PAGE_SIZE)
    context = {
        "section": "agents",
        "agents": page.rows,
        "count": bounded_count(queryset),
        "filtering": bool(search),
        "q": search,
        "sort_columns": sort_columns,
        "next_cursor": page.next_cursor,
        "previous_cursor": page.previous_cursor,
        "is_first_page": not (request.GET.get("after") or request.GET.get("before")),
        "status": status,
        "archived_count": selectors.agent_list(
            workspace_id=request.workspace.pk, status=Agent.Status.ARCHIVED
        ).count(),
    }
    if request.htmx and request.htmx.target == "agent-table":
        return render(request, f"{LIST_TEMPLATE}#agent-table", context)
    return render(request, LIST_TEMPLATE, context)


@console_view
def agent_create_page(request: ConsoleRequest) -> HttpResponse:
    if request.method != "POST":
        form = AgentConfigForm(initial={"knowledge_search_enabled": True})
        return render(request, FORM_TEMPLATE, {"section": "agents", "form": form})
    form = AgentConfigForm(request.POST)
    if form.is_valid():
        try:
            agent = services.agent_create(
                workspace=request.workspace,
                actor=services.actor_for_user(request.user),
                **form.configuration(),
            )
        except ServiceError as exc:
            form.add_service_error(exc.message)
        else:
            messages.success(request, f"Created “{agent.name}”. Switch to it in the Agent menu.")
            return redirect("workspaces:agent_detail", agent_id=agent.pk)
    return render(request, FORM_TEMPLATE, {"section": "agents", "form": form}, status=400)


def _detail(
    request: ConsoleRequest, agent: Agent, *, form: AgentConfigForm | None = None, status=200
) -> HttpResponse:
    context = {
        "section": "agents",
        "form": form or AgentConfigForm.for_agent(agent),
        "is_current_agent": agent.pk == request.agent.pk,
        **_history(request, agent),
    }
    return render(request, DETAIL_TEMPLATE, context, status=status)


@console_view
def agent_detail_page(request: ConsoleRequest, agent_id: str) -> HttpResponse:
    agent = selectors.agent_get(workspace_id=request.workspace.pk, agent_id=agent_id)
    if request.htmx and request.htmx.target == "revision-history":
        return render(request, f"{DETAIL_TEMPLATE}#revision-history", _history(request, agent))
    if request.method != "POST":
        return _detail(request, agent)
    form = AgentConfigForm(request.POST)
    if form.is_valid():
        try:
            before = agent.revision
            agent = services.agent_update(
                workspace_id=request.workspace.pk,
                agent_id=agent.pk,
                changes=form.configuration(),
                actor=services.actor_for_user(request.user),
            )
        except ServiceError as exc:
            form.add_service_error(exc.message)
        else:
            if agent.revision == before:
                messages.info(request, "Nothing changed.")
            else:
                messages.success(request, f"Saved as revision {agent.revision}.")
            return redirect("workspaces:agent_detail", agent_id=agent.pk)
    return _detail(request, agent, form=form, status=400)


@require_POST
@console_view
def agent_revision_restore_page(
    request: ConsoleRequest, agent_id: str, revision_id: str
) -> HttpResponse:
    agent = selectors.agent_get(workspace_id=request.workspace.pk, agent_id=agent_id)
    revision = selectors.agent_revision_get(agent=agent, revision_id=revision_id)
    try:
        agent = services.agent_revision_restore(
            workspace_id=request.workspace.pk,
            agent_id=agent.pk,
            revision_id=revision.pk,
            actor=services.actor_for_user(request.user),
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            f"Restored revision {revision.number}; the configuration is now revision "
            f"{agent.revision}.",
        )
    return redirect("workspaces:agent_detail", agent_id=agent.pk)


@require_POST
@console_view(owner_required=True)
def agent_archive_page(request: ConsoleRequest, agent_id: str) -> HttpResponse:
    agent = selectors.agent_get(workspace_id=request.workspace.pk, agent_id=agent_id)
    try:
        agent = services.agent_archive(workspace_id=request.workspace.pk, agent_id=agent.pk)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            f"Archived “{agent.name}”. Its keys stop working and its refreshes and webhook "
            "deliveries wait until you restore it.",
        )
    return redirect(reverse("workspaces:agent_detail", args=[agent.pk]))


@require_POST
@console_view(owner_required=True)
def agent_restore_page(request: ConsoleRequest, agent_id: str) -> HttpResponse:
    agent = selectors.agent_get(workspace_id=request.workspace.pk, agent_id=agent_id)
    try:
        agent = services.agent_restore(workspace_id=request.workspace.pk, agent_id=agent.pk)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Restored “{agent.name}”: its keys work again.")
    return redirect(reverse("workspaces:agent_detail", args=[agent.pk]))
