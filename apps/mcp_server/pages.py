"""Console pages of the MCP server: the OAuth consent page and the Connected applications list."""

import re
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from django.contrib import messages
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Lower
from django.http import HttpResponse
from django.shortcuts import redirect
from django.utils.functional import cached_property
from django.views.decorators.http import require_POST
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.http import OAuth2ResponseRedirect
from oauth2_provider.models import get_application_model
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import AuthorizationView
from oauthlib.oauth2.rfc6749 import errors as oauth_errors

from apps.api.scopes import OWNER_SCOPES
from apps.common.errors import ServiceError
from apps.common.keyset import Keyset, paginate
from apps.common.security import content_security_policy
from apps.common.sorting import ListSorts, SortColumn, sorted_list, time_or_never
from apps.mcp_server.authorization import oauth_parameter_problem
from apps.mcp_server.forms import ConsentForm
from apps.mcp_server.oauth import (
    AGENT_SCOPE_PREFIX,
    GRANTABLE_SCOPES,
    TOOL_SCOPES,
    agent_scope,
    mcp_resource,
    redirect_uri_problem,
    resource_problem,
    service_origin,
)
from apps.mcp_server.selectors import (
    CONNECTION_STATUSES,
    connected_app_get,
    connected_app_list,
)
from apps.mcp_server.services import (
    connected_app_grant,
    connected_app_grant_check,
    connected_app_revoke,
)
from apps.workspaces.console import (
    ConsoleRequest,
    bounded_count,
    console_view,
    keyset_page,
    render_page,
)
from apps.workspaces.models import Agent
from apps.workspaces.selectors import agent_list_for_user, owned_workspace_ids


