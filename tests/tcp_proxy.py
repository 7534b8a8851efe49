"""A TCP proxy that can be cut: a service "stopped" as its clients see it (connections reset,
new ones refused) without stopping the machine's shared service. Used by the readiness test
(PostgreSQL stopped) and benchmarks/fault_drills.py."""

from __future__ import annotations

import contextlib
import socket
import threading

from tests.redis_server import free_port


class CuttableProxy:
    """A TCP proxy; `cut()` closes every connection and refuses new ones until `restore()`."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.open = threading.Event()
        self.open.set()
        self.sockets: list[socket.socket] = []
        self.listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            if not self.open.is_set():
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            self.sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            # Shut down before closing: a close alone leaves the connection open while the other
            # direction's thread still waits in recv() on it, and the server never sees the end.
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    end.close()

    def cut(self) -> None:
        self.open.clear()
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self.sockets.clear()

    def restore(self) -> None:
        self.open.set()

    def close(self) -> None:
        self.cut()
        self.listener.close()
