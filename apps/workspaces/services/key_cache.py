"""The API key cache that authentication reads, and the writes that must keep it coherent: the
revocation that tombstones a cached key before and after it commits, and the `last_used_at`
touch."""

import logging
import pickle
from collections.abc import Callable
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.api.throttling import (
    CountedRequest,
    KeyStoreUnavailable,
    key_record,
    key_record_delete,
    key_record_hit,
    key_record_put,
    key_record_tombstone,
    key_records_enabled,
)
from apps.common.errors import ServiceUnavailable
from apps.workspaces.models import Agent, ApiKey

logger = logging.getLogger(__name__)

LAST_USED_GRANULARITY = timedelta(minutes=1)


def api_key_revoke_now(key: ApiKey, *, then: Callable[[], None] | None = None) -> None:
    """Mark `key` revoked so that it answers 401 from the very next request, whoever checks
    next; `then` runs inside the same transaction (a connected application also deletes its
    OAuth tokens there). Who may revoke is the caller's check.

    The cached copy of the key is replaced by a tombstone before the revocation commits, and
    again once it has. A request that read the still-active row before the commit (or waited
    on its lock to record `last_used_at`) may try to cache it afterwards: the tombstone refuses
    that write, so no cache brings a revoked key back. If Redis cannot take the tombstone
    (paused, failing over, unreachable) the change is rolled back and ServiceUnavailable says
    so. Browser tokens and resource tokens find their minting or grant key through the same
    cache, so they die with it.
    """
    with transaction.atomic():
        # Conditional update: two revocations racing leave one revoked_at.
        ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        if then is not None:
            then()
        try:
            _bury_cached_key(key.lookup_id, seconds=REVOKED_TOMBSTONE_SECONDS)
        except Exception as exc:
            logger.warning("revocation of %s undone: key cache unavailable (%r)", key.pk, exc)
            raise ServiceUnavailable(
                "The API key cache could not be cleared, so the key was not revoked and still "
                "works. Try again in a few seconds.",
                retry_after=KEY_REVOKE_RETRY_AFTER,
            ) from None
    key.refresh_from_db(fields=["revoked_at"])


# Authentication is on every API request, so the key row (with its Agent and workspace) is
# kept for a short while as a record in the rate limiter's Redis (apps.api.throttling), where a
# request is looked up and counted in one round trip. Revocation deletes the record before it
# commits, and fails if it cannot, so it takes effect on the next request; without Redis (the
# embedded default) there is no cache, because a per-process one could not be told about a
# revocation made by another process.
KEY_CACHE_SECONDS = 60
KEY_REVOKE_RETRY_AFTER = 5
# How long a revoked key's tombstone keeps its place in the cache: far longer than any request
# can take between reading the row and writing the cache (a revocation is final anyway; the
# key's requests then read the database and get 401).
REVOKED_TOMBSTONE_SECONDS = 24 * 3600


def _key_cache_name(lookup_id: str) -> str:
    return f"api-key:v2:{lookup_id}"


def _key_from_record(payload: bytes) -> ApiKey:
    # Written by _remember_key into our own Redis, as Django's Redis cache would pickle it.
    return pickle.loads(payload)  # noqa: S301


def _remember_key(key: ApiKey) -> None:
    if not key_records_enabled():
        return
    record = key_record(
        secret_hash=key.secret_hash,
        # The window's name: the key's id, as KeyCredential.rate_limit_id says.
        window_name=key.pk,
        payload=pickle.dumps(key, pickle.HIGHEST_PROTOCOL),
    )
    try:
        key_record_put(_key_cache_name(key.lookup_id), record, seconds=KEY_CACHE_SECONDS)
    except KeyStoreUnavailable:
        logger.warning("API key cache unavailable", exc_info=True)


