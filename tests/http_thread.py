"""A test's local HTTP server (http.server) answering from a thread of the test process."""

from __future__ import annotations

import threading
from socketserver import BaseServer


def serve_in_thread(server: BaseServer) -> threading.Thread:
    """Start `server`'s loop in a daemon thread and return the thread. The loop polls for
    `shutdown()` every 50 ms: at the default 0.5 s, each test's teardown waited that long."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    return thread
