"""The network guard: URL normalization, which addresses count as public, and resolution.

Only socket.getaddrinfo is ever replaced here, to play a DNS server we do not control.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable

import pytest

from apps.common.netguard import (
    BlockedURL,
    check_url,
    is_public_ip,
    normalize_url,
    resolve_public,
)

FakeDNS = Callable[[dict[str, list[str]]], list[str]]


@pytest.fixture
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> FakeDNS:
    """Answer chosen names from a table (others resolve for real); returns the names asked."""

    def install(answers: dict[str, list[str]]) -> list[str]:
        asked: list[str] = []
        real_getaddrinfo = socket.getaddrinfo

        def getaddrinfo(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
            asked.append(host)
            if host not in answers:
                return real_getaddrinfo(host, port, *args, **kwargs)
            if not answers[host]:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            return [
                (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0))
                if ":" in address
                else (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))
                for address in answers[host]
            ]

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        return asked

    return install


def teredo(client: str, server: str = "65.54.227.120") -> str:
    """A Teredo address (2001::/32) carrying client, obfuscated as RFC 4380 says."""
    server_bits = int(ipaddress.IPv4Address(server))
    client_bits = int(ipaddress.IPv4Address(client)) ^ 0xFFFFFFFF
    value = (0x20010000 << 96) | (server_bits << 64) | (0x8000 << 48) | (0x1234 << 32)
    address = ipaddress.IPv6Address(value | client_bits)
    assert address.teredo is not None and str(address.teredo[1]) == client
    return str(address)


# normalize_url ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("example.com", "https://example.com/"),
        ("example.com/docs", "https://example.com/docs"),
        ("example.com:8080/docs", "https://example.com:8080/docs"),
        ("//example.com/x", "https://example.com/x"),
        ("  HTTP://Example.COM:80/A?b=1#frag  ", "http://example.com/A?b=1"),
        ("https://example.com:443", "https://example.com/"),
        ("https://example.com:8443/x", "https://example.com:8443/x"),
        ("http://example.com:443/", "http://example.com:443/"),
        ("https://example.com?", "https://example.com/"),
        ("https://example.com./", "https://example.com/"),
        ("https://docs.example.com/a/b?q=1&r=2", "https://docs.example.com/a/b?q=1&r=2"),
        ("https://Bücher.example/ä?q=ü", "https://xn--bcher-kva.example/%C3%A4?q=%C3%BC"),
        ("https://faß.de/", "https://xn--fa-hia.de/"),
        ("https://ＥＸＡＭＰＬＥ.com/", "https://example.com/"),
        ("https://my_site.example.com/", "https://my_site.example.com/"),
        ("http://[::1]:8000/", "http://[::1]:8000/"),
        ("http://[2001:DB8:0:0::1]/", "http://[2001:db8::1]/"),
        # Numeric host notations are canonicalized, so the guard names the real address.
        ("http://2130706433/", "http://127.0.0.1/"),
        ("http://0x7f000001/", "http://127.0.0.1/"),
        ("http://0x7f.1/", "http://127.0.0.1/"),
        ("http://0177.0.0.1/", "http://127.0.0.1/"),
        ("http://127.1/", "http://127.0.0.1/"),
        ("http://１２７.０.０.１/", "http://127.0.0.1/"),
    ],
)
def test_normalize_url_canonical_form(raw: str, expected: str) -> None:
    assert normalize_url(raw) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("file:///etc/passwd", "URLs must use http or https."),
        ("ftp://example.com/file", "URLs must use http or https."),
        ("javascript:alert(1)", "URLs must use http or https."),
        ("JavaScript://example.com/%0aalert(1)", "URLs must use http or https."),
        ("gopher://example.com:70/", "URLs must use http or https."),
        ("data:text/html,<script>alert(1)</script>", "URLs must use http or https."),
        ("mailto:someone@example.com", "URLs must use http or https."),
        ("https://user:secret@example.com/", "URLs with a user name or password are not accepted."),
        ("https://user@example.com/", "URLs with a user name or password are not accepted."),
        ("http://example.com\\@127.0.0.1/", "URLs with a user name or password are not accepted."),
        ("", "Enter a URL."),
        ("   ", "Enter a URL."),
        ("https:///path", "URLs need a host name."),
        ("http://:80/", "URLs need a host name."),
        ("https://example.com/" + "a" * 2048, "URLs must be at most 2048 characters long."),
        ("https://exa mple.com/", "URLs cannot contain spaces or control characters."),
        ("https://example.com/a\tb", "URLs cannot contain spaces or control characters."),
        ("https://example.com/\x00", "URLs cannot contain spaces or control characters."),
        (
            "https://example.com/\r\nX-Injected: 1",
            "URLs cannot contain spaces or control characters.",
        ),
        ("https://example.com/a\u3000b", "URLs cannot contain spaces or control characters."),
        ("https://example.com:0/", "The port number is not valid."),
        ("https://example.com:65536/", "The port number is not valid."),
        ("https://example.com:http/", "The port number is not valid."),
        ("https://example.com:+80/", "The port number is not valid."),
        ("https://example.com:８０/", "The port number is not valid."),
        ("http://[::1/", "The host name is not valid."),
        ("http://[fe80::1%25eth0]/", "The host name is not valid."),
        ("http://::1/", "The host name is not valid."),
        ("http://1.2.3.4.5/", "The host name is not valid."),
        ("http://256.0.0.1/", "The host name is not valid."),
        ("http://foo.0x7f/", "The host name is not valid."),
        ("http://%31%32%37.0.0.1/", "The host name is not valid."),
        ("http://exa$mple.com/", "The host name is not valid."),
        ("http://-bad-.example/", "The host name is not valid."),
        ("http://a..b/", "The host name is not valid."),
    ],
)
def test_normalize_url_refuses(raw: str, message: str) -> None:
    with pytest.raises(BlockedURL) as caught:
        normalize_url(raw)
    assert str(caught.value) == message


# is_public_ip ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        # IPv4
        "0.0.0.0",
        "0.1.2.3",
        "10.0.0.1",
        "10.255.255.255",
        "100.64.0.1",  # CGNAT
        "100.127.255.254",
        "127.0.0.1",
        "127.255.255.254",
        "169.254.169.254",  # cloud metadata
        "169.254.0.1",
        "172.16.0.1",
        "172.31.255.254",
        "192.0.0.1",
        "192.0.0.9",
        "192.0.2.1",  # documentation
        "192.88.99.1",
        "192.168.1.1",
        "198.18.0.1",  # benchmarking
        "198.19.255.254",
        "198.51.100.1",  # documentation
        "203.0.113.1",  # documentation
        "224.0.0.1",  # multicast
        "239.255.255.250",
        "240.0.0.1",  # reserved
        "255.255.255.255",  # broadcast
        # IPv6
        "::",
        "::1",
        "::ffff:127.0.0.1",  # IPv4-mapped
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "::ffff:0.0.0.0",
        "::127.0.0.1",  # deprecated IPv4-compatible
        "::ffff:0:7f00:1",  # SIIT IPv4-translated
        "2002:7f00:0001::",  # 6to4 of 127.0.0.1
        "2002:0a00::1",  # 6to4 of 10.0.0.0
        "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
        teredo("127.0.0.1"),
        teredo("10.1.2.3"),
        teredo("169.254.169.254"),
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
        "64:ff9b::808:808",  # NAT64 is refused whatever it embeds
        "64:ff9b:1::1",
        "100::1",  # discard-only
        "2001:db8::1",  # documentation
        "3fff::1",  # documentation (2024)
        "5f00::1",
        "fc00::1",  # unique-local
        "fd00::1",
        "fe80::1",  # link-local
        "fe80::1%1",
        "fec0::1",  # site-local
        "ff02::1",  # multicast
        "ff0e::1",
    ],
)
def test_is_public_ip_refuses_non_public(address: str) -> None:
    assert is_public_ip(ipaddress.ip_address(address)) is False


@pytest.mark.parametrize(
    "address",
    [
        "8.8.8.8",
        "1.1.1.1",
        "93.184.215.14",
        "2606:4700:4700::1111",
        "2001:4860:4860::8888",
        # Wrapped forms are judged by the IPv4 address they carry.
        "::ffff:8.8.8.8",
        "2002:0808:0808::1",
        teredo("8.8.8.8"),
    ],
)
def test_is_public_ip_allows_public(address: str) -> None:
    assert is_public_ip(ipaddress.ip_address(address)) is True


# resolve_public and check_url ------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://127.0.0.1:8000/", "127.0.0.1"),
        ("http://127.0.0.1/", "127.0.0.1"),
        ("http://localhost/", "127.0.0.1"),
        ("localhost:8000", "127.0.0.1"),
        ("http://[::1]/", "::1"),
        ("http://2130706433/", "127.0.0.1"),
        ("http://0x7f000001/", "127.0.0.1"),
        ("http://0177.0.0.01/", "127.0.0.1"),
        ("http://0.0.0.0/", "0.0.0.0"),
        ("http://10.0.0.1/", "10.0.0.1"),
        ("http://192.168.0.10:8080/admin", "192.168.0.10"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254"),
        ("http://[::ffff:169.254.169.254]/", "::ffff:a9fe:a9fe"),
        ("http://[fd00::1]/", "fd00::1"),
        ("http://100.64.0.1/", "100.64.0.1"),
    ],
)
def test_check_url_refuses_non_public_by_default(url: str, address: str) -> None:
    with pytest.raises(BlockedURL) as caught:
        check_url(url, allow_loopback=False)
    # localhost may answer ::1 before 127.0.0.1; either way it must be refused and named.
    assert address in str(caught.value) or "::1" in str(caught.value)
    assert "not public" in str(caught.value)


def test_name_resolving_to_private_address_is_refused(fake_dns: FakeDNS) -> None:
    fake_dns({"internal.example": ["10.0.0.5"]})
    with pytest.raises(BlockedURL) as caught:
        check_url("https://internal.example/wiki", allow_loopback=False)
    assert (
        str(caught.value)
        == "internal.example resolves to an address that is not public (10.0.0.5)."
    )


def test_name_with_one_private_answer_among_public_ones_is_refused(fake_dns: FakeDNS) -> None:
    fake_dns({"mixed.example": ["93.184.215.14", "2606:4700:4700::1111", "10.0.0.5"]})
    with pytest.raises(BlockedURL, match=r"\(10\.0\.0\.5\)"):
        check_url("https://mixed.example/", allow_loopback=False)


def test_name_with_private_ipv6_answer_is_refused(fake_dns: FakeDNS) -> None:
    fake_dns({"v6.example": ["93.184.215.14", "fd12:3456::1"]})
    with pytest.raises(BlockedURL, match="fd12:3456::1"):
        check_url("https://v6.example/", allow_loopback=False)


def test_public_name_returns_every_checked_address_once(fake_dns: FakeDNS) -> None:
    fake_dns({"public.example": ["93.184.215.14", "2606:4700:4700::1111", "93.184.215.14"]})
    url, addresses = check_url("Public.Example/docs#intro", allow_loopback=False)
    assert url == "https://public.example/docs"
    assert addresses == [
        ipaddress.ip_address("93.184.215.14"),
        ipaddress.ip_address("2606:4700:4700::1111"),
    ]


def test_unresolvable_name_is_refused(fake_dns: FakeDNS) -> None:
    fake_dns({"nowhere.example": []})
    with pytest.raises(BlockedURL) as caught:
        check_url("https://nowhere.example/", allow_loopback=False)
    assert str(caught.value) == "The host name could not be resolved."


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "[::1]", "localhost"])
def test_allow_loopback_permits_loopback(host: str) -> None:
    url, addresses = check_url(f"http://{host}:8000/", allow_loopback=True)
    assert url == f"http://{host}:8000/"
    assert all(address.is_loopback for address in addresses)


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.1/",
        "http://172.16.5.4/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://100.64.0.1/",
        "http://0.0.0.0:8000/",
        "http://[::]/",
        "http://[::ffff:127.0.0.1]/",  # loopback means 127/8 and ::1 only, not wrapped forms
        "http://[64:ff9b::7f00:1]/",
        "http://[fe80::1]/",
        "http://[fd00::1]/",
    ],
)
def test_allow_loopback_still_refuses_everything_else(url: str) -> None:
    with pytest.raises(BlockedURL, match="not public"):
        check_url(url, allow_loopback=True)


def test_allow_loopback_still_refuses_names_pointing_to_metadata(fake_dns: FakeDNS) -> None:
    fake_dns({"metadata.example": ["169.254.169.254"]})
    with pytest.raises(BlockedURL, match="169.254.169.254"):
        check_url("http://metadata.example/", allow_loopback=True)


def test_resolve_public_checks_ip_literals_without_trusting_them() -> None:
    with pytest.raises(BlockedURL, match=r"This address is not public \(10\.1\.2\.3\)\."):
        resolve_public("10.1.2.3", 80, allow_loopback=True)
    assert resolve_public("[::1]", 80, allow_loopback=True) == [ipaddress.ip_address("::1")]


def test_check_url_default_follows_the_setting() -> None:
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        configured = bool(settings.INSTALLED_APPS is not None)
    except ImproperlyConfigured:
        configured = False
    if not configured:
        # Django not set up at all: the guard must fail closed.
        with pytest.raises(BlockedURL, match="not public"):
            check_url("http://127.0.0.1/")
        return

    from django.test import override_settings

    with override_settings(NETGUARD_ALLOW_LOOPBACK=False), pytest.raises(BlockedURL):
        check_url("http://127.0.0.1/")
    with override_settings(NETGUARD_ALLOW_LOOPBACK="true"), pytest.raises(BlockedURL):
        check_url("http://127.0.0.1/")  # only a real True opens loopback
    with override_settings(NETGUARD_ALLOW_LOOPBACK=True):
        assert check_url("http://127.0.0.1/")[0] == "http://127.0.0.1/"
        with pytest.raises(BlockedURL):
            check_url("http://10.0.0.1/")
