"""The console's Team page (members, roles, invitations) and the page an invitation link opens.
Thin: every rule is in apps.workspaces.services (members, invitations)."""

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.db.models import CharField, F, Value
from django.db.models.functions import Coalesce, Concat, Lower, NullIf, Trim
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.common.errors import ServiceError
from apps.common.keyset import Keyset, paginate
from apps.common.sorting import ListSorts, SortColumn, sorted_list
from apps.workspaces import selectors, services
from apps.workspaces.console import (
    SESSION_AGENT_KEY,
    ConsoleRequest,
    bounded_count,
    console_agent_remember,
    console_view,
    keyset_page,
    render_page,
)
from apps.workspaces.forms import AccountCreateForm, InvitationCreateForm
from apps.workspaces.models import Membership
from apps.workspaces.rendering import person_name

TEAM_TEMPLATE = "workspaces/team.html"
ACCEPT_TEMPLATE = "workspaces/invitation_accept.html"
PAGE_SIZE = 25  # as every other console list
MEMBER_KEYSET = Keyset("members", "created_at", descending=False)
# How `person_name` names a member (full name, else e-mail, else username), to sort by.
_PERSON_NAME = Lower(
    Coalesce(
        NullIf(Trim(Concat(F("user__first_name"), Value(" "), F("user__last_name"))), Value("")),
        NullIf(F("user__email"), Value("")),
        F("user__username"),
        output_field=CharField(),
    )
)
# A workspace has tens of people, not millions: these orders sort the few memberships found
# through `membership_ws_joined`, so they need no index of their own. Longest-standing first.
MEMBER_SORTS = ListSorts(
    MEMBER_KEYSET,
    (
        SortColumn("joined", "Joined", "created_at", "time", "asc"),
        SortColumn("name", "Name", _PERSON_NAME, "text", "asc"),
        SortColumn("role", "Role", "role", "text", "asc"),
    ),
)
INVITATION_KEYSET = Keyset("invitations", "created_at", descending=True)
# The link of an invitation just made, shown once on the next view of the Team page.
NEW_INVITATION_SESSION_KEY = "console_new_invitation"


def _team_page(
    request: ConsoleRequest, form: InvitationCreateForm | None = None, *, status: int = 200
) -> HttpResponse:
    workspace_id = request.workspace.pk
    role = request.GET.get("role", "")
    if role not in Membership.Role.values:
        role = ""
    search = request.GET.get("q", "").strip()[:200]
    people = selectors.member_list(workspace_id=workspace_id, role=role, search=search)
    ordered, keyset, sort_columns = sorted_list(MEMBER_SORTS, people, request.GET)
    members, stale = keyset_page(
        request, lambda wanted: paginate(ordered, keyset=keyset, page=wanted), limit=PAGE_SIZE
    )
    context: dict[str, Any] = {
        "section": "team",
        "members": members.rows,
        "page": members,
        "count": bounded_count(people),
        "filtering": bool(role or search),
        "role": role,
        "q": search,
        "sort_columns": sort_columns,
        "is_first_page": not (request.GET.get("after") or request.GET.get("before")),
        "owner_count": Membership.objects.filter(
            workspace_id=workspace_id, role=Membership.Role.OWNER
        ).count(),
        "stale_message": stale,
        "roles": Membership.Role.choices,
        "invitation_days": settings.TEAM_INVITATION_DAYS,
    }
    if request.is_owner:
        invitations, _stale = keyset_page(
            request,
            lambda wanted: paginate(
                selectors.invitation_list_open(workspace_id=workspace_id),
                keyset=INVITATION_KEYSET,
                page=wanted,
            ),
            limit=PAGE_SIZE,
            param="invitations_after",
        )
        context.update(
            invitations=invitations.rows,
            invitations_next_cursor=invitations.next_cursor,
            invitations_previous_cursor=invitations.previous_cursor,
            form=form or InvitationCreateForm(),
            new_invitation=request.session.pop(NEW_INVITATION_SESSION_KEY, None),
        )
    return render_page(request, TEAM_TEMPLATE, context, partial="member-table", status=status)


@console_view
def team_page(request: ConsoleRequest) -> HttpResponse:
    return _team_page(request)


@require_POST
@console_view(owner_required=True)
def invitation_create_page(request: ConsoleRequest) -> HttpResponse:
    form = InvitationCreateForm(request.POST)
    if form.is_valid():
        try:
            created = services.invitation_create(
                workspace=request.workspace,
                by_user=request.user,
                role=form.cleaned_data["role"],
                email=form.cleaned_data["email"],
                site_url=request.build_absolute_uri("/"),
            )
        except ServiceError as exc:
            form.add_service_error(exc.message)
        else:
            invitation = created.invitation
            request.session[NEW_INVITATION_SESSION_KEY] = {
                "link": created.link,
                "email": invitation.email,
                "role": invitation.get_role_display().lower(),
                "email_sent": created.email_sent,
                "email_error": created.email_error,
                "expires_at": invitation.expires_at.isoformat(),
            }
            return redirect("workspaces:team")
    return _team_page(request, form, status=400)


