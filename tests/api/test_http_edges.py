"""HTTP edges (issue 24, item 6), against gunicorn as production runs it where the server's
behaviour is the point: a refused oversized body leaves the connection usable, a chunked body
is read as if it had come with its length (issue 34, item 6), within the same limits; and a Host the service does not answer to is the
API's envelope with one log line, not an HTML page and a traceback per request."""

from __future__ import annotations

import logging
import re
import socket

import orjson
import pytest
from django.test import Client

from apps.activity.models import Run
from apps.api.middleware import chunked_body_limit
from apps.knowledge.models import KnowledgeDocument
from tests.factories import api_key_factory
from tests.mcp_server.conftest import client_metadata
from tests.web_server import GunicornServer

NINE_MIB = 9 * 1024 * 1024

# One test process runs the whole module, so the module's gunicorn starts once per run, not once
# in each process that draws one of its tests (`make test-fast`'s --dist loadgroup).
pytestmark = pytest.mark.xdist_group("http-edges")


@pytest.fixture(scope="module")
def gunicorn(django_db_setup, tmp_path_factory):
    """One gunicorn for the module (each start is about 3 s of CPU): it keeps no state of a
    test's but its media folder, which every test shares with it (`web`)."""
    server = GunicornServer(MEDIA_ROOT=str(tmp_path_factory.mktemp("gunicorn-media"))).start()
    yield server
    server.stop()


@pytest.fixture
def web(gunicorn, transactional_db, settings):
    settings.MEDIA_ROOT = gunicorn.env["MEDIA_ROOT"]
    return gunicorn


@pytest.fixture
def live_key(transactional_db, agent, owner) -> str:
    _key, raw = api_key_factory(
        agent=agent, scopes=["activity:write", "webhooks:write"], created_by=owner
    )
    return raw


class Connection:
    """One keep-alive HTTP/1.1 connection, written and read by hand."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.port = port

    def send(self, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> None:
        lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{self.port}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    def response(self) -> tuple[int, dict[str, str], bytes] | None:
        """(status, headers, body), or None when the server closed the connection."""
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers = {
            name.lower(): value.strip()
            for name, value in (line.split(":", 1) for line in header_lines)
        }
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            body += self.sock.recv(65536)
        return int(status_line.split()[1]), headers, body[:length]

    def close(self) -> None:
        self.sock.close()


def test_a_413_leaves_the_connection_usable_for_the_next_request(web, live_key):
    """Before: `Connection: keep-alive`, then the server dropped the connection, so the
    client's next request on it failed."""
    auth = {"Authorization": f"Bearer {live_key}"}
    big = b'{"records":["' + b"a" * NINE_MIB + b'"]}'
    connection = Connection(web.port)
    try:
        for _attempt in range(3):
            connection.send(
                "POST",
                "/v1/ingest",
                {**auth, "Content-Type": "application/json", "Content-Length": str(len(big))},
                big,
            )
            answer = connection.response()
            assert answer is not None, "the server closed the connection"
            assert answer[0] == 413
            assert orjson.loads(answer[2])["name"] == "payload_too_large"
            connection.send("GET", "/v1/connection", auth)
            following = connection.response()
            assert following is not None, "the request after a 413 found the connection closed"
            assert following[0] == 200
    finally:
        connection.close()


def _chunked(body: bytes, *, size: int | None = None, extension: bytes = b"") -> bytes:
    """`body` in chunks of `size` bytes (one chunk by default), each size line carrying
    `extension` (RFC 9112 7.1.1 chunk extensions, which a server ignores)."""
    size = size or max(len(body), 1)
    framed = b"".join(
        f"{len(part):x}".encode() + extension + b"\r\n" + part + b"\r\n"
        for part in (body[at : at + size] for at in range(0, len(body), size))
    )
    return framed + b"0\r\n\r\n"