class ConsentView(AuthorizationView):
    """The toolkit's authorization endpoint with our consent page: a signed-in member picks
    the Agent (of any of their workspaces) and the permissions; owner-only permissions need an
    owner of that Agent's workspace."""

    template_name = "mcp_server/consent.html"
    form_class = ConsentForm

    @cached_property
    def agents(self) -> list[Agent]:
        """The Agents the member may connect: the active ones of their workspaces."""
        return list(agent_list_for_user(user=self.request.user))

    def dispatch(self, request, *args, **kwargs):
        # A NUL or an absurd length in a parameter (or a tampered hidden field) would reach the
        # toolkit's queries and fail in the database.
        problem = oauth_parameter_problem(request)
        if problem:
            return HttpResponse(
                f"invalid_request: {problem}", status=400, content_type="text/plain"
            )
        if "approval_prompt" in request.GET:
            # The toolkit lets the client ask to skip this page (`approval_prompt=auto`) when
            # the member holds a token of that client: a code would then leave without the
            # member choosing anything. Every authorization is asked for here.
            request.GET = request.GET.copy()
            del request.GET["approval_prompt"]
        return super().dispatch(request, *args, **kwargs)

    def get(self, request, *args, **kwargs):
        # Refused before the page is shown: an `agent:` scope (the member picks the Agent here)
        # and any PKCE method but S256 (OAuth 2.1; a missing method means `plain`).
        requested = request.GET.get("scope", "").split()
        if any(scope.startswith(AGENT_SCOPE_PREFIX) for scope in requested):
            return self._refuse(
                request,
                oauth_errors.InvalidScopeError,
                "The Agent is chosen on the consent page; do not ask for an agent: scope.",
            )
        if request.GET.get("code_challenge_method") != "S256":
            return self._refuse(
                request,
                oauth_errors.InvalidRequestError,
                'PKCE is required with code_challenge_method "S256".',
            )
        # RFC 8707: a grant names this service's MCP server, or nothing; never another server.
        for resource in request.GET.getlist("resource"):
            problem = resource_problem(resource, origin=service_origin(request))
            if problem:
                return self._refuse(request, _InvalidTarget, problem)
        return super().get(request, *args, **kwargs)

    def _refuse(self, request, error_class, description: str) -> HttpResponse:
        """The toolkit's own checks first (client, redirect URI: errors there are shown, never
        redirected), then this refusal as an error redirect to the client."""
        try:
            _scopes, credentials = self.validate_authorization_request(request)
        except OAuthToolkitError as error:
            return self.error_response(error, application=None)
        application = (
            get_application_model().objects.filter(client_id=credentials["client_id"]).first()
        )
        refusal = OAuthToolkitError(
            error=error_class(description=description, state=credentials.get("state")),
            redirect_uri=credentials["redirect_uri"],
        )
        return self.error_response(refusal, application)

    def redirect(self, redirect_to, application):
        """Every redirect to the client, errors included, carries `iss` (RFC 9207; the toolkit
        adds it to successful ones only), and may use any redirect URI our registration rules
        accept (RFC 8252 private-use schemes too)."""
        parts = urlsplit(redirect_to)
        query = parse_qs(parts.query, keep_blank_values=True)
        if "error" in query and "iss" not in query:
            issuer = oauth2_settings.oauth2_authorization_server_issuer(self.request)
            extra = urlencode({"iss": issuer})
            redirect_to = urlunsplit(
                parts._replace(query=f"{parts.query}&{extra}" if parts.query else extra)
            )
        base = urlunsplit(parts._replace(query=""))
        allowed = [parts.scheme] if redirect_uri_problem(base) is None else []
        return OAuth2ResponseRedirect(redirect_to, allowed)

    def get_initial(self):
        initial = super().get_initial()
        requested = initial["scope"].split()
        # Pre-ticked: what the client asked for among what the tools need (all of those when it
        # named none). The member may tick more, or fewer.
        initial["granted_scopes"] = [scope for scope in TOOL_SCOPES if scope in requested] or (
            [] if requested else list(TOOL_SCOPES)
        )
        agents = self.agents
        current = self.request.session.get("console_agent_id")
        if agents:
            initial["agent_id"] = current if any(a.pk == current for a in agents) else agents[0].pk
        return initial

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        form = context.get("form")
        owned = owned_workspace_ids(user=self.request.user)
        if "application" not in context and form is not None:
            client_id = form.data.get("client_id") or form.initial.get("client_id")
            context["application"] = (
                get_application_model().objects.filter(client_id=client_id).first()
            )
        chosen = set(form["granted_scopes"].value() or []) if form is not None else set()
        resources = (form["resource"].value() or "").split() if form is not None else []
        context.update(
            {
                "agents": self.agents,
                "owned_workspaces": owned,
                "is_owner_anywhere": bool(owned),
                "scope_rows": [
                    {
                        "name": name,
                        "text": text,
                        "owners_only": name in OWNER_SCOPES,
                        "checked": name in chosen,
                    }
                    for name, text in GRANTABLE_SCOPES.items()
                ],
                "chosen_agent": form["agent_id"].value() if form is not None else None,
                "redirect_host": _origin(context.get("redirect_uri") or _form_value(form)),
                # What the tokens will reach: the resources the client named (checked to be
                # ours), or, when it named none, the only server here that takes them.
                "resources": resources or [mcp_resource(service_origin(self.request))],
            }
        )
        return context

    def form_valid(self, form):
        if not form.cleaned_data.get("allow"):
            return super().form_valid(form)
        application = (
            get_application_model().objects.filter(client_id=form.cleaned_data["client_id"]).first()
        )
        if application is None:
            form.add_error(None, "This application is no longer registered.")
            return self.form_invalid(form)
        for resource in (form.cleaned_data.get("resource") or "").split():
            # Checked when the page was asked for; a hidden field may have been changed since.
            problem = resource_problem(resource, origin=service_origin(self.request))
            if problem:
                form.add_error(None, problem)
                return self.form_invalid(form)
        scopes = list(form.cleaned_data["granted_scopes"])
        grant = {
            "user": self.request.user,
            "agent_id": form.cleaned_data["agent_id"],
            "scopes": scopes,
        }
        try:
            agent = connected_app_grant_check(**grant)
        except ServiceError as exc:
            form.add_error(None, exc.message)
            return self.form_invalid(form)
        form.cleaned_data["scope"] = " ".join([*scopes, agent_scope(agent.pk)])
        # The grant and the authorization code commit together or not at all: when the toolkit
        # refuses the request (a PKCE method, a tampered field) nothing is granted and an
        # earlier grant of this client keeps working. (Replacing that grant deletes its codes,
        # so the grant comes first and the new code after.)
        try:
            with transaction.atomic():
                connected_app_grant(application=application, **grant)
                response = super().form_valid(form)
                if not _issued_a_code(response):
                    raise _Refused(response)
        except _Refused as refused:
            return refused.response
        except ServiceError as exc:
            form.add_error(None, exc.message)
            return self.form_invalid(form)
        return response

    def render_to_response(self, context, **response_kwargs):
        response = super().render_to_response(context, **response_kwargs)
        # Chromium applies form-action to the redirect that follows the form's POST, so the
        # client's redirect URI (often http://localhost:port) must be allowed on this page.
        origin = context.get("redirect_host")
        response["Content-Security-Policy"] = content_security_policy(
            form_targets=[origin] if origin else []
        )
        return response


