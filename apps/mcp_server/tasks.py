"""Celery tasks of the MCP server: thin, each calls one function."""

from celery import shared_task
from oauth2_provider.models import clear_expired

from apps.mcp_server.services import spent_codes_sweep


@shared_task(name="mcp_server.clear_expired_tokens")
def clear_expired_tokens() -> str:
    # The toolkit's own sweep: expired access and refresh tokens, grants and ID tokens; then
    # the exchanged codes kept for replay detection, once their tokens are gone too.
    clear_expired()
    spent_codes_sweep()
    return "cleared"