def _after(request: ConsoleRequest, done: str | None, error: str | None) -> HttpResponse:
    if done:
        messages.success(request, done)
    if error:
        messages.error(request, error)
    return redirect("workspaces:team")


@require_POST
@console_view(owner_required=True)
def invitation_revoke_page(request: ConsoleRequest, invitation_id: str) -> HttpResponse:
    try:
        invitation = services.invitation_revoke(
            workspace=request.workspace, invitation_id=invitation_id, by_user=request.user
        )
    except ServiceError as exc:
        return _after(request, None, exc.message)
    who = invitation.email or "The link"
    return _after(request, f"Revoked the invitation. {who} can no longer join with it.", None)


@require_POST
@console_view
def member_role_page(request: ConsoleRequest, membership_id: str) -> HttpResponse:
    try:
        membership = services.member_role_change(
            workspace=request.workspace,
            membership_id=membership_id,
            role=request.POST.get("role", ""),
            by_user=request.user,
        )
    except ServiceError as exc:
        return _after(request, None, exc.message)
    who = person_name(membership.user)
    return _after(request, f"{who} is now {membership.get_role_display().lower()}.", None)


@require_POST
@console_view
def member_remove_page(request: ConsoleRequest, membership_id: str) -> HttpResponse:
    try:
        removal = services.member_remove(
            workspace=request.workspace, membership_id=membership_id, by_user=request.user
        )
    except ServiceError as exc:
        return _after(request, None, exc.message)
    keys = removal.keys_revoked
    revoked = (
        f" {keys} API key{'' if keys == 1 else 's'} they created {'was' if keys == 1 else 'were'} revoked."
        if keys
        else ""
    )
    if removal.user.pk == request.user.pk:
        request.session.pop(SESSION_AGENT_KEY, None)
        messages.success(request, f"You left {request.workspace.name}.{revoked}")
        return redirect("home")
    return _after(
        request,
        f"Removed {person_name(removal.user)} from {request.workspace.name}.{revoked}",
        None,
    )


@require_POST
@console_view
def ownership_transfer_page(request: ConsoleRequest, membership_id: str) -> HttpResponse:
    try:
        membership = services.ownership_transfer(
            workspace=request.workspace, membership_id=membership_id, by_user=request.user
        )
    except ServiceError as exc:
        return _after(request, None, exc.message)
    return _after(
        request,
        f"{person_name(membership.user)} now owns {request.workspace.name}; you are a member.",
        None,
    )


# --- The invitation link --------------------------------------------------------------------


def _accept_context(request: HttpRequest, token: str) -> dict:
    # The token is a secret: the request log shows the route, not the link.
    request.log_path = "/invite/…/"  # type: ignore[attr-defined]
    invitation = services.invitation_by_token(token)
    try:
        services.invitation_check(invitation)
    except ServiceError as exc:
        return {"error": exc.message, "status": 404 if invitation is None else 410}
    return {"invitation": invitation, "token": token, "status": 200}


def invitation_accept_page(request: HttpRequest, token: str) -> HttpResponse:
    """GET: who invites whom to what; signed in, a button to accept; signed out, sign in or
    create an account. POST (signed in): accept."""
    context = _accept_context(request, token)
    if request.method == "POST" and "invitation" in context and request.user.is_authenticated:
        try:
            membership = services.invitation_accept(token=token, user=request.user)
        except ServiceError as exc:
            context.update(error=exc.message, status=409)
        else:
            return _welcome(request, membership)
    if "invitation" in context and not request.user.is_authenticated:
        context.setdefault("form", AccountCreateForm())
    return render(request, ACCEPT_TEMPLATE, context, status=context["status"])


@require_POST
def invitation_join_page(request: HttpRequest, token: str) -> HttpResponse:
    """Create an account and accept the invitation with it."""
    context = _accept_context(request, token)
    if "invitation" not in context or request.user.is_authenticated:
        return redirect("workspaces:invitation_accept", token=token)
    form = AccountCreateForm(request.POST)
    if form.is_valid():
        try:
            membership = services.invitation_accept_with_new_account(
                token=token,
                email=form.cleaned_data["email"],
                name=form.cleaned_data["name"],
                password=form.cleaned_data["password"],
            )
        except ServiceError as exc:
            form.add_service_error(exc.message)
        else:
            login(request, membership.user, backend="django.contrib.auth.backends.ModelBackend")
            return _welcome(request, membership)
    context.update(form=form, status=400)
    return render(request, ACCEPT_TEMPLATE, context, status=400)


def _welcome(request: HttpRequest, membership: Membership) -> HttpResponse:
    """Open the console on the workspace just joined."""
    agent = (
        selectors.agent_list_for_user(user=membership.user)
        .filter(workspace_id=membership.workspace_id)
        .first()
    )
    if agent is not None:
        request.session[SESSION_AGENT_KEY] = agent.pk
        console_agent_remember(user=membership.user, agent=agent)
    messages.success(
        request,
        f"Welcome to {membership.workspace.name}. You joined as "
        f"{membership.get_role_display().lower()}.",
    )
    return redirect(reverse("home"))
