"""Timestamps as the contract writes them: ISO 8601 in UTC with a `Z`."""

from datetime import UTC, datetime


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
