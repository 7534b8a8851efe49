"""Console pages of the workspaces app: sign-in, Agent switcher, API keys."""

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.db.models import F
from django.db.models.functions import Lower
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.api.scopes import ALL_SCOPES, OWNER_SCOPES
from apps.common.errors import InsufficientScope, ServiceError
from apps.common.keyset import paginate
from apps.common.sorting import ListSorts, SortColumn, sorted_list, time_or_never
from apps.workspaces.console import (
    SESSION_AGENT_KEY,
    ConsoleRequest,
    RowNoun,
    bounded_count,
    bulk_apply,
    bulk_confirm,
    bulk_ticked,
    console_agent_remember,
    console_view,
    keyset_page,
    render_page,
)
from apps.workspaces.forms import ApiKeyCreateForm
from apps.workspaces.key_api import API_KEY_KEYSET
from apps.workspaces.selectors import (
    API_KEY_STATUSES,
    agent_list_for_user,
    api_key_filter,
    api_key_list,
)
from apps.workspaces.services import api_key_create_by_member, api_key_revoke

NEW_KEY_SESSION_KEY = "console_new_api_key"

KEYS = RowNoun("key", "keys")

KEY_PAGE_SIZE = 25
# An Agent has tens of keys, not thousands: these orders sort its few rows found through
# `apikey_agent_created`, so they need no index of their own.
API_KEY_SORTS = ListSorts(
    API_KEY_KEYSET,
    (
        SortColumn("created", "Created", "created_at", "time"),
        SortColumn("name", "Name", Lower(F("name")), "text", "asc"),
        SortColumn(
            "last_used",
            "Last used",
            time_or_never("last_used_at"),
            "time",
        ),
    ),
)


class LoginView(auth_views.LoginView):
    template_name = "workspaces/login.html"
    redirect_authenticated_user = True


@require_POST
@console_view
def agent_switch(request: ConsoleRequest) -> HttpResponse:
    agent_id = request.POST.get("agent_id", "")
    agent = agent_list_for_user(user=request.user).filter(pk=agent_id).first()
    if agent is not None:
        request.session[SESSION_AGENT_KEY] = agent.pk
        console_agent_remember(user=request.user, agent=agent)
    next_url = request.POST.get("next") or reverse("home")
    if not next_url.startswith("/") or next_url.startswith("//"):
        next_url = "/"
    return redirect(next_url)


def _api_key_page(
    request: ConsoleRequest, form: ApiKeyCreateForm, *, status: int = 200
) -> HttpResponse:
    key_status = request.GET.get("status", "")
    if key_status not in API_KEY_STATUSES:
        key_status = ""
    search = request.GET.get("q", "").strip()[:200]
    keys = api_key_filter(api_key_list(agent=request.agent), status=key_status, search=search)
    ordered, keyset, sort_columns = sorted_list(API_KEY_SORTS, keys, request.GET)
    page, page_error = keyset_page(
        request, lambda cursor: paginate(ordered, keyset=keyset, page=cursor), limit=KEY_PAGE_SIZE
    )
    context = {
        "section": "api_keys",
        "form": form,
        "page": page,
        "error": page_error,
        "count": bounded_count(keys),
        "filtering": bool(key_status or search),
        "key_status": key_status,
        "key_statuses": [(value, value.capitalize()) for value in API_KEY_STATUSES],
        "q": search,
        "sort_columns": sort_columns,
        "is_first_page": not (request.GET.get("after") or request.GET.get("before")),
        "scope_descriptions": ALL_SCOPES,
        "owner_scopes": OWNER_SCOPES,
        "new_key": request.session.pop(NEW_KEY_SESSION_KEY, None),
        "bulk_actions": [("revoke", "Revoke", True)],
    }
    return render_page(
        request, "workspaces/api_key_list.html", context, partial="api-key-table", status=status
    )


@console_view
def api_key_list_page(request: ConsoleRequest) -> HttpResponse:
    form = ApiKeyCreateForm(initial={"scopes": ApiKeyCreateForm.default_scopes()})
    return _api_key_page(request, form)


@require_POST
@console_view
def api_key_create_page(request: ConsoleRequest) -> HttpResponse:
    form = ApiKeyCreateForm(request.POST)
    if form.is_valid():
        try:
            key, raw = api_key_create_by_member(
                agent=request.agent,
                user=request.user,
                name=form.cleaned_data["name"],
                scopes=form.cleaned_data["scopes"],
                expires_at=form.cleaned_data["expires_at"],
            )
        except InsufficientScope as exc:
            form.add_error("scopes", exc.message)
        except ServiceError as exc:
            form.add_error(None, exc.message)
        else:
            # Shown once on the next page view, then gone from the session for good.
            request.session[NEW_KEY_SESSION_KEY] = {"name": key.name, "key": raw}
            return redirect("workspaces:api_key_list")
    return _api_key_page(request, form, status=400)


@require_POST
@console_view
def api_key_revoke_page(request: ConsoleRequest, key_id: str) -> HttpResponse:
    key = api_key_list(agent=request.agent).filter(pk=key_id).first()
    row_error = None
    try:
        key = api_key_revoke(agent=request.agent, key_id=key_id, by_user=request.user)
        messages.success(request, f"Revoked “{key.name}”. It stopped working immediately.")
    except ServiceError as exc:
        if request.htmx and key is not None:
            row_error = exc.message  # said in the row that was clicked, not on the next page
        else:
            messages.error(request, exc.message)
    if request.htmx and key is not None:
        key.refresh_from_db()
        return render(
            request,
            "workspaces/api_key_list.html#api-key-row",
            {"key": key, "is_owner": request.is_owner, "row_error": row_error},
        )
    return redirect("workspaces:api_key_list")


@require_POST
@console_view
def api_key_bulk_revoke(request: ConsoleRequest) -> HttpResponse:
    """Revoke the ticked keys: a page says how many and what stops working, then (confirm=1)
    each is revoked through `api_key_revoke`, which holds who may revoke what."""
    list_url = reverse("workspaces:api_key_list")
    ids = bulk_ticked(request, noun=KEYS, list_url=list_url)
    if isinstance(ids, HttpResponse):
        return ids
    if request.POST.get("confirm") != "1":
        keys = api_key_list(agent=request.agent).filter(pk__in=ids, revoked_at__isnull=True)
        rows = {key.pk: f"{key.name} ({key.prefix}…)" for key in keys}
        if not rows:
            messages.error(request, "None of those keys can be revoked: already revoked or gone.")
            return redirect(list_url)
        return bulk_confirm(
            request,
            section="api_keys",
            action_url=reverse("workspaces:api_key_bulk_revoke"),
            cancel_url=list_url,
            action="revoke",
            label="Revoke",
            noun=KEYS,
            consequence="Integrations using them stop working immediately. This cannot be undone.",
            rows=rows,
            danger=True,
        )
    outcome = bulk_apply(
        ids,
        lambda pk: api_key_revoke(agent=request.agent, key_id=pk, by_user=request.user),
    )
    messages.success(request, outcome.summary(verb="Revoked", noun=KEYS))
    return redirect(list_url)
