"""What every console page needs: the signed-in member, their Agents and the current one.

`console_view` wraps a page view: it requires a login, picks the current Agent (kept in the
session, switchable), and sets `request.agent`, `request.workspace`, `request.membership` and
`request.is_owner`. `owner_required=True` pages answer members with 403.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import TYPE_CHECKING, cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils.http import url_has_allowed_host_and_scheme

from apps.common.errors import BadRequest, NotFound, ServiceError
from apps.common.keyset import Page, PageRequest
from apps.workspaces.models import Agent, ConsolePreference, Membership, Workspace
from apps.workspaces.selectors import agent_list_for_user, membership_get

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django_htmx.middleware import HtmxDetails


class ConsoleRequest(HttpRequest):
    """A request as console pages see it, after `console_view` (for type checking only)."""

    user: "User"
    htmx: "HtmxDetails"
    agent: Agent
    workspace: Workspace
    membership: Membership
    is_owner: bool
    console_agents: list[Agent]


SESSION_AGENT_KEY = "console_agent_id"
OWNERS_ONLY = "Only workspace owners can do this. Ask an owner of the workspace."

# The console's navigation: label, URL name, section, owners only. Entries whose page is not
# installed are left out, and so are owner-only ones for members.
NAVIGATION = (
    ("Overview", "activity:overview", "overview", False),
    ("Conversations", "activity:conversation_list", "conversations", False),
    ("Users", "activity:user_list", "users", False),
    ("Runs", "activity:run_list", "runs", False),
    ("Performance", "activity:performance", "performance", False),
    ("Scores", "scores:score_list", "scores", False),
    ("Usage", "usage:usage_overview", "usage", False),
    ("Knowledge", "knowledge:document_list", "knowledge", False),
    ("Unanswered questions", "knowledge:gap_list", "gaps", False),
    ("Tools", "tools:server_list", "tools", False),
    ("Webhooks", "webhooks:webhook_detail", "webhooks", True),
    ("Agents", "workspaces:agent_list", "agents", False),
    ("API keys", "workspaces:api_key_list", "api_keys", False),
    ("Connected apps", "mcp_server:connected_app_list", "connected_apps", False),
    ("Team", "workspaces:team", "team", False),
    ("Data retention", "retention:retention_settings", "retention", True),
    ("Audit log", "workspaces:audit_log", "audit_log", True),
)


def navigation(*, is_owner: bool = True) -> list[dict]:
    items = []
    for label, url_name, section, owners_only in NAVIGATION:
        if owners_only and not is_owner:
            continue
        try:
            items.append({"label": label, "url": reverse(url_name), "section": section})
        except NoReverseMatch:
            continue
    return items


def console_agent_remembered(*, user) -> str | None:
    """The id of the Agent `user` last chose in the console, if any (it may since have been
    archived or left: the caller checks it against the Agents the user may open)."""
    return (
        ConsolePreference.objects.filter(user=user).values_list("last_agent_id", flat=True).first()
    )


def console_agent_remember(*, user, agent: Agent) -> None:
    """Remember `agent` as the one `user` works with, for their next sign-in."""
    ConsolePreference.objects.update_or_create(user=user, defaults={"last_agent": agent})


def _attach_agent(request: ConsoleRequest) -> bool:
    agents = list(agent_list_for_user(user=request.user))
    request.console_agents = agents
    if not agents:
        return False
    # A link that names its Agent (`?agent=`, as the charts' click-throughs do) opens it, so
    # the link shows the same runs wherever it is opened; one the user may not open is ignored.
    named = request.GET.get("agent")
    wanted = named if any(a.pk == named for a in agents) else request.session.get(SESSION_AGENT_KEY)
    if wanted is None:  # a new session: the Agent chosen last time, not the first by name
        wanted = console_agent_remembered(user=request.user)
    agent = next((a for a in agents if a.pk == wanted), agents[0])
    request.session[SESSION_AGENT_KEY] = agent.pk
    request.agent = agent
    request.workspace = agent.workspace
    membership = membership_get(user=request.user, workspace_id=agent.workspace_id)
    if membership is None:  # removed from the workspace between the two reads
        return False
    request.membership = membership
    request.is_owner = request.membership.is_owner
    return True


def console_view(view: Callable | None = None, *, owner_required: bool = False):
    def decorator(func: Callable) -> Callable:
        @login_required
        @wraps(func)
        def wrapper(http_request: HttpRequest, *args, **kwargs) -> HttpResponse:
            request = cast(ConsoleRequest, http_request)
            if not _attach_agent(request):
                return render(request, "workspaces/no_agent.html", status=403)
            if owner_required and not request.is_owner:
                if getattr(request, "htmx", False):
                    # An action clicked on a page opened before the role changed: the reason,
                    # for console.js to show where it was clicked (not a whole 403 page).
                    return HttpResponse(
                        OWNERS_ONLY, status=403, content_type="text/plain; charset=utf-8"
                    )
                raise PermissionDenied(OWNERS_ONLY)
            try:
                return func(request, *args, **kwargs)
            except NotFound as exc:  # another Agent's or a deleted resource: the 404 page
                return render(request, "404.html", {"message": exc.message}, status=404)

        return wrapper

    return decorator(view) if view is not None else decorator


def render_page(
    request: HttpRequest,
    template: str,
    context: dict,
    *,
    partial: str | None = None,
    status: int = 200,
) -> HttpResponse:
    """The whole page, or only the region `partial` when HTMX asked for it (its DOM id is the
    request's `HX-Target`, and the template's partial of the same name renders it)."""
    htmx = getattr(request, "htmx", None)
    if partial is not None and htmx and htmx.target == partial:
        return render(request, f"{template}#{partial}", context, status=status)
    return render(request, template, context, status=status)


STALE_CURSOR_MESSAGE = "That page link is no longer valid; showing the first page."


def keyset_page(
    request: HttpRequest,
    fetch: Callable[[PageRequest], Page],
    *,
    limit: int,
    param: str = "after",
) -> tuple[Page, str | None]:
    """The page the query string's cursor (`param`, for a page with two lists) names, fetched
    by `fetch`; a stale or edited cursor gives the first page and a message to show, never an
    error page."""
    after = request.GET.get(param) or None  # "Newest" links send an empty `after`
    # "Newer" links send `before` (or `<param>_before` beside a second list).
    before = request.GET.get("before" if param == "after" else f"{param}_before") or None
    try:
        return fetch(PageRequest(limit=limit, after=None if before else after, before=before)), None
    except BadRequest:
        return fetch(PageRequest(limit=limit, after=None)), STALE_CURSOR_MESSAGE


COUNT_CAP = 10_000


@dataclass(frozen=True)
class BoundedCount:
    """How many rows a filtered list has, counted up to a cap: "10,000+" past it."""

    value: int
    capped: bool


def bounded_count(queryset: QuerySet, *, cap: int = COUNT_CAP) -> BoundedCount:
    """COUNT over at most `cap + 1` rows of the list's index range: a few milliseconds on a
    million rows, where an exact COUNT(*) would read them all on every page view."""
    value = queryset.order_by()[: cap + 1].count()
    return BoundedCount(value=min(value, cap), capped=value > cap)


def remote_images_allowed(request: ConsoleRequest) -> bool:
    """Whether this view loads images from addresses in untrusted markdown: only when an owner
    asks for it (`?images=show`); otherwise images are shown as links."""
    allowed = request.is_owner and request.GET.get("images") == "show"
    # The Content-Security-Policy middleware opens img-src for this response only.
    request.allow_remote_images = allowed  # type: ignore[attr-defined]
    return allowed


# --- Bulk actions on a list's selected rows --------------------------------------------------

# Rows one bulk action may touch: a page of a list at most, so a request stays short.
BULK_LIMIT = 100


@dataclass(frozen=True)
class RowNoun:
    """How a list names its rows in bulk pages and messages: `KEYS(1)` is "1 key"."""

    singular: str
    plural: str

    def __call__(self, count: int) -> str:
        return f"{count} {self.singular if count == 1 else self.plural}"


def bulk_return(request: HttpRequest, list_url: str) -> str:
    """Where a bulk action goes back to: the list with its filters and page (the bar's `next`),
    when it is that list on this site; else the list."""
    target = request.POST.get("next", "")
    allowed = url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()})
    return target if allowed and target.startswith(list_url) else list_url


def bulk_ids(request: HttpRequest) -> list[str]:
    """The rows ticked in a list (`ids`), each once, in order; BadRequest past BULK_LIMIT."""
    ids = list(dict.fromkeys(value for value in request.POST.getlist("ids") if value))
    if len(ids) > BULK_LIMIT:
        raise BadRequest(f"Choose at most {BULK_LIMIT} rows at a time.")
    return ids


def bulk_ticked(request: HttpRequest, *, noun: RowNoun, list_url: str) -> list[str] | HttpResponse:
    """The ticked rows' ids, or the list again with a message saying why there are none to act
    on (nothing ticked, or more than BULK_LIMIT)."""
    try:
        ids = bulk_ids(request)
        if not ids:
            raise BadRequest(f"Tick the {noun.plural} to act on first.")
    except BadRequest as exc:
        messages.error(request, exc.message)
        return redirect(list_url)
    return ids


@dataclass
class BulkOutcome:
    """What a bulk action did: how many rows it changed, and why it left the others."""

    done: int = 0
    skipped: dict[str, int] | None = None

    def skip(self, reason: str) -> None:
        self.skipped = self.skipped or {}
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def summary(self, *, verb: str, noun: RowNoun) -> str:
        text = f"{verb} {noun(self.done)}."
        for reason, count in (self.skipped or {}).items():
            text += f" {count} left as {'it was' if count == 1 else 'they were'}: {reason}"
        return text


def bulk_apply(ids: list[str], action: Callable[[str], object]) -> BulkOutcome:
    """Run the one-row service `action` on each id: every rule stays in that service, and a
    row it refuses (already done, not allowed, gone meanwhile) is counted with its reason."""
    outcome = BulkOutcome()
    for row_id in ids:
        try:
            action(row_id)
        except ServiceError as exc:
            outcome.skip(exc.message)
        else:
            outcome.done += 1
    return outcome


def bulk_confirm(
    request: HttpRequest,
    *,
    section: str,
    action_url: str,
    cancel_url: str,
    action: str,
    label: str,
    noun: RowNoun,
    consequence: str,
    rows: dict[str, str],
    danger: bool = False,
) -> HttpResponse:
    """The page that asks before a bulk action ("Revoke 3 keys?"), with how many rows it
    touches and their names (`rows`: id to name, the rows the action would change)."""
    rows_phrase = noun(len(rows))
    context = {
        "section": section,
        "action_url": action_url,
        "cancel_url": cancel_url,
        "action": action,
        "question": f"{label} {rows_phrase}?",
        "consequence": consequence,
        "names": list(rows.values()),
        "ids": list(rows),
        "confirm_label": f"{label} {rows_phrase}",
        "danger": danger,
    }
    return render(request, "bulk_confirm.html", context)
