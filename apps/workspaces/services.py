"""Writes for workspaces, memberships, Agents and API keys."""

import hashlib
import hmac
import logging
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.common.errors import BadRequest, Conflict, NotFound, ServiceUnavailable, Unauthorized
from apps.workspaces.models import Agent, ApiKey, Membership, Workspace
from apps.workspaces.scopes import parse_scopes

logger = logging.getLogger(__name__)

LOOKUP_ID_LENGTH = 12
LAST_USED_GRANULARITY = timedelta(minutes=1)


def workspace_create(*, name: str, owner) -> Workspace:
    with transaction.atomic():
        workspace = Workspace.objects.create(name=name)
        Membership.objects.create(workspace=workspace, user=owner, role=Membership.Role.OWNER)
    return workspace


def membership_set(*, workspace: Workspace, user, role: str) -> Membership:
    membership, _ = Membership.objects.update_or_create(
        workspace=workspace, user=user, defaults={"role": role}
    )
    return membership


def agent_create(*, workspace: Workspace, name: str) -> Agent:
    return Agent.objects.create(workspace=workspace, name=name)


def _hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_key_create(
    *, agent: Agent, name: str, scopes: list[str] | str, created_by=None
) -> tuple[ApiKey, str]:
    """Create a key and return it with its full secret, which is never retrievable again."""
    name = (name or "").strip()
    if not name or len(name) > 120:
        raise BadRequest("name: give the key a name of 1 to 120 characters.")
    try:
        scope_list = parse_scopes(scopes)
    except ValueError as exc:
        raise BadRequest(f"scopes: {exc}") from None
    lookup_id = secrets.token_hex(LOOKUP_ID_LENGTH // 2)
    secret = secrets.token_urlsafe(32)
    key = ApiKey.objects.create(
        agent=agent,
        name=name,
        lookup_id=lookup_id,
        secret_hash=_hash_secret(secret),
        scopes=scope_list,
        created_by=created_by,
    )
    return key, f"{settings.API_KEY_PREFIX}_{lookup_id}{secret}"


def api_key_revoke(*, agent: Agent, key_id: str) -> ApiKey:
    """Revoke a key: it answers 401 from the very next request, or the revocation fails.

    The cached copy of the key is deleted before the revocation commits. If Redis cannot delete
    it (paused, failing over, unreachable) the change is rolled back and ServiceUnavailable says
    so: a cached copy would otherwise keep the key working for up to a minute.
    """
    key = ApiKey.objects.filter(agent=agent, pk=key_id).first()
    if key is None:
        raise NotFound("No such API key.")
    if key.revoked_at is not None:
        raise Conflict("This API key is already revoked.")
    with transaction.atomic():
        # Conditional update: two revocations racing leave one revoked_at.
        ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        try:
            _drop_cached_key(key.lookup_id)
        except Exception as exc:  # noqa: BLE001 - any cache failure undoes the revocation
            logger.warning("revocation of %s undone: key cache unavailable (%r)", key.pk, exc)
            raise ServiceUnavailable(
                "The API key cache could not be cleared, so the key was not revoked and still "
                "works. Try again in a few seconds.",
                retry_after=KEY_REVOKE_RETRY_AFTER,
            ) from None
    # Once more after commit, best effort: a request that read the row just before the update
    # may have put the active version back meanwhile.
    _forget_cached_key(key.lookup_id)
    key.refresh_from_db(fields=["revoked_at"])
    return key


# Authentication is on every API request, so the key row (with its Agent and workspace) is
# kept in the shared cache for a short while. Revocation deletes the entry before it commits,
# and fails if it cannot, so it takes effect on the next request; only a shared cache (Redis) is
# used, because a per-process cache could not be told about a revocation made by another process.
KEY_CACHE_SECONDS = 60
KEY_REVOKE_RETRY_AFTER = 5


def _key_cache_name(lookup_id: str) -> str:
    return f"api-key:v1:{lookup_id}"


def _key_cache_enabled() -> bool:
    return bool(settings.REDIS_URL)


def _cached_key(lookup_id: str) -> ApiKey | None:
    if not _key_cache_enabled():
        return None
    try:
        return cache.get(_key_cache_name(lookup_id))
    except Exception:  # noqa: BLE001 - a cache outage falls back to the database
        logger.warning("API key cache unavailable", exc_info=True)
        return None


def _remember_key(key: ApiKey) -> None:
    if not _key_cache_enabled():
        return
    try:
        cache.set(_key_cache_name(key.lookup_id), key, KEY_CACHE_SECONDS)
    except Exception:  # noqa: BLE001
        logger.warning("API key cache unavailable", exc_info=True)


def _drop_cached_key(lookup_id: str) -> None:
    """Delete the cached copy now; raises whatever the cache raises."""
    if _key_cache_enabled():
        cache.delete(_key_cache_name(lookup_id))


def _forget_cached_key(lookup_id: str) -> None:
    """Best effort, now and after commit, for changes that are not refused when Redis fails
    (saves and deletes of keys and Agents through the signals below)."""
    if not _key_cache_enabled():
        return

    def forget() -> None:
        try:
            _drop_cached_key(lookup_id)
        except Exception:  # noqa: BLE001 - entries expire on their own within a minute
            logger.error("could not drop a cached API key", exc_info=True)

    forget()
    transaction.on_commit(forget)


def api_key_cache_forget(sender, instance: ApiKey, **kwargs) -> None:
    _forget_cached_key(instance.lookup_id)


def api_key_cache_forget_for_agent(sender, instance: Agent, **kwargs) -> None:
    if not _key_cache_enabled():
        return
    for lookup_id in ApiKey.objects.filter(agent_id=instance.pk).values_list(
        "lookup_id", flat=True
    ):
        _forget_cached_key(lookup_id)


def api_key_authenticate(*, raw_key: str) -> ApiKey:
    """Find the active key a bearer token names, or raise Unauthorized."""
    prefix = f"{settings.API_KEY_PREFIX}_"
    if not raw_key.startswith(prefix) or len(raw_key) < len(prefix) + LOOKUP_ID_LENGTH + 20:
        raise Unauthorized("The API key is malformed.")
    body = raw_key[len(prefix) :]
    lookup_id, secret = body[:LOOKUP_ID_LENGTH], body[LOOKUP_ID_LENGTH:]
    key = _cached_key(lookup_id)
    if key is None:
        key = ApiKey.objects.select_related("agent__workspace").filter(lookup_id=lookup_id).first()
        if key is not None:
            _remember_key(key)
    if key is None or not hmac.compare_digest(key.secret_hash, _hash_secret(secret)):
        raise Unauthorized("The API key is not valid.")
    if key.revoked_at is not None:
        raise Unauthorized("The API key has been revoked.")
    if key.agent.status != Agent.Status.ACTIVE:
        raise Unauthorized("The API key's Agent is archived.")
    _touch_last_used(key)
    return key


def _touch_last_used(key: ApiKey) -> None:
    """Record use at most once a minute, so busy keys do not write on every request."""
    now = timezone.now()
    if key.last_used_at is not None and now - key.last_used_at < LAST_USED_GRANULARITY:
        return
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_GRANULARITY)
    ApiKey.objects.filter(stale, pk=key.pk).update(last_used_at=now)
    key.last_used_at = now
    _remember_key(key)


def demo_seed(*, email: str, password: str) -> dict:
    """Idempotently create the demo owner, workspace, Agent and a fresh full-scope key."""
    from apps.workspaces.scopes import ALL_SCOPES

    user_model = get_user_model()
    with transaction.atomic():
        user, created = user_model.objects.get_or_create(
            username=email, defaults={"email": email, "first_name": "Demo", "last_name": "Owner"}
        )
        if created or not user.check_password(password):
            user.set_password(password)
            user.save(update_fields=["password"])
        membership = (
            Membership.objects.select_related("workspace")
            .filter(user=user, role=Membership.Role.OWNER, workspace__name="Demo workspace")
            .first()
        )
        workspace = (
            membership.workspace
            if membership
            else workspace_create(name="Demo workspace", owner=user)
        )
        agent = workspace.agents.filter(name="Support Agent").first() or agent_create(
            workspace=workspace, name="Support Agent"
        )
        key, raw = api_key_create(
            agent=agent, name="Demo full-scope key", scopes=list(ALL_SCOPES), created_by=user
        )
    return {"workspace": workspace, "agent": agent, "user": user, "key": key, "raw_key": raw}
