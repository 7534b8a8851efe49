"""fetch() and post_json() against real local servers.

The servers are small threaded http.server instances on 127.0.0.1, so that misbehaviour (hanging,
trickling, lying about sizes, gzip bombs, redirects into private networks) can be staged exactly.
Only socket.getaddrinfo (to play a DNS server) and socket.connect (to watch where we connect)
are wrapped; our own code runs unchanged.
"""

from __future__ import annotations

import datetime as dt
import gzip
import socket
import ssl
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from apps.common.http import USER_AGENT, FetchError, FetchResult, fetch, post_json
from apps.common.netguard import BlockedURL
from tests.http_thread import serve_in_thread

Handler = BaseHTTPRequestHandler
Route = Callable[[Handler], None]
MB = 1024 * 1024


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        self.close_connection = True
        path = self.path.split("?")[0]
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.local.requests.append((self.command, self.path, dict(self.headers), body))
        route = self.server.local.routes.get(path)
        if route is None:
            send(self, 404, b"not found")
        else:
            route(self)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    local: LocalServer

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients hanging up on purpose is the point of several tests


@dataclass
class LocalServer:
    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    scheme: str = "http"
    port: int = 0

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    @property
    def paths(self) -> list[str]:
        return [path for _method, path, _headers, _body in self.requests]


def _serve(wrap: Callable[[socket.socket], socket.socket] | None = None) -> Iterator[LocalServer]:
    local = LocalServer(scheme="https" if wrap else "http")
    httpd = _Server(("127.0.0.1", 0), _RequestHandler)
    if wrap is not None:
        httpd.socket = wrap(httpd.socket)
    httpd.local = local
    local.port = httpd.server_address[1]
    thread = serve_in_thread(httpd)
    try:
        yield local
    finally:
        local.stop.set()  # releases handlers that wait on purpose
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def server() -> Iterator[LocalServer]:
    yield from _serve()


def send(
    handler: Handler, status: int, body: bytes = b"", headers: dict[str, str] | None = None
) -> None:
    handler.send_response(status)
    for name, value in (headers or {"Content-Type": "text/plain"}).items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def redirect(location: str, status: int = 302) -> Route:
    return lambda handler: send(handler, status, b"moved", {"Location": location})