def _send_chunked(port: int, path: str, headers: dict[str, str], framed: bytes):
    connection = Connection(port)
    try:
        connection.send("POST", path, {**headers, "Transfer-Encoding": "chunked"}, framed)
        answer = connection.response()
        assert answer is not None, "the server closed the connection"
        # The connection stays usable: the body was read to its end, no more, no less.
        connection.send(
            "GET", "/v1/connection", {"Authorization": headers.get("Authorization", "")}
        )
        following = connection.response()
    finally:
        connection.close()
    assert following is not None and following[0] in (200, 401), following
    return answer


_RUN = [
    {"type": "conversation", "id": "conv_chunked", "status": "streaming"},
    {"type": "run", "id": "run_chunked", "conversation_id": "conv_chunked", "request_id": "r1",
     "sdk_version": "5.0.0", "status": "streaming", "created_at": "2025-01-31T12:00:01Z"},
]  # fmt: skip


@pytest.mark.parametrize(
    ("size", "extension"),
    [(None, b""), (7, b""), (5, b";name=value")],
    ids=["one chunk", "many chunks", "chunk extensions"],
)
def test_a_chunked_json_body_is_read_as_if_it_had_a_length(web, live_key, agent, size, extension):
    """Before: refused with 400 (and before that, read as empty)."""
    status, _headers, body = _send_chunked(
        web.port,
        "/v1/ingest",
        {"Authorization": f"Bearer {live_key}", "Content-Type": "application/json"},
        _chunked(orjson.dumps(_RUN), size=size, extension=extension),
    )
    assert status == 200, body
    assert Run.objects.filter(agent=agent, id="run_chunked").exists()


def test_a_chunked_json_body_keeps_the_endpoints_size_limit(web, agent, owner, settings):
    """The JSON endpoints' 1 MiB limit holds for a chunked body as for a sized one."""
    _key, raw = api_key_factory(
        agent=agent, scopes=["api_keys:create", "auth_tokens:create"], created_by=owner
    )
    limit = settings.API_MAX_JSON_BODY_BYTES
    payload = b'{"name": "' + b"a" * limit + b'", "scopes": ["runs:read"]}'
    status, _headers, body = _send_chunked(
        web.port,
        "/v1/api_keys",
        {"Authorization": f"Bearer {raw}", "Content-Type": "application/json"},
        _chunked(payload, size=64 * 1024),
    )
    assert status == 413
    error = orjson.loads(body)
    assert error["name"] == "payload_too_large"
    assert str(limit) in error["message"]


def test_a_chunked_body_past_what_any_endpoint_takes_is_413_before_the_view(web, live_key):
    limit = chunked_body_limit()
    payload = b'{"records":["' + b"a" * limit + b'"]}'
    status, _headers, body = _send_chunked(
        web.port,
        "/v1/ingest",
        {"Authorization": f"Bearer {live_key}", "Content-Type": "application/json"},
        _chunked(payload, size=1024 * 1024),
    )
    assert status == 413
    assert orjson.loads(body) == {
        "name": "payload_too_large",
        "message": f"The body is larger than {limit} bytes.",
    }


def test_a_chunked_upload_is_stored_as_a_sized_one(web, live_key, agent):
    boundary = "chunkedboundary"
    multipart = (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="file"; filename="notes.md"\r\n'
        "Content-Type: text/markdown\r\n\r\n"
        "# Notes\n\nSent in chunks.\n\r\n"
        f"--{boundary}--\r\n"
    ).encode()
    _key, raw = api_key_factory(agent=agent, scopes=["knowledge:write"])
    status, _headers, body = _send_chunked(
        web.port,
        "/v1/knowledge/files",
        {
            "Authorization": f"Bearer {raw}",
            "Content-Type": f"multipart/form-data; boundary={boundary}",
        },
        _chunked(multipart, size=11),
    )
    assert status == 201, body
    document = KnowledgeDocument.objects.get(agent=agent, pk=orjson.loads(body)["id"])
    assert document.file_name == "notes.md"
    assert document.file_size_bytes == len(b"# Notes\n\nSent in chunks.\n")


