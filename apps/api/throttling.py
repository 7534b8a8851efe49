"""Per-key rate limiting on a shared counter (Redis, or memory on the embedded default).

The `limits` moving window gives the reset time that `Retry-After` needs, and unlike DRF's
cache throttles it does not race between processes.
"""

import logging
import threading
import time
from functools import cache

from django.conf import settings
from limits import parse
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter
from rest_framework.throttling import BaseThrottle

from apps.common.errors import RateLimited

logger = logging.getLogger("apps.api")


_limiter_lock = threading.Lock()


@cache
def _build_limiter(storage_url: str) -> MovingWindowRateLimiter:
    return MovingWindowRateLimiter(storage_from_string(storage_url))


def _limiter(storage_url: str) -> MovingWindowRateLimiter:
    # `limits` imports its Redis dependency lazily and not thread-safely: threads of a fresh
    # gunicorn worker building it at once got "minimum version of 3.0 for 'redis'" (a 500).
    with _limiter_lock:
        return _build_limiter(storage_url)


class ApiKeyRateThrottle(BaseThrottle):
    def allow_request(self, request, view) -> bool:
        credential = request.auth
        if credential is None:
            return True
        limit = parse(settings.API_RATE_LIMIT)
        limiter = _limiter(settings.RATE_LIMIT_STORAGE_URL)
        try:
            if limiter.hit(limit, "api-key", credential.rate_limit_id):
                return True
            stats = limiter.get_window_stats(limit, "api-key", credential.rate_limit_id)
        except Exception:
            logger.warning("rate-limit store unavailable; serving without a limit", exc_info=True)
            return True
        raise RateLimited(int(stats.reset_time - time.time()) + 1)
