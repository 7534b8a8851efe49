"""What authenticated a /v1 request, as the platform sees it, and the kinds of credential.

The platform (authentication, the scope check, throttling, the request log) knows no kind of
credential itself: the app that defines one registers it in its `AppConfig.ready()` with
`credential_kind_register`, naming how to recognise a raw bearer value (its prefix) and how to
verify it into a `Credential` (or raise `Unauthorized`). Today `apps.workspaces` registers API
keys (tried for every value no other kind recognises) and browser tokens, and
`apps.mcp_server` its resource tokens and the refusal of its OAuth tokens (docs/architecture.md).

Views say which kinds they serve in `credential_kinds`; the scope permission, throttling, the
request log and /v1/connection read only the `Credential` below from `request.auth`.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from django.http import HttpRequest

from apps.api.throttling import CountedRequest
from apps.common.errors import Unauthorized


class Credential(Protocol):
    """The part of a credential the platform reads; each kind's app supplies the rest."""

    @property
    def kind(self) -> str: ...

    @property
    def scopes(self) -> frozenset[str]: ...

    # Safe to log and to count requests by: a key's prefix, a token's public id.
    @property
    def public_id(self) -> str: ...

    # Set when the request was counted in its rate window as the credential was looked up (one
    # Redis round trip for both); the throttle then counts nothing.
    @property
    def counted(self) -> CountedRequest | None: ...

    # The kind a view's `credential_kinds` is checked against.
    @property
    def serves_as(self) -> str: ...

    # The name of the credential's rate window.
    @property
    def rate_limit_id(self) -> str: ...

    def is_owner(self) -> bool:
        """Whether the credential acts for a workspace owner now (owner-only scopes)."""
        ...


# (raw bearer value, the Django request) -> the credential, or Unauthorized.
Verify = Callable[[str, HttpRequest], Credential]


@dataclass(frozen=True)
class CredentialKind:
    name: str
    # None: the kind every value that no other kind recognises is tried as (API keys), so
    # its own parser says what is wrong with a malformed value.
    recognizes: Callable[[str], bool] | None
    verify: Verify


_kinds: dict[str, CredentialKind] = {}


def credential_kind_register(
    name: str, *, recognizes: Callable[[str], bool] | None, verify: Verify
) -> None:
    """Register a kind (from an `AppConfig.ready()`); registering a name again replaces it.
    Recognisers must not overlap (each kind has its own prefix), so order does not matter."""
    if recognizes is None and any(
        kind.recognizes is None and kind.name != name for kind in _kinds.values()
    ):
        raise ValueError("Only one credential kind may take the values no other recognises.")
    _kinds[name] = CredentialKind(name=name, recognizes=recognizes, verify=verify)


def credential_verify(raw: str, *, request: HttpRequest) -> Credential:
    """The credential a raw bearer value stands for, verified, or `Unauthorized`."""
    fallback = None
    for kind in _kinds.values():
        if kind.recognizes is None:
            fallback = kind
        elif kind.recognizes(raw):
            return kind.verify(raw, request)
    if fallback is None:
        raise Unauthorized("This service accepts no credential of this kind.")
    return fallback.verify(raw, request)
