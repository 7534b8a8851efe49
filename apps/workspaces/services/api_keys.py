"""API key rules: creating keys and who may grant what, revoking them, and authenticating a
bearer key. The cache that serves authentication, and the writes that must keep it coherent,
are in `key_cache`."""

import hashlib
import hmac
import secrets
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.api.scopes import OWNER_SCOPES, parse_scopes
from apps.api.throttling import CountedRequest
from apps.common.errors import BadRequest, Conflict, InsufficientScope, NotFound, Unauthorized
from apps.common.time import iso
from apps.workspaces.audit import audit_record
from apps.workspaces.models import Agent, ApiKey
from apps.workspaces.selectors import is_workspace_owner
from apps.workspaces.services.key_cache import (
    _touch_last_used,
    api_key_by_lookup_id_counted,
    api_key_revoke_now,
)

LOOKUP_ID_LENGTH = 12


def _hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_key_create(
    *,
    agent: Agent,
    name: str,
    scopes: list[str] | str,
    created_by=None,
    expires_at: datetime | None = None,
    parent: ApiKey | None = None,
    kind: str = ApiKey.Kind.KEY,
) -> tuple[ApiKey, str]:
    """Create a key and return it with its full secret, which is never retrievable again.

    This is the bare write; who may grant what is checked by `api_key_create_by_member` (the
    console) and `api_key_create_by_key` (POST /v1/api_keys), which both end here.
    """
    name = (name or "").strip()
    if not name or len(name) > 120:
        raise BadRequest("name: give the key a name of 1 to 120 characters.")
    try:
        scope_list = parse_scopes(scopes)
    except ValueError as exc:
        raise BadRequest(f"scopes: {exc}") from None
    if expires_at is not None and expires_at <= timezone.now():
        raise BadRequest("expires_at: must be in the future.")
    lookup_id = secrets.token_hex(LOOKUP_ID_LENGTH // 2)
    secret = secrets.token_urlsafe(32)
    with transaction.atomic():
        key = ApiKey.objects.create(
            agent=agent,
            name=name,
            lookup_id=lookup_id,
            secret_hash=_hash_secret(secret),
            scopes=scope_list,
            created_by=created_by,
            expires_at=expires_at,
            parent=parent,
            kind=kind,
        )
        # A connected application's grant key is recorded as the connection it stands for.
        if kind == ApiKey.Kind.KEY:
            _audit(
                key,
                "api_key.created",
                {
                    "prefix": key.prefix,
                    "scopes": scope_list,
                    "expires_at": expires_at,
                    "created_by_key": parent.pk if parent is not None else None,
                },
            )
    return key, f"{settings.API_KEY_PREFIX}_{lookup_id}{secret}"


def _audit(key: ApiKey, action: str, changes: dict) -> None:
    audit_record(
        workspace_id=key.agent.workspace_id,
        agent_id=key.agent_id,
        action=action,
        target_type="api_key",
        target_id=key.pk,
        target_name=key.name,
        changes=changes,
    )


def api_key_grant_check(*, workspace_id: str, user, scopes: list[str]) -> None:
    """Only a workspace owner may grant the owner permissions (contract 5.3)."""
    needs_owner = sorted(set(scopes) & OWNER_SCOPES)
    if needs_owner and not is_workspace_owner(
        user_id=getattr(user, "pk", None), workspace_id=workspace_id
    ):
        raise InsufficientScope(
            needs_owner[0], f"Only workspace owners can grant: {', '.join(needs_owner)}."
        )


def api_key_create_by_member(
    *, agent: Agent, user, name: str, scopes: list[str], expires_at: datetime | None = None
) -> tuple[ApiKey, str]:
    """A key made in the console by a member of the Agent's workspace."""
    api_key_grant_check(workspace_id=agent.workspace_id, user=user, scopes=scopes)
    return api_key_create(
        agent=agent, name=name, scopes=scopes, created_by=user, expires_at=expires_at
    )


# Permissions that a key created over the API can never hold: it could otherwise mint keys
# that outlive the revocation of the key that made them, one generation after another.
NEVER_DELEGATED = frozenset({"api_keys:create"})


def api_key_manager_check(*, key: ApiKey) -> None:
    """Managing keys over the API needs `api_keys:create` (owner, checked with the scope) and
    `auth_tokens:create` too (contract 5.3)."""
    if "auth_tokens:create" not in key.scopes:
        raise InsufficientScope(
            "auth_tokens:create",
            "Managing integration keys needs the 'auth_tokens:create' permission besides "
            "'api_keys:create'; this API key lacks it.",
        )


def api_key_create_by_key(
    *,
    parent: ApiKey,
    agent: Agent,
    name: str,
    scopes: list[str],
    expires_at: datetime | None = None,
) -> tuple[ApiKey, str]:
    """A narrow integration key made over POST /v1/api_keys by `parent`.

    Its permissions are a subset of the parent's and never include `api_keys:create`; it
    cannot outlive an expiring parent; it is recorded as created by the parent's creator.
    """
    api_key_manager_check(key=parent)
    if agent.workspace_id != parent.agent.workspace_id or agent.status != Agent.Status.ACTIVE:
        raise NotFound("No such Agent for this API key.")
    try:
        scope_list = parse_scopes(scopes)
    except ValueError as exc:
        raise BadRequest(f"scopes: {exc}") from None
    forbidden = sorted(set(scope_list) & NEVER_DELEGATED)
    if forbidden:
        raise BadRequest(
            f"scopes: a key created over the API can never hold {', '.join(forbidden)}."
        )
    not_held = sorted(set(scope_list) - set(parent.scopes))
    if not_held:
        raise InsufficientScope(
            not_held[0],
            f"A new key's permissions must be a subset of this key's; it lacks: "
            f"{', '.join(not_held)}.",
        )
    if parent.expires_at is not None:
        if expires_at is None:
            expires_at = parent.expires_at
        elif expires_at > parent.expires_at:
            raise BadRequest(
                f"expires_at: cannot be later than this API key's own expiry "
                f"({iso(parent.expires_at)})."
            )
    api_key_grant_check(workspace_id=agent.workspace_id, user=parent.created_by, scopes=scope_list)
    return api_key_create(
        agent=agent,
        name=name,
        scopes=scope_list,
        created_by=parent.created_by,
        expires_at=expires_at,
        parent=parent,
    )


def api_key_revoke(*, agent: Agent, key_id: str, by_user) -> ApiKey:
    """Revoke a key of `agent`: it answers 401 from the very next request, or the revocation
    fails. Owners may revoke any key, members only their own; `by_user=None` is an operator at
    the command line.

    The cached copy of the key is deleted before the revocation commits. If Redis cannot delete
    it (paused, failing over, unreachable) the change is rolled back and ServiceUnavailable says
    so: a cached copy would otherwise keep the key working for up to a minute.
    """
    key = ApiKey.objects.filter(agent=agent, pk=key_id, kind=ApiKey.Kind.KEY).first()
    if key is None:
        raise NotFound("No such API key.")
    if (
        by_user is not None
        and key.created_by_id != by_user.pk
        and not is_workspace_owner(user_id=by_user.pk, workspace_id=agent.workspace_id)
    ):
        raise InsufficientScope(
            "api_keys:create", "Only owners can revoke keys created by someone else."
        )
    if key.revoked_at is not None:
        raise Conflict("This API key is already revoked.")
    api_key_revoke_recorded(key)
    return key


def api_key_revoke_recorded(key: ApiKey) -> None:
    """Revoke `key` now (`api_key_revoke_now`) with its `api_key.revoked` audit entry, in one
    transaction. Every revocation of a key goes through here: one by its owner or a workspace
    owner (`api_key_revoke`), or with a member leaving or removed (`member_remove`). Who may
    revoke is the caller's check."""
    api_key_revoke_now(key, then=lambda: _audit(key, "api_key.revoked", {"prefix": key.prefix}))


def api_key_usable_check(key: ApiKey, *, what: str = "The API key") -> None:
    """Raise Unauthorized unless the key may be used now. Checked on every request against
    the (possibly cached) row, so a cached key past its expiry is refused all the same."""
    if key.revoked_at is not None:
        raise Unauthorized(f"{what} has been revoked.")
    if key.expires_at is not None and key.expires_at <= timezone.now():
        raise Unauthorized(f"{what} expired at {iso(key.expires_at)}.")
    if key.agent.status != Agent.Status.ACTIVE:
        raise Unauthorized(f"{what}'s Agent is archived.")


def api_key_authenticate(*, raw_key: str) -> tuple[ApiKey, CountedRequest | None]:
    """Find the active key a bearer token names, or raise Unauthorized.

    With the key cached, the request is also counted in the key's rate window by the same
    Redis call, and the count comes back (the throttle then counts nothing); otherwise it is
    None and the throttle counts.
    """
    prefix = f"{settings.API_KEY_PREFIX}_"
    if not raw_key.startswith(prefix) or len(raw_key) < len(prefix) + LOOKUP_ID_LENGTH + 20:
        raise Unauthorized("The API key is malformed.")
    body = raw_key[len(prefix) :]
    lookup_id, secret = body[:LOOKUP_ID_LENGTH], body[LOOKUP_ID_LENGTH:]
    secret_hash = _hash_secret(secret)
    key, counted = api_key_by_lookup_id_counted(lookup_id, secret_hash=secret_hash)
    if (
        key is None
        # A connected application's grant has no usable secret; refuse it all the same.
        or key.kind != ApiKey.Kind.KEY
        or not hmac.compare_digest(key.secret_hash, secret_hash)
    ):
        raise Unauthorized("The API key is not valid.")
    api_key_usable_check(key)
    _touch_last_used(key)
    return key, counted
