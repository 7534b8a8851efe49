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
reads before it counts (`key_record_hit` in `key_records`). It keeps the
layout of the `limits` library's moving window, which counted here before (the same key, a list
of timestamps newest first), so windows carry across a deploy; the library itself would take two
round trips to answer the headers and a third for the key (benchmarks/rate_limit.py). When the store is unreachable the request is served without a
limit and without the headers, with one warning: a rate limiter must not become an outage.

One module per subject: `windows` (a request counted, its headers), `stores` (Redis and its
scripts, or memory), `key_records` (API keys cached beside their windows), `throttle` (DRF's
throttle class). Callers import from `apps.api.throttling`; the names below are its public face.
"""

from apps.api.throttling.key_records import (
    CountedRequest,
    KeyStoreUnavailable,
    key_record,
    key_record_delete,
    key_record_hit,
    key_record_put,
    key_record_tombstone,
    key_records_enabled,
)
from apps.api.throttling.throttle import ApiKeyRateThrottle
from apps.api.throttling.windows import WindowState, rate_window_hit

__all__ = [
    "ApiKeyRateThrottle",
    "CountedRequest",
    "KeyStoreUnavailable",
    "WindowState",
    "key_record",
    "key_record_delete",
    "key_record_hit",
    "key_record_put",
    "key_record_tombstone",
    "key_records_enabled",
    "rate_window_hit",
]