def test_a_chunked_body_elsewhere_is_read_too(web):
    """Before: 411 Length Required. An OAuth client's registration is read like any body."""
    status, _headers, body = _send_chunked(
        web.port,
        "/oauth/register/",
        {"Content-Type": "application/json"},
        _chunked(orjson.dumps(client_metadata()), size=16),
    )
    assert status == 201, body
    assert orjson.loads(body)["redirect_uris"] == client_metadata()["redirect_uris"]


# Django's development server (`make run`, the tests' live server) hands the application the
# raw socket: the chunks are decoded by the service itself.


@pytest.mark.django_db(transaction=True)
def test_the_development_server_reads_a_chunked_body_too(live_server, live_key, agent):
    port = int(live_server.url.rsplit(":", 1)[1])
    status, _headers, body = _send_chunked(
        port,
        "/v1/ingest",
        {"Authorization": f"Bearer {live_key}", "Content-Type": "application/json"},
        _chunked(orjson.dumps(_RUN), size=9, extension=b";x=1"),
    )
    assert status == 200, body
    assert Run.objects.filter(agent=agent, id="run_chunked").exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("framed", "message"),
    [
        (b"zz\r\n{}\r\n0\r\n\r\n", "Malformed chunked body."),
        (b"0x2\r\n{}\r\n0\r\n\r\n", "Malformed chunked body."),
        (b"-2\r\n{}\r\n0\r\n\r\n", "Malformed chunked body."),
    ],
    ids=["not hex", "0x prefix", "negative"],
)
def test_the_development_server_refuses_malformed_chunks(live_server, live_key, framed, message):
    port = int(live_server.url.rsplit(":", 1)[1])
    connection = Connection(port)
    try:
        connection.send(
            "POST",
            "/v1/ingest",
            {
                "Authorization": f"Bearer {live_key}",
                "Content-Type": "application/json",
                "Transfer-Encoding": "chunked",
            },
            framed,
        )
        answer = connection.response()
    finally:
        connection.close()
    assert answer is not None
    assert answer[0] == 400, answer
    assert orjson.loads(answer[2]) == {"name": "bad_request", "message": message}


@pytest.mark.django_db(transaction=True)
def test_a_body_with_two_lengths_is_refused(live_server, live_key, agent):
    """Content-Length beside Transfer-Encoding: chunked is how requests are smuggled past a
    proxy that reads the other length: refused, nothing recorded."""
    port = int(live_server.url.rsplit(":", 1)[1])
    framed = _chunked(orjson.dumps(_RUN))
    connection = Connection(port)
    try:
        connection.send(
            "POST",
            "/v1/ingest",
            {
                "Authorization": f"Bearer {live_key}",
                "Content-Type": "application/json",
                "Transfer-Encoding": "chunked",
                "Content-Length": str(len(framed)),
            },
            framed,
        )
        answer = connection.response()
    finally:
        connection.close()
    assert answer is not None and answer[0] == 400
    assert "Content-Length" in orjson.loads(answer[2])["message"]
    assert not Run.objects.filter(agent=agent).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/v1/connection", "/v1/runs", "/v1/agents/x/archive"])
def test_a_bad_host_on_the_api_is_the_envelope_and_one_log_line(caplog, path):
    caplog.set_level(logging.INFO)
    response = Client().get(path, HTTP_HOST="attacker.example")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["name"] == "bad_request"
    assert "Host" in body["message"]
    loud = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert len(loud) == 1, [record.getMessage() for record in loud]
    assert loud[0].levelno == logging.WARNING
    assert loud[0].exc_info is None
    assert re.search(r"refused Host 'attacker\.example'", loud[0].getMessage())


@pytest.mark.django_db
def test_a_bad_host_on_a_page_is_plain_text_and_one_log_line(caplog):
    caplog.set_level(logging.INFO)
    response = Client().get("/login/", HTTP_HOST="attacker.example")
    assert response.status_code == 400
    loud = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert len(loud) == 1 and loud[0].exc_info is None