@pytest.fixture
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, list[str]], list[str]]:
    """Answer one name with a sequence of addresses (one per lookup; the last one repeats).

    Returns the list of host names getaddrinfo was asked for, IP literals included.
    """
    asked: list[str] = []
    answers: dict[str, list[str]] = {}
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
        asked.append(host)
        if host not in answers:
            return real_getaddrinfo(host, port, *args, **kwargs)
        queue = answers[host]
        address = queue.pop(0) if len(queue) > 1 else queue[0]
        return real_getaddrinfo(address, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)

    def install(name: str, addresses: list[str]) -> list[str]:
        answers[name] = list(addresses)
        return asked

    return install


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every address a client socket connects to during the test."""
    seen: list[str] = []
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: tuple[str, int]) -> None:
        seen.append(address[0])
        real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return seen


def fetch_local(url: str, **kwargs: float | int) -> FetchResult:
    return fetch(url, allow_loopback=True, **kwargs)  # type: ignore[arg-type]


# fetch: success paths --------------------------------------------------------------------


def test_fetch_returns_body_final_url_and_charset(server: LocalServer) -> None:
    page = "<html><body>Café crème</body></html>".encode("latin-1")
    server.routes["/page"] = lambda h: send(
        h, 200, page, {"Content-Type": 'text/HTML; charset="ISO-8859-1"', "X-Extra": "1"}
    )

    result = fetch_local(server.url("/page?lang=fr#top"))

    assert result.url == server.url("/page?lang=fr")
    assert result.status == 200
    assert result.body == page
    assert result.content_type == "text/html"
    assert result.charset == "iso-8859-1"
    assert result.headers["x-extra"] == "1"
    _method, _path, headers, _body = server.requests[0]
    assert headers["User-Agent"] == USER_AGENT
    assert headers["Host"] == f"127.0.0.1:{server.port}"


def test_fetch_follows_redirects_and_checks_each_hop_once(
    server: LocalServer, fake_dns: Callable[[str, list[str]], list[str]]
) -> None:
    asked = fake_dns("pages.test", ["127.0.0.1"])
    server.routes["/start"] = redirect("/middle", 301)
    server.routes["/middle"] = redirect("../end?x=1", 307)
    server.routes["/end"] = redirect(server.url("/final", host="pages.test"), 308)
    server.routes["/final"] = lambda h: send(h, 200, b"done")

    result = fetch_local(server.url("/start", host="Pages.Test"))

    assert result.body == b"done"
    assert result.url == server.url("/final", host="pages.test")
    assert server.paths == ["/start", "/middle", "/end?x=1", "/final"]
    # The Host header carries the real name, not the address we connected to.
    assert {headers["Host"] for _m, _p, headers, _b in server.requests} == {
        f"pages.test:{server.port}"
    }
    # One lookup per hop, by the guard; urllib3 is handed the address and never resolves it.
    assert asked.count("pages.test") == 4


def test_fetch_connects_to_the_checked_address_despite_dns_rebinding(
    server: LocalServer,
    fake_dns: Callable[[str, list[str]], list[str]],
    connections: list[str],
) -> None:
    # A hostile DNS server answers the check with loopback (allowed here) and any later
    # lookup with a private address; the fetch must never ask a second time.
    asked = fake_dns("rebind.test", ["127.0.0.1", "10.0.0.1"])
    server.routes["/page"] = lambda h: send(h, 200, b"from the checked address")

    result = fetch_local(server.url("/page", host="rebind.test"))

    assert result.body == b"from the checked address"
    assert asked.count("rebind.test") == 1
    assert connections == ["127.0.0.1"]


def test_fetch_tries_the_next_checked_address_when_one_refuses(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch, connections: list[str]
) -> None:
    # Nothing listens on 127.0.0.2 (the server is bound to 127.0.0.1 only), as when a host
    # publishes an address that is down; both answers passed the guard, so trying on is safe.
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
        if host == "dual.test":
            return real_getaddrinfo("127.0.0.2", port, *args, **kwargs) + real_getaddrinfo(
                "127.0.0.1", port, *args, **kwargs
            )
        return real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    server.routes["/page"] = lambda h: send(h, 200, b"ok")

    result = fetch_local(server.url("/page", host="dual.test"))

    assert result.body == b"ok"
    assert connections == ["127.0.0.2", "127.0.0.1"]


def test_fetch_decompresses_gzip(server: LocalServer) -> None:
    page = b"<p>hello</p>" * 1000
    server.routes["/gz"] = lambda h: send(
        h, 200, gzip.compress(page), {"Content-Type": "text/html", "Content-Encoding": "gzip"}
    )

    result = fetch_local(server.url("/gz"))

    assert result.body == page
    assert server.requests[0][2]["Accept-Encoding"] == "gzip"


# fetch: the guard at every hop -------------------------------------------------------------


@pytest.mark.parametrize(
    "location",
    [
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:10.0.0.1]/",
        "http://0x0a000001/",
        "http://192.168.1.1:8080/admin",
        "file:///etc/passwd",
    ],
)
def test_redirect_to_a_private_address_is_refused_without_connecting(
    server: LocalServer, connections: list[str], location: str
) -> None:
    server.routes["/jump"] = redirect(location)

    with pytest.raises(FetchError) as caught:
        fetch_local(server.url("/jump"))

    assert caught.value.blocked is True
    assert isinstance(caught.value, BlockedURL)
    assert connections == ["127.0.0.1"]  # only the first hop was ever contacted


def test_redirect_to_a_name_resolving_privately_is_refused(
    server: LocalServer,
    fake_dns: Callable[[str, list[str]], list[str]],
    connections: list[str],
) -> None:
    fake_dns("intranet.test", ["10.20.30.40"])
    server.routes["/jump"] = redirect("http://intranet.test/secrets")

    with pytest.raises(FetchError, match=r"10\.20\.30\.40") as caught:
        fetch_local(server.url("/jump"))

    assert caught.value.blocked is True
    assert connections == ["127.0.0.1"]


@pytest.mark.parametrize(
    "url",
    ["http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/", "http://[fd00::1]/"],
)
def test_allow_loopback_still_refuses_private_addresses(connections: list[str], url: str) -> None:
    with pytest.raises(FetchError, match="not public") as caught:
        fetch_local(url)
    assert caught.value.blocked is True
    assert connections == []


def test_default_refuses_the_local_server(server: LocalServer, connections: list[str]) -> None:
    server.routes["/page"] = lambda h: send(h, 200, b"secret")
    with pytest.raises(FetchError, match="not public") as caught:
        fetch(server.url("/page"), allow_loopback=False)
    assert caught.value.blocked is True
    assert server.requests == []
    assert connections == []


def test_redirect_loop_is_too_many_redirects(server: LocalServer) -> None:
    server.routes["/loop"] = redirect("/loop")

    with pytest.raises(FetchError, match="^Too many redirects.$") as caught:
        fetch_local(server.url("/loop"), max_redirects=3)

    assert caught.value.blocked is False
    assert len(server.requests) == 4  # the first request and three redirects


# fetch: size, time and status limits -----------------------------------------------------


def test_declared_length_over_the_limit_is_refused_before_reading(server: LocalServer) -> None:
    def huge(handler: Handler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(50 * MB))
        handler.end_headers()
        handler.wfile.write(b"x" * 1024)
        handler.wfile.flush()
        server.stop.wait(5)  # reading the body would hang until the read timeout

    server.routes["/huge"] = huge
    started = time.monotonic()

    with pytest.raises(FetchError, match=r"^The page is larger than 1 MB\.$"):
        fetch_local(server.url("/huge"), max_bytes=MB, read_timeout=3)

    assert time.monotonic() - started < 2  # well under the 3 s read timeout it must not wait


def test_streamed_body_over_the_limit_is_cut_off(server: LocalServer) -> None:
    sent = [0]
    finished = threading.Event()

    def endless(handler: Handler) -> None:
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        chunk = b"y" * 65536
        try:
            while sent[0] < 500 * MB and not server.stop.is_set():
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent[0] += len(chunk)
        except OSError:
            pass  # the client hung up, as it should
        finally:
            finished.set()

    server.routes["/endless"] = endless

    with pytest.raises(FetchError, match=r"^The page is larger than 1 MB\.$"):
        fetch_local(server.url("/endless"), max_bytes=MB)

    assert finished.wait(5), "the client kept the connection open"
    assert sent[0] < 64 * MB  # socket buffers hold a few MB; the rest was never sent


def test_gzip_bomb_is_refused_without_inflating_it(server: LocalServer, gzip_bomb: bytes) -> None:
    server.routes["/bomb"] = lambda h: send(
        h, 200, gzip_bomb, {"Content-Type": "text/html", "Content-Encoding": "gzip"}
    )

    tracemalloc.start()
    try:
        with pytest.raises(FetchError, match=r"^The page is larger than 1 MB\.$"):
            fetch_local(server.url("/bomb"), max_bytes=MB)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * MB  # inflating it would take 128 MB


@pytest.fixture(scope="module")
def gzip_bomb() -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MB)
    bomb = b"".join(compressor.compress(zeros) for _ in range(128)) + compressor.flush()
    assert len(bomb) < MB // 4
    return bomb


def test_server_that_never_answers_times_out(server: LocalServer) -> None:
    server.routes["/hang"] = lambda h: server.stop.wait(5)
    started = time.monotonic()

    with pytest.raises(FetchError, match="^The page took too long to respond.$") as caught:
        fetch_local(server.url("/hang"), read_timeout=0.3)

    assert time.monotonic() - started < 2.5  # the server would hang for 5 s
    assert caught.value.blocked is False


def test_trickling_server_is_cut_off_at_the_total_deadline(server: LocalServer) -> None:
    def trickle(handler: Handler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", "1000")
        handler.end_headers()
        for _ in range(1000):
            if server.stop.wait(0.05):
                return
            handler.wfile.write(b"z")
            handler.wfile.flush()

    server.routes["/trickle"] = trickle
    started = time.monotonic()

    # Each byte arrives well within read_timeout; only the total deadline can stop this.
    with pytest.raises(FetchError, match="^The page took too long to respond.$"):
        fetch_local(server.url("/trickle"), read_timeout=2, total_timeout=0.6)

    assert time.monotonic() - started < 1.9  # under the 2 s read timeout


def test_stall_late_in_the_body_is_cut_off_at_the_total_deadline(server: LocalServer) -> None:
    def stall(handler: Handler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", "1000")
        handler.end_headers()
        for _ in range(7):  # 0.7 s of steady progress, then silence
            handler.wfile.write(b"z")
            handler.wfile.flush()
            if server.stop.wait(0.1):
                return
        server.stop.wait(5)

    server.routes["/stall"] = stall
    started = time.monotonic()

    # The last read starts with 0.3 s of the deadline left; it must not wait a full read
    # timeout (or the 1 s that was left when the request went out).
    with pytest.raises(FetchError, match="^The page took too long to respond.$"):
        fetch_local(server.url("/stall"), read_timeout=3, total_timeout=1)

    assert time.monotonic() - started < 2  # a full read timeout would be over 3 s


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (404, "The server answered 404 Not Found."),
        (500, "The server answered 500 Internal Server Error."),
        (302, "The server answered 302 Found."),  # a redirect without a Location
        (599, "The server answered 599."),
    ],
)
def test_non_2xx_final_status_names_the_status(
    server: LocalServer, status: int, message: str
) -> None:
    server.routes["/status"] = lambda h: send(h, status, b"no")

    with pytest.raises(FetchError) as caught:
        fetch_local(server.url("/status"))

    assert str(caught.value) == message
    assert caught.value.blocked is False


def test_closed_port_is_connection_refused() -> None:
    with pytest.raises(FetchError, match="^Connection refused.$"):
        fetch_local(f"http://127.0.0.1:{_closed_port()}/")


# fetch over TLS ----------------------------------------------------------------------------


@dataclass
class TLSFiles:
    ca: Path
    cert: Path
    key: Path


def _tls_files(directory: Path, host: str) -> TLSFiles:
    """A throwaway CA and a server certificate for host, signed by it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "netguard test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    files = TLSFiles(
        ca=directory / "ca.pem", cert=directory / "cert.pem", key=directory / "key.pem"
    )
    files.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return files


