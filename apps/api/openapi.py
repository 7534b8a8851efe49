"""OpenAPI generation hooks: scopes, the error envelope and extensions on every operation."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema

from apps.api.scopes import OWNER_SCOPES
from apps.api.serializers import ErrorOut
from apps.api.throttling import ApiKeyRateThrottle

_ERROR_TEXT = {
    "400": "bad_request: invalid parameters or body",
    "401": "unauthorized: key missing, invalid or revoked",
    "403": "insufficient_scope: the key lacks the required permission",
    "404": "not_found: no such resource for this Agent",
    "409": "conflict: the operation conflicts with the resource's state",
    "413": "payload_too_large",
    "415": "unsupported_media_type",
    "429": "rate_limited (Retry-After: integer seconds)",
    "500": "internal_server_error",
    "503": "service_unavailable (Retry-After: integer seconds)",
}
_ALWAYS = ("400", "401", "403", "429", "500", "503")
_RETRY_AFTER = {"Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait"}}
# On every answer to an authenticated request (not on a 401), unless the rate limiter's store is
# unreachable: then the request is served without a limit and without these.
_RATE_LIMIT = {
    "RateLimit-Policy": {
        "schema": {"type": "string", "example": '"default";q=600;w=60'},
        "description": "The quota of the credential (IETF draft-ietf-httpapi-ratelimit-headers): "
        "`q` requests in any `w` seconds (a moving window).",
    },
    "RateLimit": {
        "schema": {"type": "string", "example": '"default";r=599;t=42'},
        "description": "`r`: requests left in the window after this one; `t`: whole seconds "
        "until one more request is available (on a 429, the same as `Retry-After`).",
    },
}


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "apps.api.authentication.ApiKeyAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A workspace API key: `Authorization: Bearer ack_...`; on "
            "`/v1/me/...` (and `/v1/connection`) a browser token: `Bearer abt_...`.",
        }


class ServiceAgentKeyScheme(OpenApiAuthenticationExtension):
    target_class = "apps.api.authentication.ServiceAgentKeyAuthentication"
    name = "serviceAgentKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "X-Service-Agent-Key",
            "description": "A workspace API key, the header the browser-token endpoint keeps "
            "(contract 4.5); `Authorization: Bearer` is accepted too.",
        }


class ScopedAutoSchema(AutoSchema):
    """Adds to each operation: its scope, its error responses and `x-extension` where set.

    Views declare `required_scopes` (action -> scope), `error_statuses` (action -> extra
    statuses such as 404 or 409) and `extension_actions` (actions beyond the contract).
    """

    def _is_list_view(self, serializer=None) -> bool:
        # Our lists answer the envelope of contract 2.1, declared explicitly with
        # `list_envelope(...)`; never wrap a `list` action's response in a bare array.
        return False

    def _action(self) -> str:
        return getattr(self.view, "action", None) or self.method.lower()

    def get_tags(self) -> list[str]:
        tags = getattr(self.view, "openapi_tags", None)
        return list(tags) if tags else super().get_tags()

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        action = self._action()
        scope = getattr(self.view, "required_scopes", {}).get(action)
        if scope:
            operation["x-required-scope"] = scope
            note = f"Requires the `{scope}` permission"
            if scope in OWNER_SCOPES:
                note += " on a key created by a workspace owner"
            operation["description"] = f"{operation.get('description', '')}\n\n{note}.".strip()
        if action in getattr(self.view, "extension_actions", ()):
            operation["x-extension"] = True
        error_ref = self.resolve_serializer(ErrorOut, "response").ref
        statuses = list(_ALWAYS) + [
            str(code) for code in getattr(self.view, "error_statuses", {}).get(action, ())
        ]
        if "agent_id" in path or "{agentId}" in path:
            statuses.append("404")
        for status in sorted(set(statuses)):
            if status in operation["responses"]:
                continue
            response = {
                "description": _ERROR_TEXT[status],
                "content": {"application/json": {"schema": error_ref}},
            }
            if status in ("429", "503"):
                response["headers"] = _RETRY_AFTER
            if status in ("401", "403"):
                response["headers"] = {"WWW-Authenticate": {"schema": {"type": "string"}}}
            operation["responses"][status] = response
        if any(
            issubclass(c, ApiKeyRateThrottle) for c in getattr(self.view, "throttle_classes", ())
        ):
            for status, response in operation["responses"].items():
                if status != "401":
                    response["headers"] = {**response.get("headers", {}), **_RATE_LIMIT}
        return operation


# The contract names path parameters `agentId` and `deliveryId`; Django's URL kwargs are
# snake_case. The URLs are the same, only the names in the document change.
CONTRACT_PATH_PARAMETERS = {
    "agent_id": "agentId",
    "delivery_id": "deliveryId",
    "revision_id": "revisionId",
}


def contract_parameter_names(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook: path templates and parameters as the contract names them."""
    renamed = {}
    for path, item in result.get("paths", {}).items():
        for old, new in CONTRACT_PATH_PARAMETERS.items():
            path = path.replace("{" + old + "}", "{" + new + "}")
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "path":
                    parameter["name"] = CONTRACT_PATH_PARAMETERS.get(
                        parameter["name"], parameter["name"]
                    )
        renamed[path] = item
    result["paths"] = renamed
    return result
