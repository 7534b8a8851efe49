"""Drive the Agents MCP server the way a desktop MCP client does, with the official SDK's
client (`mcp.Client` over Streamable HTTP, `OAuthClientProvider` for the whole OAuth flow), and
play the signed-in member in between over real HTTP: sign in, open the consent page, choose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import unescape
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT_URI = "http://localhost:53682/callback"


class MemoryStorage:
    """The SDK's TokenStorage protocol, in memory (a desktop client keeps this on disk)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def _hidden_fields(html: str) -> dict[str, str]:
    fields = {}
    for tag in re.findall(r"<input[^>]*type=\"hidden\"[^>]*>", html):
        name = re.search(r'name="([^"]*)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name:
            fields[unescape(name.group(1))] = unescape(value.group(1)) if value else ""
    return fields


@dataclass
class Member:
    """A person at the browser: signs in, reads the consent page, answers it."""

    base_url: str
    email: str
    password: str
    agent_id: str
    scopes: list[str] | None = None  # None: keep what the page pre-checks
    allow: bool = True
    consent_pages: list[str] = field(default_factory=list)
    callback: dict[str, str] = field(default_factory=dict)

    def consent(self, authorization_url: str) -> None:
        with httpx.Client(base_url=self.base_url, follow_redirects=False, timeout=30) as web:
            login = web.get("/login/")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
            signed_in = web.post(
                "/login/",
                data={
                    "username": self.email,
                    "password": self.password,
                    "csrfmiddlewaretoken": token,
                },
            )
            assert signed_in.status_code == 302, signed_in.text
            page = web.get(authorization_url)
            assert page.status_code == 200, page.text
            self.consent_pages.append(page.text)
            fields = _hidden_fields(page.text)
            checked = re.findall(
                r'<input type="checkbox" name="granted_scopes" value="([^"]+)" checked', page.text
            )
            form: dict[str, str | list[str]] = dict(fields)
            form["agent_id"] = self.agent_id
            form["granted_scopes"] = checked if self.scopes is None else self.scopes
            form["allow" if self.allow else "deny"] = "1"
            answer = web.post(urlsplit(authorization_url).path, data=form)
            assert answer.status_code == 302, answer.text
            location = answer.headers["location"]
            assert location.startswith(REDIRECT_URI), location
            self.callback = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def oauth_provider(base_url: str, member: Member, storage: MemoryStorage) -> OAuthClientProvider:
    async def redirect_handler(url: str) -> None:
        member.consent(url)

    async def callback_handler() -> AuthorizationCodeResult:
        if "code" not in member.callback:
            raise RuntimeError(f"authorization refused: {member.callback}")
        return AuthorizationCodeResult(
            code=member.callback["code"],
            state=member.callback.get("state"),
            iss=member.callback.get("iss"),
        )

    return OAuthClientProvider(
        server_url=f"{base_url}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="Desktop test client",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )


async def with_mcp_client(base_url: str, auth: httpx2.Auth | None, work):
    """Run `await work(client)` with an SDK client connected to `/mcp`."""
    async with (
        httpx2.AsyncClient(auth=auth, timeout=30, follow_redirects=False) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client,
    ):
        return await work(client)
