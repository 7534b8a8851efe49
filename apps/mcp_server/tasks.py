"""Celery tasks of the MCP server: thin, each calls one function."""

from celery import shared_task
from oauth2_provider.models import clear_expired


@shared_task(name="mcp_server.clear_expired_tokens")
def clear_expired_tokens() -> str:
    # The toolkit's own sweep: expired access and refresh tokens, grants and ID tokens.
    clear_expired()
    return "cleared"