def _bury_cached_key(lookup_id: str, *, seconds: int) -> None:
    """Tombstone the cached copy now (raises KeyStoreUnavailable when Redis cannot) and once
    more after the surrounding transaction commits (best effort): a late cache write of the row
    as it was before the change cannot land in between or after."""
    if not key_records_enabled():
        return
    key_record_tombstone(_key_cache_name(lookup_id), seconds=seconds)

    def again() -> None:
        try:
            key_record_tombstone(_key_cache_name(lookup_id), seconds=seconds)
        except KeyStoreUnavailable:
            logger.error("could not tombstone a cached API key after commit", exc_info=True)

    transaction.on_commit(again)


def _forget_cached_key(lookup_id: str) -> None:
    """Best effort, now and after commit, for changes that are not refused when Redis fails
    (saves and deletes of keys and Agents through the signals below). A delete, not a
    tombstone: an Agent's configuration change must not keep its keys out of the cache."""
    if not key_records_enabled():
        return

    def forget() -> None:
        try:
            key_record_delete(_key_cache_name(lookup_id))
        except KeyStoreUnavailable:
            logger.error("could not drop a cached API key", exc_info=True)

    forget()
    transaction.on_commit(forget)


def bury_agent_keys(agent: Agent) -> None:
    """Archiving stops an Agent's keys like a revocation: tombstones (for as long as a cache
    entry lives), so a request in flight cannot cache a key with its Agent still active."""
    if not key_records_enabled():
        return
    for lookup_id in ApiKey.objects.filter(agent_id=agent.pk).values_list("lookup_id", flat=True):
        try:
            _bury_cached_key(lookup_id, seconds=KEY_CACHE_SECONDS)
        except KeyStoreUnavailable:
            logger.error("could not tombstone a cached API key", exc_info=True)


def api_key_cache_forget(sender, instance: ApiKey, created: bool = False, **kwargs) -> None:
    if not created:  # a new key was never cached
        _forget_cached_key(instance.lookup_id)


def api_key_cache_forget_for_agent(
    sender, instance: Agent, created: bool = False, **kwargs
) -> None:
    if created or not key_records_enabled():
        return
    for lookup_id in ApiKey.objects.filter(agent_id=instance.pk).values_list(
        "lookup_id", flat=True
    ):
        _forget_cached_key(lookup_id)


def _key_from_database(lookup_id: str, *, remember: bool = True) -> ApiKey | None:
    key = (
        ApiKey.objects.select_related("agent__workspace")
        # The system prompt (up to 32k characters) is not needed to authenticate and would
        # make every cached key that much larger.
        .defer("agent__instructions")
        .filter(lookup_id=lookup_id)
        .first()
    )
    if key is not None and remember:
        _remember_key(key)
    return key


def api_key_by_lookup_id_counted(
    lookup_id: str, *, window_name: str | None = None, secret_hash: str | None = None
) -> tuple[ApiKey | None, CountedRequest | None]:
    """The key with this public lookup id (with its Agent and workspace) for a request, and the
    request counted in its rate window: from the shared cache when it is there, in the same
    Redis call (no database read), counted under `window_name` (default: the key's id) and,
    given a `secret_hash`, only if it is the key's. The count is None when nothing was counted
    (the throttle then counts) and says so when the store was down."""
    counted: CountedRequest | None = None
    if key_records_enabled():
        payload, counted = key_record_hit(
            _key_cache_name(lookup_id), secret_hash=secret_hash, window_name=window_name
        )
        if payload is not None:
            return _key_from_record(payload), counted
    # Not cached, or the store is down (counted then says so, and writing would wait for it
    # once more).
    return _key_from_database(lookup_id, remember=counted is None), counted


def _touch_last_used(key: ApiKey) -> None:
    """Record use at most once a minute, so busy keys do not write on every request."""
    now = timezone.now()
    if key.last_used_at is not None and now - key.last_used_at < LAST_USED_GRANULARITY:
        return
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_GRANULARITY)
    # Not for a key revoked meanwhile (this update may have waited on the revocation's lock):
    # then the copy in hand is stale and is not cached again (the tombstone would refuse it).
    touched = ApiKey.objects.filter(stale, pk=key.pk, revoked_at__isnull=True).update(
        last_used_at=now
    )
    key.last_used_at = now
    if touched:
        _remember_key(key)
