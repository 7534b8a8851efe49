"""Bearer authentication (contract 5.1 and 5.2) through the credential kinds the apps register
(apps.api.credentials): workspace API keys, browser tokens and the resource tokens of the
Agents MCP server. The MCP server's OAuth tokens themselves are refused (5.1.2): they are for
/mcp only.

`request.auth` is the `apps.api.credentials.Credential` of whichever kind authenticated.
"""

from rest_framework.authentication import BaseAuthentication

from apps.api.credentials import Credential, credential_verify
from apps.api.errors import REALM
from apps.common.errors import BadRequest, Unauthorized

SERVICE_AGENT_KEY_HEADER = "X-Service-Agent-Key"


def _authenticated(request, raw: str) -> tuple[None, Credential]:
    credential = credential_verify(raw, request=request._request)
    # Only the public part ever reaches the request log.
    request._request.api_key_prefix = credential.public_id
    # For wrappers outside DRF (the browser CORS headers) that see the Django request only.
    request._request.api_credential = credential
    return (None, credential)


class ApiKeyAuthentication(BaseAuthentication):
    """`Authorization: Bearer <API key or browser token>`."""

    def authenticate(self, request) -> tuple[None, Credential]:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            raise Unauthorized("Missing API key: send 'Authorization: Bearer <key>'.")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("The Authorization header must be 'Bearer <key>'.")
        return _authenticated(request, token.strip())

    def authenticate_header(self, request) -> str:
        # Without this DRF would turn every 401 into a 403.
        return f'Bearer realm="{REALM}"'


class ServiceAgentKeyAuthentication(BaseAuthentication):
    """`X-Service-Agent-Key: <API key>`, the header the contract keeps for the browser-token
    endpoint (4.5). Absent, the Bearer header is read next; both with different values is 400."""

    def authenticate(self, request) -> tuple[None, Credential] | None:
        raw = request.headers.get(SERVICE_AGENT_KEY_HEADER, "").strip()
        if not raw:
            return None
        bearer = request.META.get("HTTP_AUTHORIZATION", "")
        if bearer and bearer.partition(" ")[2].strip() != raw:
            raise BadRequest(
                f"Send the API key in one header: {SERVICE_AGENT_KEY_HEADER} or Authorization, "
                "not two different keys."
            )
        return _authenticated(request, raw)

    def authenticate_header(self, request) -> str:
        return f'Bearer realm="{REALM}"'
