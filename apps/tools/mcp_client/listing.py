"""Listing a server's tools: Streamable HTTP first, the older HTTP+SSE when the server does not
speak it, every page checked (names, schema sizes, duplicates, counts), and whatever ended the
exchange turned into one clear `DiscoveryError`."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import httpx2
from mcp import Client, MCPError

from apps.common.netguard import BlockedURL
from apps.tools.mcp_client.guard import _Budget, _transport
from apps.tools.mcp_client.results import (
    TRANSPORT_SSE,
    TRANSPORT_STREAMABLE_HTTP,
    DiscoveryError,
    Limits,
    Listing,
    RemoteTool,
)

MAX_TOOL_NAME_LENGTH = 128
MAX_DESCRIPTION_LENGTH = 4000
MAX_SCHEMA_BYTES = 64 * 1024


def _checked_tool(tool: Any) -> RemoteTool:
    name = tool.name
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_TOOL_NAME_LENGTH:
        raise DiscoveryError(
            f"The server listed a tool whose name is empty or longer than "
            f"{MAX_TOOL_NAME_LENGTH} characters."
        )
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    if len(json.dumps(schema)) > MAX_SCHEMA_BYTES:
        raise DiscoveryError(
            f"The input schema of tool {name!r} is larger than {MAX_SCHEMA_BYTES // 1024} KB."
        )
    description = (tool.description or "")[:MAX_DESCRIPTION_LENGTH]
    return RemoteTool(name=name, description=description, input_schema=schema)


async def _list_with(transport_cm: AbstractAsyncContextManager[Any], limits: Limits) -> list:
    tools: dict[str, RemoteTool] = {}
    async with Client(transport_cm, read_timeout_seconds=limits.read_timeout, cache=None) as client:
        cursor: str | None = None
        for _page in range(limits.max_pages):
            result = await client.list_tools(cursor=cursor)
            for tool in result.tools:
                checked = _checked_tool(tool)
                if checked.name in tools:
                    raise DiscoveryError(f"The server listed the tool {checked.name!r} twice.")
                tools[checked.name] = checked
                if len(tools) > limits.max_tools:
                    raise DiscoveryError(
                        f"The server lists more than {limits.max_tools} tools; discovery stopped."
                    )
            cursor = result.next_cursor
            if not cursor:
                return list(tools.values())
    raise DiscoveryError(f"The tool list did not end after {limits.max_pages} pages.")


def _leaf_errors(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        leaves: list[BaseException] = []
        for inner in exc.exceptions:
            leaves.extend(_leaf_errors(inner))
        return leaves
    return [exc]


def _as_discovery_error(exc: BaseException, *, limits: Limits) -> DiscoveryError:
    """The clearest message among the errors an exchange ended with."""
    leaves = _leaf_errors(exc)
    for kind in (BlockedURL, DiscoveryError, TimeoutError, httpx2.TimeoutException):
        for leaf in leaves:
            if isinstance(leaf, kind):
                return _message_for(leaf, limits=limits)
    return _message_for(leaves[0], limits=limits)


def _message_for(exc: BaseException, *, limits: Limits) -> DiscoveryError:
    if isinstance(exc, DiscoveryError):
        return exc
    if isinstance(exc, BlockedURL):
        return DiscoveryError(f"Blocked by the network guard: {exc}")
    if isinstance(exc, httpx2.ConnectTimeout):
        return DiscoveryError(f"Could not connect within {limits.connect_timeout:g} s.")
    if isinstance(exc, TimeoutError | httpx2.TimeoutException):
        return DiscoveryError(
            f"The server did not answer in time (read timeout {limits.read_timeout:g} s, "
            f"total {limits.total_timeout:g} s)."
        )
    if isinstance(exc, httpx2.ConnectError):
        return DiscoveryError("Could not connect to the server.")
    if isinstance(exc, httpx2.HTTPStatusError):
        error = DiscoveryError(f"The server answered HTTP {exc.response.status_code}.")
        error.try_sse = True
        return error
    if isinstance(exc, MCPError):
        error = DiscoveryError(f"The server refused the MCP request: {exc.error.message}")
        error.try_sse = True
        return error
    if isinstance(exc, httpx2.HTTPError):
        return DiscoveryError("The connection to the server failed.")
    return DiscoveryError("The server's answer is not a valid MCP tool listing.")


async def _discover(
    url: str, *, headers: Mapping[str, str], limits: Limits, allow_loopback: bool | None
) -> Listing:
    budget = _Budget(limits.max_bytes)
    first_error: DiscoveryError | None = None
    with anyio.fail_after(limits.total_timeout):
        for kind in (TRANSPORT_STREAMABLE_HTTP, TRANSPORT_SSE):
            transport_cm = _transport(
                kind,
                url,
                headers=headers,
                limits=limits,
                budget=budget,
                allow_loopback=allow_loopback,
            )
            try:
                tools = await _list_with(transport_cm, limits)
            except Exception as exc:
                error = _as_discovery_error(exc, limits=limits)
                if first_error is None:
                    first_error = error
                if kind == TRANSPORT_STREAMABLE_HTTP and error.try_sse:
                    continue  # the server may only speak the older HTTP+SSE transport
                raise first_error from None
            return Listing(transport=kind, tools=tools)
    assert first_error is not None
    raise first_error


def list_remote_tools(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    limits: Limits | None = None,
    allow_loopback: bool | None = None,
) -> Listing:
    """Connect to an MCP server and list all its tools; raises DiscoveryError.

    The event loop runs in a thread of its own, so this works from any caller: a Celery
    worker, or a thread that already runs a loop (an async view, Playwright's sync API).
    """
    limits = limits or Limits()
    run = functools.partial(
        anyio.run,
        functools.partial(
            _discover, url, headers=headers or {}, limits=limits, allow_loopback=allow_loopback
        ),
    )
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-discovery") as executor:
        try:
            return executor.submit(run).result()
        except DiscoveryError:
            raise
        except TimeoutError:
            raise _message_for(TimeoutError(), limits=limits) from None
        except Exception as exc:
            raise _as_discovery_error(exc, limits=limits) from None
