"""An embedding application's page on an origin of its own, for the browser-token tests: each
call of `start()` serves the same page on a new local port and returns its origin."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.http_thread import serve_in_thread


def page_origins(page: bytes) -> Iterator[Callable[[], str]]:
    """A fixture's body: yields `start`, and stops every server it started afterwards."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args) -> None:
            pass

    servers: list[ThreadingHTTPServer] = []

    def start() -> str:
        server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
        serve_in_thread(server)
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
