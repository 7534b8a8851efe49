"""Outbound HTTP for URLs users give us: knowledge pages (fetch) and webhooks (post_json).

Every hop goes through the network guard and then connects to the address the guard checked,
never to the host name again; TLS still verifies the certificate against the real host name.
Bodies are streamed with size and time caps, and gzip is decompressed under the same size cap.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import urljoin, urlsplit

from urllib3 import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NewConnectionError,
    ReadTimeoutError,
    SSLError,
)
from urllib3.response import BaseHTTPResponse
from urllib3.util import Timeout

from apps.common.netguard import DEFAULT_PORTS, BlockedURL, IPAddress, check_url

USER_AGENT = "AgentConsoleBot/1.0 (+knowledge fetcher)"

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_CHUNK = 64 * 1024
_EXCERPT_BYTES = 1024


class FetchError(Exception):
    """A fetch or post that did not succeed; str() is a short message for the user."""

    blocked: bool = False


class FetchBlocked(FetchError, BlockedURL):
    """The network guard refused the URL or one of its redirect hops (nothing was sent)."""

    blocked = True


@dataclass(frozen=True)
class FetchResult:
    url: str  # final URL, after redirects
    status: int
    content_type: str | None  # media type only, lower-case ("text/html")
    charset: str | None  # from the Content-Type header, lower-case
    body: bytes  # decompressed
    headers: dict[str, str]  # lower-case names of the final response


@dataclass(frozen=True)
class PostResult:
    status: int
    body_excerpt: str
    duration_ms: float
    # The answer's headers as sent (names as written), bounded (`_headers_excerpt`).
    headers: list[tuple[str, str]] = field(default_factory=list)


def fetch(
    url: str,
    *,
    max_bytes: int = 10 * 1024 * 1024,
    connect_timeout: float = 5,
    read_timeout: float = 15,
    total_timeout: float = 30,
    max_redirects: int = 5,
    allow_loopback: bool | None = None,
) -> FetchResult:
    """GET a user-given URL, following redirects ourselves so each hop is checked again."""
    deadline = time.monotonic() + total_timeout
    headers = {"User-Agent": USER_AGENT, "Accept": "*/*", "Accept-Encoding": "gzip"}
    timeout_message = "The page took too long to respond."
    current = url
    for _hop in range(max_redirects + 1):
        checked_url, addresses = _guard(current, allow_loopback=allow_loopback)
        with _exchange(
            method="GET",
            url=checked_url,
            addresses=addresses,
            headers=headers,
            body=None,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            deadline=deadline,
            connect_timeout_message=timeout_message,
            read_timeout_message=timeout_message,
        ) as response:
            location = response.headers.get("Location")
            if response.status in _REDIRECT_STATUSES and location:
                # Not read: a redirect body is never needed, and could be a decompression bomb.
                current = urljoin(checked_url, location)
                continue
            if not 200 <= response.status < 300:
                raise FetchError(f"The server answered {_status_text(response.status)}.")
            body = _read_body(
                response,
                max_bytes=max_bytes,
                read_timeout=read_timeout,
                deadline=deadline,
                overflow_error=f"The page is larger than {_size_text(max_bytes)}.",
            )
            content_type, charset = _parse_content_type(response.headers.get("Content-Type"))
            return FetchResult(
                url=checked_url,
                status=response.status,
                content_type=content_type,
                charset=charset,
                body=body,
                headers={name.lower(): value for name, value in response.headers.itermerged()},
            )
    raise FetchError("Too many redirects.")


def post_json(
    url: str,
    *,
    body: bytes,
    headers: dict[str, str],
    connect_timeout: float = 5,
    read_timeout: float = 10,
    allow_loopback: bool | None = None,
    max_response_bytes: int = 64 * 1024,
) -> PostResult:
    """POST a webhook body; redirects are not followed (a 3xx is just a non-2xx answer)."""
    checked_url, addresses = _guard(url, allow_loopback=allow_loopback)
    started = time.monotonic()
    deadline = started + connect_timeout + read_timeout
    with _exchange(
        method="POST",
        url=checked_url,
        addresses=addresses,
        headers={"User-Agent": USER_AGENT, "Content-Type": "application/json", **headers},
        body=body,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        deadline=deadline,
        connect_timeout_message=f"Timed out after {connect_timeout:g} s.",
        read_timeout_message=f"Timed out after {read_timeout:g} s.",
    ) as response:
        excerpt = _read_body(
            response,
            max_bytes=max_response_bytes,
            read_timeout=read_timeout,
            deadline=deadline,
            overflow_error=None,
        )
        status = response.status
        answer_headers = _headers_excerpt(response.headers.items())
    return PostResult(
        status=status,
        body_excerpt=excerpt[:_EXCERPT_BYTES].decode("utf-8", errors="replace"),
        duration_ms=(time.monotonic() - started) * 1000,
        headers=answer_headers,
    )


# What a webhook attempt keeps of the endpoint's headers: enough to debug (Svix shows them),
# bounded so an endpoint cannot grow our rows: at most this many, each value cut short.
HEADERS_KEPT = 50
HEADER_VALUE_MAX = 512


def _headers_excerpt(items) -> list[tuple[str, str]]:
    kept: list[tuple[str, str]] = []
    for name, value in items:
        if len(kept) == HEADERS_KEPT:
            break
        kept.append((str(name)[:100], str(value)[:HEADER_VALUE_MAX]))
    return kept


def _guard(url: str, *, allow_loopback: bool | None) -> tuple[str, list[IPAddress]]:
    try:
        return check_url(url, allow_loopback=allow_loopback)
    except BlockedURL as exc:
        raise FetchBlocked(str(exc)) from exc


@contextmanager
def _exchange(
    *,
    method: str,
    url: str,
    addresses: list[IPAddress],
    headers: Mapping[str, str],
    body: bytes | None,
    connect_timeout: float,
    read_timeout: float,
    deadline: float,
    connect_timeout_message: str,
    read_timeout_message: str,
) -> Iterator[BaseHTTPResponse]:
    """Send one request to a checked address of url's host and yield the unread response.

    urllib3 is given the IP, so it does no DNS lookup of its own; the Host header, TLS SNI and
    the certificate check use the real host name. Errors inside the block become FetchError.
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or DEFAULT_PORTS[parts.scheme]
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    # Set last so a caller's headers can never point the request at another virtual host.
    request_headers = {**headers, "Host": parts.netloc}
    try:
        for index, address in enumerate(addresses):
            remaining = _remaining(deadline)
            pool = _pool(
                scheme=parts.scheme,
                address=address,
                port=port,
                host=host,
                timeout=Timeout(
                    connect=min(connect_timeout, remaining), read=min(read_timeout, remaining)
                ),
            )
            try:
                try:
                    response = pool.urlopen(
                        method,
                        target,
                        body=body,
                        headers=request_headers,
                        retries=False,
                        redirect=False,
                        assert_same_host=False,
                        preload_content=False,
                        decode_content=False,
                    )
                except (NewConnectionError, ConnectTimeoutError):
                    # A host with several checked addresses may be unreachable on one of them
                    # (typically IPv6); nothing was sent yet, so try the next.
                    if index + 1 < len(addresses):
                        continue
                    raise
                try:
                    yield response
                finally:
                    response.close()
                return
            finally:
                pool.close()
    except NewConnectionError as exc:
        if isinstance(exc.__cause__, ConnectionRefusedError):
            raise FetchError("Connection refused.") from exc
        raise FetchError(f"Could not connect to {host}.") from exc
    except ConnectTimeoutError as exc:
        raise FetchError(connect_timeout_message) from exc
    except (ReadTimeoutError, TimeoutError) as exc:
        raise FetchError(read_timeout_message) from exc
    except SSLError as exc:
        raise FetchError(f"The secure connection to {host} failed.") from exc
    except (HTTPError, OSError) as exc:
        raise FetchError(f"The connection to {host} failed.") from exc


