"""API keys cached beside their windows: a key's record written, deleted or tombstoned, and read
with its request counted in one round trip."""

import time
from dataclasses import dataclass

import redis
from django.conf import settings

from apps.api.rates import rate_parse
from apps.api.throttling.stores import KEY_TOMBSTONE, _RedisStore, _store
from apps.api.throttling.windows import (
    WindowState,
    _store_unavailable,
    _window_key_around_name,
    _window_state,
)

# With a Redis store, the API key cache lives in it too, as records the gated script reads: a
# request with a cached key is looked up and counted in one round trip (issue 14). The record's
# format is this module's; what the payload holds is the caller's.


@dataclass(frozen=True)
class CountedRequest:
    """A request counted while its key was looked up; `state` is None when the store was
    unreachable (the request is then served without a limit, and counted no more)."""

    state: WindowState | None


class KeyStoreUnavailable(Exception):
    """The Redis store that holds key records could not be read or written."""


def key_records_enabled() -> bool:
    """Whether key records are kept: only in a shared store, since a per-process cache could
    not be told about a revocation made by another process."""
    return not settings.RATE_LIMIT_STORAGE_URL.startswith("memory://")


def key_record(*, secret_hash: str, window_name: str, payload: bytes) -> bytes:
    """A key's record: the hash its secret must have and the name its requests are counted
    under (neither holds a newline), then the payload."""
    return f"{secret_hash}\n{window_name}\n".encode() + payload


def _redis_store() -> _RedisStore:
    store = _store(settings.RATE_LIMIT_STORAGE_URL)
    assert isinstance(store, _RedisStore), "key records need the Redis store"
    return store


def key_record_put(name: str, record: bytes, *, seconds: int) -> bool:
    """Write a record unless a tombstone holds its place; True when written."""
    try:
        return bool(_redis_store().put_script(keys=[name], args=[record, seconds]))
    except (redis.RedisError, OSError) as exc:
        raise KeyStoreUnavailable(repr(exc)) from exc


def key_record_delete(name: str) -> None:
    try:
        _redis_store().client.delete(name)
    except (redis.RedisError, OSError) as exc:
        raise KeyStoreUnavailable(repr(exc)) from exc


def key_record_tombstone(name: str, *, seconds: int) -> None:
    """Put a tombstone in the record's place for `seconds`: lookups find no record (the caller
    reads its database) and no record write lands meanwhile, however late it comes. This is
    what keeps a request that read a key just before its revocation from caching it again."""
    try:
        _redis_store().client.set(name, KEY_TOMBSTONE, ex=seconds)
    except (redis.RedisError, OSError) as exc:
        raise KeyStoreUnavailable(repr(exc)) from exc


def key_record_hit(
    name: str, *, secret_hash: str | None, window_name: str | None = None
) -> tuple[bytes | None, CountedRequest | None]:
    """Read the record `name` and count the request under `window_name` (default: the
    record's), in one round trip; with a `secret_hash`, only when it is the record's. Without
    one the caller has verified the credential otherwise (a signed token).

    Returns (None, None) when there is no record, (payload, None) when the secret is not the
    key's (nothing counted), (payload, CountedRequest) when it counted. An unreachable store gives
    (None, CountedRequest(None)) after one warning: the caller reads the key elsewhere and the
    request is served without a limit.
    """
    rate = rate_parse(settings.API_RATE_LIMIT)
    limit, window = rate.amount, rate.window_seconds
    before, after = _window_key_around_name(settings.API_RATE_LIMIT)
    now = time.time()
    store = _redis_store()
    try:
        answer = store.gated_script(
            keys=[name],
            args=[
                secret_hash or "",
                now,
                limit,
                window,
                store.PREFIX + before,
                after,
                window_name or "",
            ],
        )
    except (redis.RedisError, OSError):
        _store_unavailable()
        return None, CountedRequest(None)
    if not answer:
        return None, None
    if len(answer) == 1:
        return answer[0], None
    payload, counted, count, oldest = answer
    state = _window_state(
        bool(counted), int(count), float(oldest), limit=limit, window=window, now=now
    )
    return payload, CountedRequest(state)
