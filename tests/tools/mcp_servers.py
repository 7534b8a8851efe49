"""Real MCP servers for tests, built with the official SDK (`MCPServer`) and served by uvicorn
on 127.0.0.1 in a thread: one speaking Streamable HTTP, one only the older HTTP+SSE transport;
plus a server that accepts connections and never answers, for timeouts."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import uvicorn
from mcp.server.mcpserver import MCPServer


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _HeaderRecorder:
    """ASGI middleware remembering the headers of every HTTP request the server received."""

    def __init__(self, app, seen: list[dict[str, str]]) -> None:
        self.app = app
        self.seen = seen

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            self.seen.append(
                {name.decode().lower(): value.decode() for name, value in scope["headers"]}
            )
        await self.app(scope, receive, send)


class RunningServer:
    def __init__(self, app, *, path: str) -> None:
        self.requests: list[dict[str, str]] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}{path}"
        config = uvicorn.Config(
            _HeaderRecorder(app, self.requests),
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="on",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def start(self) -> RunningServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the MCP test server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


def weather_server() -> MCPServer:
    """An MCP server with two tools; tests add, remove and change tools between discoveries."""
    server = MCPServer("weather")

    @server.tool()
    def forecast(city: str, days: int = 3) -> str:
        """Forecast for a city."""
        return f"sunny in {city} for {days} days"

    @server.tool()
    def alerts(region: str) -> str:
        """Weather alerts of a region."""
        return f"no alerts in {region}"

    return server


def add_tool(server: MCPServer, name: str, fn: Callable, description: str | None = None) -> None:
    server.add_tool(fn, name=name, description=description)


def start_streamable(server: MCPServer) -> RunningServer:
    return RunningServer(server.streamable_http_app(), path="/mcp").start()


def start_sse_only(server: MCPServer) -> RunningServer:
    return RunningServer(server.sse_app(), path="/sse").start()


class HangingServer:
    """Accepts TCP connections and reads, but never answers a byte."""

    def __init__(self) -> None:
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.connections: list[socket.socket] = []
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _addr = self._listener.accept()
            except OSError:
                return
            self.connections.append(conn)

    def start(self) -> HangingServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closed = True
        self._listener.close()
        for conn in self.connections:
            conn.close()
