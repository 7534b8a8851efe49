"""Public identifiers: a type prefix, an underscore and a time-ordered ULID body.

`run_01JD3...` sorts by creation time as a string, so ids double as a stable tie-breaker in
keyset pagination, and a glance at one tells what it names.
"""

import os
import time

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _ulid() -> str:
    timestamp_ms = int(time.time() * 1000)
    value = (timestamp_ms << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    return f"{prefix}_{_ulid()}"


def id_factory(prefix: str):
    """A callable for a model field's `default=` (migrations need a module-level reference)."""
    return _IdFactory(prefix)


class _IdFactory:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def __call__(self) -> str:
        return new_id(self.prefix)

    def deconstruct(self):
        return ("apps.common.ids.id_factory", (self.prefix,), {})
