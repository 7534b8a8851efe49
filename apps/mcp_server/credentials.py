"""The Agents MCP server's tokens as /v1 credential kinds (registered in McpServerConfig.ready):
a resource token serves wherever an API key does, with its grant's permissions; an OAuth token
is refused with a message that says where it works (contract 5.1.2)."""

from django.http import HttpRequest

from apps.common.errors import Unauthorized
from apps.mcp_server.resource_tokens import resource_token_verify, service_audience
from apps.workspaces.credentials import KeyCredential


def resource_token_credential(raw: str, request: HttpRequest) -> KeyCredential:
    resource_token, grant_key, counted = resource_token_verify(
        raw_token=raw, audience=service_audience(request)
    )
    return KeyCredential.for_resource_token(resource_token, grant_key, counted)


def oauth_token_refuse(raw: str, request: HttpRequest) -> KeyCredential:
    raise Unauthorized(
        "This is an OAuth token of the Agents MCP server; it works on /mcp only. The REST "
        "API takes an API key, a browser token or the MCP server's resource token."
    )