@pytest.fixture
def tls_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[LocalServer, list[str | None]]]:
    """An HTTPS server whose certificate is valid for secure.test only, and the SNI names seen."""
    files = _tls_files(tmp_path, "secure.test")
    # OpenSSL reads SSL_CERT_FILE when urllib3 loads the default trust store.
    monkeypatch.setenv("SSL_CERT_FILE", str(files.ca))
    sni_names: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(files.cert, files.key)
    context.sni_callback = lambda _sock, name, _ctx: sni_names.append(name)  # type: ignore[assignment,func-returns-value]
    for local in _serve(lambda sock: context.wrap_socket(sock, server_side=True)):
        yield local, sni_names


def test_https_uses_the_host_name_for_sni_and_the_certificate(
    tls_server: tuple[LocalServer, list[str | None]],
    fake_dns: Callable[[str, list[str]], list[str]],
    connections: list[str],
) -> None:
    server, sni_names = tls_server
    fake_dns("secure.test", ["127.0.0.1"])
    server.routes["/page"] = lambda h: send(h, 200, b"over tls")

    result = fetch_local(server.url("/page", host="secure.test"))

    assert result.body == b"over tls"
    assert sni_names == ["secure.test"]
    assert connections == ["127.0.0.1"]


def test_https_refuses_a_certificate_for_another_name(
    tls_server: tuple[LocalServer, list[str | None]],
    fake_dns: Callable[[str, list[str]], list[str]],
) -> None:
    server, sni_names = tls_server
    fake_dns("other.test", ["127.0.0.1"])
    server.routes["/page"] = lambda h: send(h, 200, b"should not be read")

    with pytest.raises(FetchError, match="^The secure connection to other.test failed.$"):
        fetch_local(server.url("/page", host="other.test"))

    assert sni_names == ["other.test"]
    assert server.requests == []


