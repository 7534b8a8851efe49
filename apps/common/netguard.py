"""Network guard for URLs that users give us (knowledge pages, webhook targets).

Nothing fetched on a user's behalf may reach a private network address. A URL is first
normalized (http/https only, no credentials, canonical host), then its host is resolved once and
*every* address must be public. Callers connect to the addresses returned here, never to the
name again, so a DNS answer that changes between the check and the connection (rebinding) cannot
slip a private address through.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import quote, urlsplit

import idna
from django.core.exceptions import ImproperlyConfigured

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_URL_LENGTH = 2048
DEFAULT_PORTS = {"http": 80, "https": 443}


class BlockedURL(ValueError):
    """A URL the guard refuses; str() is a short message that is safe to show the user."""


# ip.is_global alone lets several of these through on Python 3.11 (NAT64, ::/96, 3fff::/20,
# 192.0.0.0/24 exceptions, ...), so every range that must never be reached is listed explicitly.
_BLOCKED_V4 = tuple(
    ipaddress.IPv4Network(net)
    for net in (
        "0.0.0.0/8",  # "this network"; 0.0.0.0 reaches the local host on Linux
        "10.0.0.0/8",
        "100.64.0.0/10",  # carrier-grade NAT
        "127.0.0.0/8",
        "169.254.0.0/16",  # link-local, incl. cloud metadata 169.254.169.254
        "172.16.0.0/12",
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # documentation
        "192.88.99.0/24",  # deprecated 6to4 relay anycast
        "192.168.0.0/16",
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation
        "203.0.113.0/24",  # documentation
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, incl. broadcast 255.255.255.255
    )
)
_BLOCKED_V6 = tuple(
    ipaddress.IPv6Network(net)
    for net in (
        "::/8",  # unspecified, loopback, IPv4-compatible and SIIT forms
        "64:ff9b::/96",  # NAT64: a gateway would forward to any embedded IPv4, private too
        "64:ff9b:1::/48",  # local-use NAT64
        "100::/64",  # discard-only
        "2001::/23",  # IETF protocol assignments (Teredo is unwrapped before this check)
        "2001:db8::/32",  # documentation
        "3fff::/20",  # documentation (2024)
        "5f00::/16",  # SRv6 SIDs
        "fc00::/7",  # unique-local
        "fe80::/10",  # link-local
        "fec0::/10",  # site-local (deprecated, still routable inside some networks)
        "ff00::/8",  # multicast
    )
)
_LOOPBACK_V4 = ipaddress.IPv4Network("127.0.0.0/8")
_LOOPBACK_V6 = ipaddress.IPv6Address("::1")

# A scheme-less "host:port" looks like "scheme:path" to urlsplit; this tells them apart.
_SCHEME_RE = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:")
_HOST_AND_PORT_RE = re.compile(r"[^/?#:@]+:[0-9]+(?:[/?#]|$)")
_PORT_RE = re.compile(r"[0-9]{1,5}")
_LABEL_RE = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
# WHATWG URL: a host whose last label is a number is an IPv4 address in some notation
# (decimal 2130706433, hex 0x7f.1, octal 0177.1); it must parse as one or be refused.
_NUMERIC_LABEL_RE = re.compile(r"(?:0[xX][0-9a-fA-F]*|[0-9]+)")
_UNSAFE_CHARS_RE = re.compile(r"[^\x21-\x7e]")


def normalize_url(raw: str) -> str:
    """Return the canonical http(s) form of a user-given URL or raise BlockedURL."""
    text = raw.strip()
    if not text:
        raise BlockedURL("Enter a URL.")
    if len(text) > MAX_URL_LENGTH:
        raise BlockedURL(f"URLs must be at most {MAX_URL_LENGTH} characters long.")
    if any(ch.isspace() or ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in text):
        raise BlockedURL("URLs cannot contain spaces or control characters.")

    if text.startswith("//"):
        text = "https:" + text
    elif "://" not in text and (not _SCHEME_RE.match(text) or _HOST_AND_PORT_RE.match(text)):
        # "example.com/docs" or "example.com:8080": people paste URLs without a scheme.
        text = "https://" + text

    try:
        parts = urlsplit(text)
    except ValueError as exc:  # unbalanced brackets around an IPv6 host
        raise BlockedURL("The host name is not valid.") from exc
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise BlockedURL("URLs must use http or https.")
    if "@" in parts.netloc:
        raise BlockedURL("URLs with a user name or password are not accepted.")

    host, port = _split_netloc(parts.netloc)
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = _quote_non_ascii(parts.path) or "/"
    query = _quote_non_ascii(parts.query)
    url = f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")
    if len(url) > MAX_URL_LENGTH:
        raise BlockedURL(f"URLs must be at most {MAX_URL_LENGTH} characters long.")
    return url


def is_public_ip(ip: IPAddress) -> bool:
    """True when the address is globally routable and embeds no private IPv4 address."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            return False
        # These forms carry an IPv4 address that the traffic ends up at; judge that one.
        teredo_client = ip.teredo[1] if ip.teredo else None
        embedded = ip.ipv4_mapped or ip.sixtofour or teredo_client
        if embedded is not None:
            return is_public_ip(embedded)
        if any(ip in net for net in _BLOCKED_V6):
            return False
    elif any(ip in net for net in _BLOCKED_V4):
        return False
    return ip.is_global and not (
        ip.is_multicast
        or ip.is_reserved
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_private
        or ip.is_unspecified
    )


