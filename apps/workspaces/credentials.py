"""The credentials of /v1, every one backed by a workspace API key: `request.auth` on every view
of an Agent (apps.workspaces.viewsets) is a `KeyCredential`.

Three kinds: a workspace API key (`api_key`), a browser token (`browser_token`, minted by
POST /v1/auth_tokens) and a resource token (`resource_token`, minted by the Agents MCP server
from an OAuth grant; it serves wherever an API key does, with the grant's permissions). This app
registers the first two with the platform (`apps.api.credentials`) in its `AppConfig.ready()`;
apps.mcp_server registers the third, built with `KeyCredential.for_resource_token`.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from django.http import HttpRequest

from apps.api.throttling import CountedRequest
from apps.workspaces.browser_tokens import BrowserToken, browser_token_verify
from apps.workspaces.models import Agent, ApiKey
from apps.workspaces.selectors import is_workspace_owner
from apps.workspaces.services import api_key_authenticate

CredentialKind = Literal["api_key", "browser_token", "resource_token"]

# A browser token reads its end user's own conversations and their messages, and gives that
# user's feedback on the assistant's messages (/v1/me/messages/{id}/feedback), nothing else:
# every other view serves API keys only (`credential_kinds`).
BROWSER_TOKEN_SCOPES = frozenset({"conversations:read", "scores:write"})


class GrantToken(Protocol):
    """What a credential reads of a resource token (apps.mcp_server.resource_tokens)."""

    @property
    def public_id(self) -> str: ...

    @property
    def scopes(self) -> frozenset[str]: ...

    @property
    def issued_at(self) -> datetime: ...

    @property
    def expires_at(self) -> datetime: ...


@dataclass(frozen=True)
class KeyCredential:
    kind: CredentialKind
    # The key itself, for a browser token the key that minted it, for a resource token the
    # connected application's grant key.
    key: ApiKey
    scopes: frozenset[str]
    # Safe to log and to count requests by: a key's prefix, a token's public id.
    public_id: str
    # Set for browser tokens only.
    token: BrowserToken | None = None
    # Set for resource tokens only.
    resource_token: GrantToken | None = None
    # Set when the request was counted in its rate window as the key was looked up (one Redis
    # round trip for both); the throttle then counts nothing.
    counted: CountedRequest | None = None

    @classmethod
    def for_api_key(cls, key: ApiKey, counted: CountedRequest | None = None) -> "KeyCredential":
        return cls(
            kind="api_key",
            key=key,
            scopes=frozenset(key.scopes),
            public_id=key.prefix,
            counted=counted,
        )

    @classmethod
    def for_browser_token(
        cls, token: BrowserToken, key: ApiKey, counted: CountedRequest | None = None
    ) -> "KeyCredential":
        return cls(
            kind="browser_token",
            key=key,
            scopes=BROWSER_TOKEN_SCOPES,
            public_id=token.public_id,
            token=token,
            counted=counted,
        )

    @classmethod
    def for_resource_token(
        cls, token: GrantToken, grant_key: ApiKey, counted: CountedRequest | None = None
    ) -> "KeyCredential":
        return cls(
            kind="resource_token",
            key=grant_key,
            scopes=token.scopes & frozenset(grant_key.scopes),
            public_id=token.public_id,
            resource_token=token,
            counted=counted,
        )

    @property
    def serves_as(self) -> str:
        """The kind a view's `credential_kinds` is checked against: a resource token acts as
        an API key of its grant's permissions."""
        return "api_key" if self.kind == "resource_token" else self.kind

    @property
    def agent(self) -> Agent:
        return self.key.agent

    @property
    def end_user_id(self) -> str | None:
        return self.token.user_id if self.token else None

    @property
    def expires_at(self) -> datetime | None:
        if self.resource_token is not None:
            return self.resource_token.expires_at
        return self.token.expires_at if self.token else self.key.expires_at

    @property
    def rate_limit_id(self) -> str:
        # Keys keep their id as the counter's name, and so does a connected application (its
        # grant key), whatever tokens it mints; each browser token has its own window.
        return self.key.pk if self.token is None else self.public_id

    def is_owner(self) -> bool:
        """Whether the credential acts for a workspace owner now (a browser token never does;
        a resource token does when the member who consented is an owner now)."""
        if self.serves_as != "api_key":
            return False
        return is_workspace_owner(
            user_id=self.key.created_by_id, workspace_id=self.agent.workspace_id
        )


def api_key_credential(raw: str, request: HttpRequest) -> KeyCredential:
    key, counted = api_key_authenticate(raw_key=raw)
    return KeyCredential.for_api_key(key, counted)


def browser_token_credential(raw: str, request: HttpRequest) -> KeyCredential:
    token, minting_key, counted = browser_token_verify(raw_token=raw)
    return KeyCredential.for_browser_token(token, minting_key, counted)