# post_json -------------------------------------------------------------------------------


def test_post_json_delivers_body_and_headers(server: LocalServer) -> None:
    server.routes["/hook"] = lambda h: send(h, 202, b'{"ok": true}')

    result = post_json(
        server.url("/hook"),
        body=b'{"type": "run.completed"}',
        headers={"webhook-id": "msg_1", "Host": "evil.example"},
        allow_loopback=True,
    )

    assert result.status == 202
    assert result.body_excerpt == '{"ok": true}'
    assert result.duration_ms > 0
    method, path, headers, body = server.requests[0]
    assert (method, path, body) == ("POST", "/hook", b'{"type": "run.completed"}')
    assert headers["Content-Type"] == "application/json"
    assert headers["webhook-id"] == "msg_1"
    assert headers["User-Agent"] == USER_AGENT
    assert headers["Host"] == f"127.0.0.1:{server.port}"  # a caller cannot retarget it


def test_post_json_returns_server_errors_as_results(server: LocalServer) -> None:
    server.routes["/hook"] = lambda h: send(h, 500, "Böse ".encode() * 400)

    result = post_json(server.url("/hook"), body=b"{}", headers={}, allow_loopback=True)

    assert result.status == 500
    assert result.body_excerpt.startswith("Böse Böse")
    assert len(result.body_excerpt.encode()) <= 1024 + 3  # one character may be cut in two


