"""Rate texts such as "600/minute": parsed once, and named the way the moving windows are keyed.

The grammar and the window keys are those of the `limits` library, which this project used
before counting in one Redis round trip of its own (apps.api.throttling; the comparison is
benchmarks/rate_limit.py): "N/unit", "N per unit" or "N/M units", where unit is second, minute,
hour or day. Windows keyed the library's way carry across a deploy.
"""

import re
from dataclasses import dataclass
from functools import cache

from django.core.exceptions import ImproperlyConfigured

_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_RATE = re.compile(
    r"^\s*(?P<amount>\d+)\s*(?:/|\s+per\s+)\s*(?P<multiples>\d+)?\s*"
    r"(?P<unit>second|minute|hour|day)s?\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Rate:
    amount: int  # requests allowed in the window
    multiples: int  # the window is this many units
    unit: str

    @property
    def window_seconds(self) -> int:
        return self.multiples * _SECONDS[self.unit]

    def key_for(self, namespace: str, identifier: str) -> str:
        """The window's key: `limits`' layout, so windows counted before carry over."""
        return f"LIMITER/{namespace}/{identifier}/{self.amount}/{self.multiples}/{self.unit}"


@cache
def rate_parse(text: str) -> Rate:
    """The rate a setting such as API_RATE_LIMIT says; ImproperlyConfigured naming it if not."""
    match = _RATE.match(text)
    if match is None or int(match["amount"]) < 1 or match["multiples"] in ("0",):
        raise ImproperlyConfigured(
            f"A rate must read like '600/minute', '20 per hour' or '10/5 seconds'; got {text!r}"
        )
    return Rate(
        amount=int(match["amount"]),
        multiples=int(match["multiples"] or 1),
        unit=match["unit"].lower(),
    )
