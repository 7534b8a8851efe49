"""Per-credential rate limiting on a shared counter (Redis, or memory on the embedded default),
reported on every counted response with the fields of the IETF draft
(draft-ietf-httpapi-ratelimit-headers-10; why this family: docs/keys-and-tokens.md):

    RateLimit-Policy: "default";q=600;w=60
    RateLimit: "default";r=599;t=42

The window is a moving one: a request is refused when `q` requests were counted in the `w`
seconds before it (a request counted at `T` leaves the window at exactly `T + w`). `r` is what
is left after this request and `t` the whole seconds until the oldest counted request leaves
the window, i.e. until one more request is available; on a 429 (`r=0`) that is exactly
`Retry-After`.

One request costs one Redis round trip: a Lua script (registered once, then called by its SHA)
counts the request and answers everything the headers and `Retry-After` need. With a cached API
key, finding the key is the same call: the key cache lives here as records that the script
reads before it counts (`key_record_hit`, below). It keeps the
layout of the `limits` library's moving window, which counted here before (the same key, a list
of timestamps newest first), so windows carry across a deploy; the library itself would take two
round trips to answer the headers and a third for the key (benchmarks/rate_limit.py). When the store is unreachable the request is served without a
limit and without the headers, with one warning: a rate limiter must not become an outage.
"""

import logging
import math
import threading
import time
from collections import deque
from dataclasses import dataclass
from functools import cache
from typing import Protocol

import redis
from django.conf import settings
from redis.backoff import NoBackoff
from redis.retry import Retry
from rest_framework.throttling import BaseThrottle

from apps.api.rates import Rate, rate_parse
from apps.common.errors import RateLimited
from apps.common.redis_timing import timed_connection_class

logger = logging.getLogger("apps.api")

POLICY = "default"
# The rate limiter waits this long for Redis before serving the request without a limit.
STORE_TIMEOUT_SECONDS = 1.0


@dataclass(frozen=True)
class WindowState:
    """What counting one request in its window answered."""

    allowed: bool
    limit: int
    window_seconds: int
    remaining: int
    # Whole seconds until one more request is available (`t`, and `Retry-After` on a 429).
    reset_seconds: int

    def headers(self) -> dict[str, str]:
        return {
            "RateLimit-Policy": f'"{POLICY}";q={self.limit};w={self.window_seconds}',
            "RateLimit": f'"{POLICY}";r={self.remaining};t={self.reset_seconds}',
        }


class _Store(Protocol):
    def hit(self, key: str, limit: int, window: int, now: float) -> tuple[bool, int, float]:
        """Count a request at `now` unless `limit` were counted since `now - window`.

        Returns (counted, requests in the window, timestamp of the request whose leaving the
        window frees the next one).
        """
        ...


# Counts a request at `now` in the window `key` (a list of timestamps newest first) unless
# `limit` were counted since `now - window`. Returns {counted (0/1), requests in the window, the
# timestamp that frees the next request}. Requests that left the window are dropped from the
# tail first, so every step is O(1) however high the limit (each entry is dropped once).
# Timestamps go back as strings: a Lua number returned to Redis is truncated to an integer.
_WINDOW_HIT_FUNCTION = """
local function window_hit(key, now_text, limit, window)
    local since = tonumber(now_text) - window
    while true do
        local tail = redis.call('LINDEX', key, -1)
        if not tail or tonumber(tail) > since then
            break
        end
        redis.call('RPOP', key)
    end
    local count = redis.call('LLEN', key)
    if count >= limit then
        return {0, count, redis.call('LINDEX', key, limit - 1)}
    end
    redis.call('LPUSH', key, now_text)
    redis.call('EXPIRE', key, window)
    return {1, count + 1, redis.call('LINDEX', key, -1)}
end
"""

# KEYS[1]: the window. ARGV: now, limit, window seconds.
_HIT_SCRIPT = (
    _WINDOW_HIT_FUNCTION
    + """
return window_hit(KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]))
"""
)

# A credential's key looked up and its request counted in one round trip (issue 14).
# KEYS[1]: the key's cached record (`key_record`): its secret's hash, a newline, the name of its
# window, a newline, the payload. ARGV: the hash of the secret the request sent (empty when a
# signed token was verified instead), now, limit, window seconds, the window key's text before
# and after the name, and the name to count under (empty: the record's). Returns {} when there
# is no record; {payload} when the hashes differ, counting nothing, so that knowing a key's
# public lookup id is not enough to spend its requests; {payload, counted, count, oldest}
# otherwise.
_GATED_HIT_SCRIPT = (
    _WINDOW_HIT_FUNCTION
    + """
local record = redis.call('GET', KEYS[1])
if not record or record == '-' then
    return {}
end
local hash_end = string.find(record, '\\n', 1, true)
local name_end = string.find(record, '\\n', hash_end + 1, true)
local payload = string.sub(record, name_end + 1)
if ARGV[1] ~= '' and string.sub(record, 1, hash_end - 1) ~= ARGV[1] then
    return {payload}
end
local name = ARGV[7]
if name == '' then
    name = string.sub(record, hash_end + 1, name_end - 1)
end
local hit = window_hit(ARGV[5] .. name .. ARGV[6], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]))
return {payload, hit[1], hit[2], hit[3]}
"""
)


