"""A request counted in its credential's moving window, and the IETF draft's headers that report
what is left (`WindowState`); the store being down serves the request without a limit."""

import logging
import math
import time
from dataclasses import dataclass
from functools import cache

import redis
from django.conf import settings

from apps.api.rates import Rate, rate_parse
from apps.api.throttling.stores import _store

logger = logging.getLogger("apps.api")

POLICY = "default"


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
