from django.apps import AppConfig


class McpServerConfig(AppConfig):
    name = "apps.mcp_server"
    label = "mcp_server"
    verbose_name = "Agents MCP server"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The platform (apps.api) knows no credential kind: this app's tokens register here.
        from apps.api.credentials import credential_kind_register
        from apps.mcp_server.credentials import oauth_token_refuse, resource_token_credential
        from apps.mcp_server.oauth import is_oauth_token
        from apps.mcp_server.resource_tokens import is_resource_token
        from apps.mcp_server.services import connected_apps_end_for_member
        from apps.workspaces.events import on_member_removed

        # Who leaves a workspace stops acting there through the applications they connected.
        on_member_removed(connected_apps_end_for_member)

        credential_kind_register(
            "resource_token", recognizes=is_resource_token, verify=resource_token_credential
        )
        credential_kind_register(
            "oauth_token", recognizes=is_oauth_token, verify=oauth_token_refuse
        )
