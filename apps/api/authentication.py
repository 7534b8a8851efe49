"""Bearer authentication with workspace API keys (contract 5.1 and 5.2)."""

from rest_framework.authentication import BaseAuthentication

from apps.api.errors import REALM
from apps.common.errors import Unauthorized
from apps.workspaces.models import ApiKey
from apps.workspaces.services import api_key_authenticate


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request) -> tuple[None, ApiKey]:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            raise Unauthorized("Missing API key: send 'Authorization: Bearer <key>'.")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("The Authorization header must be 'Bearer <key>'.")
        key = api_key_authenticate(raw_key=token.strip())
        # Only the public prefix ever reaches the request log.
        request._request.api_key_prefix = key.prefix
        return (None, key)

    def authenticate_header(self, request) -> str:
        # Without this DRF would turn every 401 into a 403.
        return f'Bearer realm="{REALM}"'