def _pool(
    *, scheme: str, address: IPAddress, port: int, host: str, timeout: Timeout
) -> HTTPConnectionPool:
    if scheme == "https":
        return HTTPSConnectionPool(
            str(address),
            port,
            timeout=timeout,
            retries=False,
            cert_reqs="CERT_REQUIRED",
            server_hostname=host,
            assert_hostname=host,
        )
    return HTTPConnectionPool(str(address), port, timeout=timeout, retries=False)


def _read_body(
    response: BaseHTTPResponse,
    *,
    max_bytes: int,
    read_timeout: float,
    deadline: float,
    overflow_error: str | None,
) -> bytes:
    """Read at most max_bytes of decoded body; past that, raise overflow_error or truncate."""
    declared = response.headers.get("Content-Length", "")
    if overflow_error and declared.isdigit() and int(declared) > max_bytes:
        raise FetchError(overflow_error)
    received = bytearray()
    for piece in _decoded_pieces(response, read_timeout=read_timeout, deadline=deadline):
        received += piece
        if len(received) > max_bytes:
            if overflow_error:
                raise FetchError(overflow_error)
            return bytes(received[:max_bytes])
    return bytes(received)


def _decoded_pieces(
    response: BaseHTTPResponse, *, read_timeout: float, deadline: float
) -> Iterator[bytes]:
    """Yield the body in pieces of at most _CHUNK bytes, decompressing gzip lazily.

    Decompressing only as much as the consumer takes is what defeats decompression bombs: a few
    kilobytes of gzip can expand to gigabytes.
    """
    encoding = response.headers.get("Content-Encoding", "").strip().lower()
    if encoding in ("gzip", "x-gzip"):
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding in ("", "identity"):
        decoder = None
    else:
        raise FetchError("The server used an unsupported compression.")
    while raw := _read_some(response, read_timeout=read_timeout, deadline=deadline):
        if decoder is None:
            yield raw
            continue
        try:
            while raw:
                piece = decoder.decompress(raw, _CHUNK)
                if piece:
                    yield piece
                raw = decoder.unconsumed_tail
        except zlib.error as exc:
            raise FetchError("The server sent a corrupt compressed body.") from exc


def _read_some(response: BaseHTTPResponse, *, read_timeout: float, deadline: float) -> bytes:
    # The socket timeout only bounds each recv(); shrinking it to what is left of the deadline
    # is what stops a server that trickles a byte at a time from holding us forever.
    remaining = _remaining(deadline)
    sock = getattr(response.connection, "sock", None)
    if sock is not None:
        sock.settimeout(min(read_timeout, remaining))
    return response.read1(_CHUNK, decode_content=False)


def _remaining(deadline: float) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("deadline passed")
    return remaining


def _parse_content_type(value: str | None) -> tuple[str | None, str | None]:
    if not value:
        return None, None
    media_type, *params = value.split(";")
    charset = None
    for param in params:
        name, _, param_value = param.partition("=")
        if name.strip().lower() == "charset":
            charset = param_value.strip().strip("\"'").lower() or None
    return media_type.strip().lower() or None, charset


def _status_text(status: int) -> str:
    # The server's own reason phrase is attacker-controlled text; use the standard one.
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def _size_text(size: int) -> str:
    if size >= 1024 * 1024:
        return f"{round(size / (1024 * 1024), 1):g} MB"
    if size >= 1024:
        return f"{round(size / 1024, 1):g} KB"
    return f"{size} bytes"