def resolve_public(host: str, port: int, *, allow_loopback: bool) -> list[IPAddress]:
    """Resolve host once and return its addresses, refusing if any one is not public."""
    name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        # getaddrinfo also turns IP literals (and inet_aton forms) into canonical addresses.
        infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise BlockedURL("The host name could not be resolved.") from exc

    addresses: list[IPAddress] = []
    for family, _type, _proto, _canonname, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        ip = ipaddress.ip_address(sockaddr[0])
        if ip not in addresses:
            addresses.append(ip)
    if not addresses:
        raise BlockedURL("The host name could not be resolved.")

    # One private answer is enough to refuse: the connection could pick any of them.
    for ip in addresses:
        if not (is_public_ip(ip) or (allow_loopback and _is_loopback(ip))):
            if _is_ip_literal(name):
                raise BlockedURL(f"This address is not public ({ip}).")
            raise BlockedURL(f"{name} resolves to an address that is not public ({ip}).")
    return addresses


def check_url(
    raw_or_normalized: str, *, allow_loopback: bool | None = None
) -> tuple[str, list[IPAddress]]:
    """Normalize a URL and resolve its host; returns (url, addresses to connect to)."""
    if allow_loopback is None:
        allow_loopback = _allow_loopback_setting()
    url = normalize_url(raw_or_normalized)
    parts = urlsplit(url)
    assert parts.hostname is not None  # normalize_url guarantees a host
    port = parts.port or DEFAULT_PORTS[parts.scheme]
    return url, resolve_public(parts.hostname, port, allow_loopback=allow_loopback)


def _allow_loopback_setting() -> bool:
    from django.conf import settings

    try:
        value = settings.NETGUARD_ALLOW_LOOPBACK  # defined in config/settings.py
    except (ImproperlyConfigured, AttributeError):  # no settings, or a module without it: closed
        return False
    # Only a real True opens loopback, so a stray string such as "false" fails closed.
    return value is True


def _is_loopback(ip: IPAddress) -> bool:
    # Deliberately narrower than ip.is_loopback on a mapped address: 127/8 and ::1 only.
    if isinstance(ip, ipaddress.IPv4Address):
        return ip in _LOOPBACK_V4
    return ip == _LOOPBACK_V6


def _is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _split_netloc(netloc: str) -> tuple[str, int | None]:
    """Split and canonicalize "host[:port]"; the host comes back lower-case, IDNA-encoded."""
    if netloc.startswith("["):
        end = netloc.find("]")
        if end == -1:
            raise BlockedURL("The host name is not valid.")
        literal, rest = netloc[1:end], netloc[end + 1 :]
        if rest and not rest.startswith(":"):
            raise BlockedURL("The host name is not valid.")
        try:
            ip6 = ipaddress.IPv6Address(literal)
        except ValueError as exc:
            raise BlockedURL("The host name is not valid.") from exc
        if ip6.scope_id:
            raise BlockedURL("The host name is not valid.")
        host = f"[{ip6.compressed}]"
        port_text = rest[1:] if rest else ""
    else:
        host_text, _, port_text = netloc.partition(":")
        if ":" in port_text:  # an IPv6 address without brackets
            raise BlockedURL("The host name is not valid.")
        host = _normalize_hostname(host_text)

    if not port_text:
        return host, None
    if not _PORT_RE.fullmatch(port_text) or not 0 < int(port_text) < 65536:
        raise BlockedURL("The port number is not valid.")
    return host, int(port_text)


def _normalize_hostname(text: str) -> str:
    if not text:
        raise BlockedURL("URLs need a host name.")
    if text.isascii():
        host = text.lower()
    else:
        try:
            host = idna.encode(text, uts46=True).decode("ascii")
        except idna.IDNAError as exc:
            raise BlockedURL("The host name is not valid.") from exc
    host = host.removesuffix(".")
    labels = host.split(".")
    if _NUMERIC_LABEL_RE.fullmatch(labels[-1]):
        try:
            # The same parser getaddrinfo uses, so we name the address it would reach.
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError as exc:
            raise BlockedURL("The host name is not valid.") from exc
    if len(host) > 253 or not all(_LABEL_RE.fullmatch(label) for label in labels):
        raise BlockedURL("The host name is not valid.")
    return host


def _quote_non_ascii(text: str) -> str:
    # http.client refuses non-ASCII request targets; percent-encode them as browsers do.
    return _UNSAFE_CHARS_RE.sub(lambda match: quote(match.group(), safe=""), text)
