"""The bytes of OTLP bodies one process decodes and records at once, and the 503 that refuses
a body past them."""

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from apps.common.errors import ServiceUnavailable


class InFlight:
    """The bytes of OTLP bodies this process is decoding and recording at once. A body that
    would take them over the limit while another is in flight is refused at once with 503 and
    `Retry-After: 1` (exporters retry it, the OTLP/HTTP answer to an overloaded server) instead
    of taking a web thread and a share of the CPU from every other request: a few hostile
    requests of 10,000 spans could otherwise hold every thread. One body alone is always
    admitted, whatever its size; small batches go side by side."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.bytes = 0

    @contextmanager
    def admit(self, size: int, *, limit: int) -> Iterator[None]:
        with self._lock:
            if self.bytes and self.bytes + size > limit:
                raise ServiceUnavailable(
                    f"This server is recording {self.bytes} bytes of OTLP requests; with "
                    f"{size} more it would pass its limit of {limit} bytes in flight per "
                    "process (OTLP_BYTES_IN_FLIGHT). Retry after 1 second.",
                    retry_after=1,
                )
            self.bytes += size
        try:
            yield
        finally:
            with self._lock:
                self.bytes -= size


IN_FLIGHT = InFlight()