def test_post_json_reads_at_most_max_response_bytes(server: LocalServer) -> None:
    sent = [0]
    finished = threading.Event()

    def endless(handler: Handler) -> None:
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        try:
            while sent[0] < 500 * MB and not server.stop.is_set():
                handler.wfile.write(b"10000\r\n" + b"a" * 65536 + b"\r\n")
                sent[0] += 65536
        except OSError:
            pass
        finally:
            finished.set()

    server.routes["/hook"] = endless

    result = post_json(
        server.url("/hook"), body=b"{}", headers={}, allow_loopback=True, max_response_bytes=4096
    )

    assert result.status == 200
    assert result.body_excerpt == "a" * 1024
    assert finished.wait(5)
    assert sent[0] < 64 * MB


def test_post_json_does_not_follow_redirects(server: LocalServer) -> None:
    server.routes["/hook"] = redirect("/elsewhere", 307)
    server.routes["/elsewhere"] = lambda h: send(h, 200, b"followed")

    result = post_json(server.url("/hook"), body=b"{}", headers={}, allow_loopback=True)

    assert result.status == 307
    assert server.paths == ["/hook"]


def test_post_json_times_out_on_a_slow_receiver(server: LocalServer) -> None:
    server.routes["/hook"] = lambda h: server.stop.wait(5)
    started = time.monotonic()

    with pytest.raises(FetchError, match=r"^Timed out after 0\.3 s\.$"):
        post_json(
            server.url("/hook"), body=b"{}", headers={}, allow_loopback=True, read_timeout=0.3
        )

    assert time.monotonic() - started < 2.5  # the receiver would hang for 5 s


def test_post_json_reports_connection_refused() -> None:
    with pytest.raises(FetchError, match="^Connection refused.$") as caught:
        post_json(
            f"http://127.0.0.1:{_closed_port()}/hook", body=b"{}", headers={}, allow_loopback=True
        )
    assert caught.value.blocked is False


@pytest.mark.parametrize(
    "url", ["http://169.254.169.254/hook", "http://10.0.0.1/hook", "ftp://example.com/"]
)
def test_post_json_refuses_guarded_targets(connections: list[str], url: str) -> None:
    with pytest.raises(FetchError) as caught:
        post_json(url, body=b"{}", headers={}, allow_loopback=True)
    assert caught.value.blocked is True
    assert connections == []


def test_post_json_default_refuses_loopback(server: LocalServer) -> None:
    with pytest.raises(BlockedURL, match="not public"):
        post_json(server.url("/hook"), body=b"{}", headers={}, allow_loopback=False)
    assert server.requests == []


def _closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port
