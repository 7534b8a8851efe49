"""Where windows are counted: Redis through Lua scripts (registered once, called by their SHA;
one round trip counts a request, or reads a key record and counts), or a window in this process
for the embedded default."""

import threading
from collections import deque
from typing import Protocol

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from apps.common.redis_timing import timed_connection_class

# The rate limiter waits this long for Redis before serving the request without a limit.
STORE_TIMEOUT_SECONDS = 1.0


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
