"""Listing the tools of a third-party MCP server, through our network guard.

The protocol is the official `mcp` SDK's: its `Client` negotiates the version, its
`streamable_http_client` / `sse_client` transports speak HTTP, and `list_tools` pages through
the listing. What this module adds is the network policy, by handing those transports an
httpx2 client whose transport is `GuardedTransport`:

- every request (the SDK's POSTs, its GET streams, each redirect hop it follows) is checked by
  `apps.common.netguard.check_url` and then sent to the address that check resolved, never to
  the host name again, so a DNS answer that changes between check and connection (rebinding)
  cannot reach a private address; TLS still verifies the certificate against the host name;
- a redirect whose target the guard refuses fails the discovery at once, before anything
  connects there (the SDK itself only follows redirects within the endpoint's origin);
- all bytes read from the server share one budget, compressed bodies are refused (we ask for
  `identity`, so a decompression bomb cannot expand under the budget), and connect, read and
  total timeouts bound the whole exchange.

Everything here is async and touches no database; `list_remote_tools` is the one sync entry.
One module per subject: `guard` (the guarded transport and its byte budget), `listing` (the
exchange, its checks and its errors), `results` (limits, listing, `DiscoveryError`). Callers
import from `apps.tools.mcp_client`; the names below are the package's public face.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from apps.tools.mcp_client.results import DiscoveryError, Limits, Listing, RemoteTool

if TYPE_CHECKING:
    from apps.tools.mcp_client.guard import GuardedTransport
    from apps.tools.mcp_client.listing import list_remote_tools

# The names that need the MCP SDK import it when first asked for: the SDK's models cost about
# 0.8 s of CPU to import, which every Celery worker paid at start (its tasks import the
# discovery) though few discover tools.
_NEEDS_THE_SDK = {"GuardedTransport": "guard", "list_remote_tools": "listing"}


def __getattr__(name: str) -> Any:
    if name in _NEEDS_THE_SDK:
        return getattr(import_module(f"{__name__}.{_NEEDS_THE_SDK[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DiscoveryError",
    "GuardedTransport",
    "Limits",
    "Listing",
    "RemoteTool",
    "list_remote_tools",
]
