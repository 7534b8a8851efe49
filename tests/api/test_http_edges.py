"""HTTP edges (issue 24, item 6), against gunicorn as production runs it where the server's
behaviour is the point: a refused oversized body leaves the connection usable, a chunked body
is refused clearly rather than read as empty; and a Host the service does not answer to is the
API's envelope with one log line, not an HTML page and a traceback per request."""

from __future__ import annotations

import logging
import re
import socket

import orjson
import pytest
from django.test import Client

from tests.factories import api_key_factory
from tests.web_server import GunicornServer

NINE_MIB = 9 * 1024 * 1024


@pytest.fixture
def web(transactional_db):
    server = GunicornServer().start()
    yield server
    server.stop()


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
        return int(status_line.split()[1]), headers, body

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


def _chunked(body: bytes) -> bytes:
    return f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"


@pytest.mark.parametrize(
    "path",
    ["/v1/ingest", "/v1/webhook/test"],
    ids=["ingest", "webhook test"],
)
def test_a_chunked_json_body_is_refused_clearly(web, live_key, path):
    """Before: read as empty, so ingest answered a misleading 400 and the webhook test
    answered 200 having ignored the body."""
    connection = Connection(web.port)
    try:
        connection.send(
            "POST",
            path,
            {
                "Authorization": f"Bearer {live_key}",
                "Content-Type": "application/json",
                "Transfer-Encoding": "chunked",
            },
            _chunked(b'{"event_type": "run.completed"}'),
        )
        answer = connection.response()
    finally:
        connection.close()
    assert answer is not None
    status, _headers, body = answer
    assert status == 400
    error = orjson.loads(body)
    assert error["name"] == "bad_request"
    assert "chunked" in error["message"] and "Content-Length" in error["message"]


def test_a_chunked_body_elsewhere_is_411(web):
    connection = Connection(web.port)
    try:
        connection.send(
            "POST",
            "/oauth/register/",
            {"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
            _chunked(b'{"redirect_uris": ["https://client.example/cb"]}'),
        )
        answer = connection.response()
    finally:
        connection.close()
    assert answer is not None and answer[0] == 411


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
