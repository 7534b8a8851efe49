"""Routes of the MCP server: `/mcp`, its protected-resource metadata, the OAuth authorization
server (django-oauth-toolkit's views, our consent page) and the Connected applications pages.

The toolkit reverses its own URL names (`oauth2_provider:token`, ...) when it builds the RFC 8414
metadata, so its routes keep that namespace (`oauth_urlpatterns`); the rest are ours.
"""

from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider import views as oauth_views

from apps.mcp_server import pages
from apps.mcp_server.authorization import (
    CheckedRevokeTokenView,
    ClientManagementView,
    ClientRegistrationView,
    RateLimitedTokenView,
)
from apps.mcp_server.oauth import TOOL_SCOPES

app_name = "mcp_server"


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    """`/mcp` (apps.mcp_server.endpoint), imported by its first request rather than with the
    URLs: the MCP SDK's models cost about 0.8 s of CPU to import, which every process that
    loads the URLs paid (test processes, scripts), and every web worker's first request. The
    web process imports it in the background at start (config/wsgi.py)."""
    from apps.mcp_server.endpoint import mcp_endpoint as serve

    return serve(request)


class McpResourceMetadataView(oauth_views.OAuthProtectedResourceMetadataView):
    """RFC 9728 metadata of `/mcp` (the path-component form); `resource` and the
    authorization server come from the request, as the toolkit derives them. Its scopes are
    what the tools need: a client that follows the MCP specification asks for these."""

    def get_scopes_supported(self):
        return list(TOOL_SCOPES)


urlpatterns = [
    path("mcp", mcp_endpoint, name="endpoint"),
    path(
        ".well-known/oauth-protected-resource/mcp",
        McpResourceMetadataView.as_view(),
        name="protected_resource_metadata",
    ),
    path("connected-apps/", pages.connected_app_list_page, name="connected_app_list"),
    path(
        "connected-apps/<str:connection_id>/revoke/",
        pages.connected_app_revoke_page,
        name="connected_app_revoke",
    ),
]

oauth_urlpatterns = [
    path(
        ".well-known/oauth-authorization-server",
        oauth_views.OAuthServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    path("oauth/authorize/", pages.ConsentView.as_view(), name="authorize"),
    path("oauth/token/", RateLimitedTokenView.as_view(), name="token"),
    path("oauth/revoke_token/", CheckedRevokeTokenView.as_view(), name="revoke-token"),
    path("oauth/register/", ClientRegistrationView.as_view(), name="dcr-register"),
    path(
        "oauth/register/<str:client_id>/",
        ClientManagementView.as_view(),
        name="dcr-register-management",
    ),
]