# A tombstone in a key record's place (see `key_record_tombstone`): the gated script answers
# "no record" for it, and a record write never replaces it.
KEY_TOMBSTONE = b"-"

# KEYS[1]: a key record. ARGV: the record, its seconds to live. Writes it unless the place holds
# a tombstone; returns 1 when written.
_PUT_UNLESS_TOMBSTONE_SCRIPT = """
if redis.call('GET', KEYS[1]) == '-' then
    return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', tonumber(ARGV[2]))
return 1
"""


class _RedisStore:
    # The key prefix `limits` used: windows counted before this module survive a deploy.
    PREFIX = "LIMITS:"

    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(
            url,
            socket_connect_timeout=STORE_TIMEOUT_SECONDS,
            socket_timeout=STORE_TIMEOUT_SECONDS,
            # One immediate retry for a pooled connection Redis closed (a restart); a store that
            # is down costs two refused connects, not redis-py's default backoff of seconds.
            retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)),
            # Its time counts in each request's Redis time (the request metrics).
            connection_class=timed_connection_class(url),
        )
        self.script = self.client.register_script(_HIT_SCRIPT)
        self.gated_script = self.client.register_script(_GATED_HIT_SCRIPT)
        self.put_script = self.client.register_script(_PUT_UNLESS_TOMBSTONE_SCRIPT)

    def hit(self, key: str, limit: int, window: int, now: float) -> tuple[bool, int, float]:
        counted, count, oldest = self.script(keys=[self.PREFIX + key], args=[now, limit, window])
        return bool(counted), int(count), float(oldest)


class _MemoryStore:
    """The same window in this process (oldest first here), for the embedded default."""

    SWEEP_EVERY = 1024

    def __init__(self) -> None:
        self.windows: dict[str, deque[float]] = {}
        self.lock = threading.Lock()
        self.hits = 0

    def hit(self, key: str, limit: int, window: int, now: float) -> tuple[bool, int, float]:
        since = now - window
        with self.lock:
            self.hits += 1
            if self.hits % self.SWEEP_EVERY == 0:
                # Browser tokens each have a window: forget those that went quiet.
                for name in [k for k, v in self.windows.items() if not v or v[-1] <= since]:
                    del self.windows[name]
            entries = self.windows.setdefault(key, deque())
            while entries and entries[0] <= since:
                entries.popleft()
            if len(entries) >= limit:
                return False, len(entries), entries[len(entries) - limit]
            entries.append(now)
            return True, len(entries), entries[0]


_stores: dict[str, _Store] = {}
_stores_lock = threading.Lock()


def _store(url: str) -> _Store:
    store = _stores.get(url)
    if store is None:
        with _stores_lock:
            store = _stores.get(url)
            if store is None:
                store = _MemoryStore() if url.startswith("memory://") else _RedisStore(url)
                _stores[url] = store
    return store


# The namespace of every window's key (`limits`' layout, kept across the deploy).
_NAMESPACE = "api-key"


@cache
def _window_key_around_name(text: str) -> tuple[str, str]:
    """A window's key for the rate `text` with the name left out, as the texts around it."""
    marker = "\n"
    before, after = rate_parse(text).key_for(_NAMESPACE, marker).split(marker)
    return before, after


def _window_state(
    counted: bool, count: int, oldest: float, *, limit: int, window: int, now: float
) -> WindowState:
    # `oldest + window` is strictly after `now`, so this is at least 1 and exact for a whole
    # number of seconds. Clamped: a clock running ahead on another server must not promise a
    # wait longer than the window.
    reset = min(window, max(1, math.ceil(oldest + window - now)))
    return WindowState(
        allowed=counted,
        limit=limit,
        window_seconds=window,
        remaining=max(0, limit - count),
        reset_seconds=reset,
    )


def _store_unavailable() -> None:
    logger.warning("rate-limit store unavailable; serving without a limit", exc_info=True)


def rate_window_hit(*, identifier: str, rate_text: str | None = None) -> WindowState | None:
    """Count one request of `identifier` against `rate_text` (default `API_RATE_LIMIT`);
    None if the store is down."""
    rate: Rate = rate_parse(rate_text or settings.API_RATE_LIMIT)
    limit, window = rate.amount, rate.window_seconds
    now = time.time()
    key = rate.key_for(_NAMESPACE, identifier)
    try:
        counted, count, oldest = _store(settings.RATE_LIMIT_STORAGE_URL).hit(
            key, limit, window, now
        )
    except (redis.RedisError, OSError):
        _store_unavailable()
        return None
    return _window_state(counted, count, oldest, limit=limit, window=window, now=now)


# --- API keys cached beside their windows -------------------------------------------------------
#
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


class ApiKeyRateThrottle(BaseThrottle):
    def allow_request(self, request, view) -> bool:
        credential = request.auth
        if credential is None:
            return True
        if credential.counted is not None:  # counted when its key was looked up
            state = credential.counted.state
        else:
            state = rate_window_hit(identifier=credential.rate_limit_id)
        if state is None:
            return True
        # DRF sets the view's `headers` on whatever response the request ends with, the 429
        # and every other error included.
        view.headers.update(state.headers())
        if not state.allowed:
            raise RateLimited(state.reset_seconds)
        return True
