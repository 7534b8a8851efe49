"""Scope enforcement: a view declares which permission each action needs, and which kinds of
credential it serves (`credential_kinds`, API keys only unless it says otherwise)."""

from rest_framework.permissions import BasePermission

from apps.api.credentials import Credential
from apps.api.scopes import OWNER_SCOPES
from apps.common.errors import InsufficientScope

WRONG_KIND_MESSAGES = {
    "browser_token": "A browser token can only read its end user's own conversations "
    "(GET /v1/me/conversations and /v1/me/conversations/{id}/messages) and give feedback "
    "on their messages (PUT /v1/me/messages/{id}/feedback); "
    "this operation needs an API key with the '{scope}' permission.",
    "api_key": "This operation serves browser tokens only, which name one end user; "
    "with an API key read /v1/conversations?user_id=... instead ('{scope}').",
}


def required_scope(view, request) -> str | None:
    scopes: dict[str, str | None] = getattr(view, "required_scopes", {})
    action = getattr(view, "action", None) or request.method.lower()
    return scopes.get(action)


class HasScope(BasePermission):
    def has_permission(self, request, view) -> bool:
        credential: Credential = request.auth
        if getattr(view, "action", "") in (None, "metadata"):
            # A method the path does not serve (DRF calls OPTIONS "metadata"): its handler
            # answers 400 with Allow, whatever the credential.
            return True
        scope = required_scope(view, request)
        if credential.serves_as not in getattr(view, "credential_kinds", ("api_key",)):
            named = scope or "conversations:read"
            raise InsufficientScope(
                named, WRONG_KIND_MESSAGES[credential.kind].replace("{scope}", named)
            )
        if scope is None:
            return True
        if scope not in credential.scopes:
            raise InsufficientScope(scope)
        if scope in OWNER_SCOPES and not credential.is_owner():
            raise InsufficientScope(
                scope,
                f"The '{scope}' permission needs a key created by a workspace owner; "
                "this key's creator is not an owner.",
            )
        return True
