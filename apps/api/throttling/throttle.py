"""DRF's throttle: each request of a credential counted (or already counted when its key was looked
up), its headers set on whatever response the request ends with, a 429 past the limit."""

from rest_framework.throttling import BaseThrottle

from apps.api.throttling.windows import rate_window_hit
from apps.common.errors import RateLimited


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
