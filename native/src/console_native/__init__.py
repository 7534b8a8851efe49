"""The Agent console's helpers in C (native/README.md)."""

from ._json import compact_json, split_json

__all__ = ["compact_json", "split_json"]
