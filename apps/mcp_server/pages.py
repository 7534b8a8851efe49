"""Console pages of the MCP server: the OAuth consent page and the Connected applications list."""

import re
from urllib.parse import urlsplit

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.functional import cached_property
from django.views.decorators.http import require_POST
from oauth2_provider.models import get_application_model
from oauth2_provider.views import AuthorizationView

from apps.api.scopes import OWNER_SCOPES
from apps.common.errors import ServiceError
from apps.common.security import content_security_policy
from apps.mcp_server.forms import ConsentForm
from apps.mcp_server.oauth import DEFAULT_SCOPES, GRANTABLE_SCOPES, agent_scope
from apps.mcp_server.selectors import (
    connected_app_get,
    connected_app_list,
)
from apps.mcp_server.services import connected_app_grant, connected_app_revoke
from apps.workspaces.console import ConsoleRequest, console_view
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

    def get_initial(self):
        initial = super().get_initial()
        requested = [scope for scope in initial["scope"].split() if scope in GRANTABLE_SCOPES]
        initial["granted_scopes"] = requested or DEFAULT_SCOPES
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
        scopes = list(form.cleaned_data["granted_scopes"])
        try:
            connection = connected_app_grant(
                user=self.request.user,
                application=application,
                agent_id=form.cleaned_data["agent_id"],
                scopes=scopes,
            )
        except ServiceError as exc:
            form.add_error(None, exc.message)
            return self.form_invalid(form)
        form.cleaned_data["scope"] = " ".join([*scopes, agent_scope(connection.agent_id)])
        return super().form_valid(form)

    def render_to_response(self, context, **response_kwargs):
        response = super().render_to_response(context, **response_kwargs)
        # Chromium applies form-action to the redirect that follows the form's POST, so the
        # client's redirect URI (often http://localhost:port) must be allowed on this page.
        origin = context.get("redirect_host")
        response["Content-Security-Policy"] = content_security_policy(
            form_targets=[origin] if origin else []
        )
        return response


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


@console_view
def connected_app_list_page(request: ConsoleRequest) -> HttpResponse:
    return render(
        request,
        "mcp_server/connected_apps.html",
        {
            "section": "connected_apps",
            "connections": connected_app_list(agent=request.agent),
            "scope_descriptions": GRANTABLE_SCOPES,
        },
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
