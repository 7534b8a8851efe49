"""The 10 MB upload limit is enforced while the body streams in, not after reading it."""

from __future__ import annotations

import tracemalloc

import orjson
import pytest
from django.test import Client

from apps.knowledge.models import KnowledgeDocument

MB = 1024 * 1024
BOUNDARY = "----knowledge-test-boundary"


class CountingBody:
    """A request body produced on demand: counts the bytes the server actually reads."""

    def __init__(self, head: bytes, filler_size: int, tail: bytes) -> None:
        self.parts = [head, None, tail]
        self.head, self.filler_size, self.tail = head, filler_size, tail
        self.total = len(head) + filler_size + len(tail)
        self.position = 0
        self.bytes_read = 0

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = self.total - self.position
        size = min(size, self.total - self.position)
        out = bytearray()
        while len(out) < size:
            pos = self.position + len(out)
            want = size - len(out)
            if pos < len(self.head):
                out += self.head[pos : pos + want]
            elif pos < len(self.head) + self.filler_size:
                offset = pos - len(self.head)
                out += b"a" * min(want, self.filler_size - offset)
            else:
                offset = pos - len(self.head) - self.filler_size
                out += self.tail[offset : offset + want]
        self.position += len(out)
        self.bytes_read += len(out)
        return bytes(out)

    def readline(self, size: int = -1) -> bytes:
        return self.read(min(size if size and size > 0 else 65536, 65536))


def _multipart_body(file_size: int) -> CountingBody:
    head = (
        f"--{BOUNDARY}\r\n"
        'Content-Disposition: form-data; name="file"; filename="big.txt"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode()
    tail = f"\r\n--{BOUNDARY}--\r\n".encode()
    return CountingBody(head, file_size, tail)


def _send(api, body: CountingBody, *, declared_length: int):
    client = Client()
    environ = client._base_environ(
        PATH_INFO="/v1/knowledge/files",
        REQUEST_METHOD="POST",
        CONTENT_TYPE=f"multipart/form-data; boundary={BOUNDARY}",
        CONTENT_LENGTH=str(declared_length),
        HTTP_AUTHORIZATION=f"Bearer {api.raw_key}",
    )
    environ["wsgi.input"] = body
    return client.handler(environ)


@pytest.mark.smoke
def test_50_mb_body_is_refused_before_it_is_read(api):
    _send(api, _multipart_body(10), declared_length=0)  # warm up: imports are not the body
    body = _multipart_body(50 * MB)
    tracemalloc.start()
    response = _send(api, body, declared_length=body.total)
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert response.status_code == 413
    assert orjson.loads(response.content)["name"] == "payload_too_large"
    assert body.bytes_read < 1 * MB
    assert peak < 5 * MB
    assert not KnowledgeDocument.objects.exists()


def test_body_that_understates_its_size_stops_at_the_limit(api):
    # Declared length within the allowance, so the parser starts; the file part is over 10 MB.
    _send(api, _multipart_body(10), declared_length=0)  # warm up: imports are not the body
    body = _multipart_body(10 * MB + 32 * 1024)
    tracemalloc.start()
    response = _send(api, body, declared_length=body.total)
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert response.status_code == 413
    assert body.bytes_read <= 10 * MB + 256 * 1024
    assert peak < 5 * MB  # streamed to a temporary file, never held whole
    assert not KnowledgeDocument.objects.exists()


def test_file_of_exactly_10_mb_is_accepted(api):
    body = _multipart_body(10 * MB)
    response = _send(api, body, declared_length=body.total)
    assert response.status_code == 201, response.content
    assert orjson.loads(response.content)["file_size_bytes"] == 10 * MB