class _InvalidTarget(oauth_errors.OAuth2Error):
    """RFC 8707's `invalid_target`, which oauthlib has no class for."""

    error = "invalid_target"


class _Refused(Exception):
    def __init__(self, response: HttpResponse) -> None:
        self.response = response


def _issued_a_code(response: HttpResponse) -> bool:
    if response.status_code != 302:
        return False
    query = parse_qs(urlsplit(response["Location"]).query)
    return "code" in query and "error" not in query


def _form_value(form) -> str:
    if form is None:
        return ""
    return form.data.get("redirect_uri") or form.initial.get("redirect_uri") or ""


# An origin as it may appear in a CSP source list; anything else (a `;`, spaces, quotes from a
# tampered hidden field) is dropped rather than written into the header.
_CSP_ORIGIN = re.compile(
    r"^https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$"
)


def _origin(uri: str | None) -> str:
    parts = urlsplit(uri or "")
    origin = f"{parts.scheme}://{parts.netloc}"
    return origin if _CSP_ORIGIN.match(origin) else ""


CONNECTION_PAGE_SIZE = 25
# An Agent has a handful of connected applications: the other orders sort the few rows
# `connapp_agent_created` finds, so they need no index of their own.
CONNECTION_SORTS = ListSorts(
    Keyset("connected-apps", "created_at", descending=True),
    (
        SortColumn("created", "Connected", "created_at", "time"),
        SortColumn("name", "Application", Lower(F("application__name")), "text", "asc"),
        SortColumn(
            "last_used",
            "Last used",
            time_or_never("last_used_at"),
            "time",
        ),
    ),
)


@console_view
def connected_app_list_page(request: ConsoleRequest) -> HttpResponse:
    status = request.GET.get("status", "")
    if status not in CONNECTION_STATUSES:
        status = ""
    connections = connected_app_list(agent=request.agent, status=status)
    ordered, keyset, sort_columns = sorted_list(CONNECTION_SORTS, connections, request.GET)
    page, page_error = keyset_page(
        request,
        lambda cursor: paginate(ordered, keyset=keyset, page=cursor),
        limit=CONNECTION_PAGE_SIZE,
    )
    context = {
        "section": "connected_apps",
        "page": page,
        "error": page_error,
        "count": bounded_count(connections),
        "filtering": bool(status),
        "status": status,
        "statuses": (("active", "Connected"), ("revoked", "Disconnected")),
        "sort_columns": sort_columns,
        "is_first_page": not (request.GET.get("after") or request.GET.get("before")),
        "scope_descriptions": GRANTABLE_SCOPES,
    }
    return render_page(
        request, "mcp_server/connected_apps.html", context, partial="connected-app-list"
    )


@require_POST
@console_view
def connected_app_revoke_page(request: ConsoleRequest, connection_id: str) -> HttpResponse:
    connection = connected_app_get(agent=request.agent, connection_id=connection_id)
    if connection is None:
        messages.error(request, "No such connected application.")
        return redirect("mcp_server:connected_app_list")
    try:
        connected_app_revoke(connection=connection, by_user=request.user)
        messages.success(
            request,
            f"Disconnected “{connection.application.name or 'MCP client'}”. Its tokens stopped "
            "working immediately.",
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
    return redirect("mcp_server:connected_app_list")
