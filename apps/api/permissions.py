"""Scope enforcement: a view declares which permission each action needs."""

from rest_framework.permissions import BasePermission

from apps.common.errors import InsufficientScope
from apps.workspaces.scopes import OWNER_SCOPES
from apps.workspaces.selectors import is_workspace_owner


def required_scope(view, request) -> str | None:
    scopes: dict[str, str | None] = getattr(view, "required_scopes", {})
    action = getattr(view, "action", None) or request.method.lower()
    return scopes.get(action)


class HasScope(BasePermission):
    def has_permission(self, request, view) -> bool:
        key = request.auth
        scope = required_scope(view, request)
        if scope is None:
            return True
        if scope not in key.scopes:
            raise InsufficientScope(scope)
        if scope in OWNER_SCOPES and not is_workspace_owner(
            user_id=key.created_by_id, workspace_id=key.agent.workspace_id
        ):
            raise InsufficientScope(
                scope,
                f"The '{scope}' permission needs a key created by a workspace owner; "
                "this key's creator is not an owner.",
            )
        return True
