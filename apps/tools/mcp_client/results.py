"""What a discovery is given and gives back: its limits, the listing with its transport and
tools, and `DiscoveryError`, whose text is a short message for the owner."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TRANSPORT_STREAMABLE_HTTP = "streamable_http"
TRANSPORT_SSE = "sse"


class DiscoveryError(Exception):
    """Discovery did not succeed; str() is a short message for the owner (no secrets)."""

    # Set when the server did not speak Streamable HTTP at all, so the SSE transport is worth
    # a try; a timeout, a refused address or a bad listing is final.
    try_sse: bool = False


@dataclass(frozen=True)
class Limits:
    connect_timeout: float = 5
    read_timeout: float = 15
    total_timeout: float = 45
    max_bytes: int = 4 * 1024 * 1024
    max_tools: int = 500
    max_pages: int = 50


@dataclass(frozen=True)
class RemoteTool:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class Listing:
    transport: str
    tools: list[RemoteTool]
