from django.apps import AppConfig


class McpServerConfig(AppConfig):
    name = "apps.mcp_server"
    label = "mcp_server"
    verbose_name = "Agents MCP server"
    default_auto_field = "django.db.models.BigAutoField"
