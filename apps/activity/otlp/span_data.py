"""A decoded span, `SpanData`: the JSON-able dict decoding makes and a waiting span stores,
and its times (nanoseconds since the epoch, as text) read as datetimes."""

from datetime import UTC, datetime, timedelta
from typing import Any

SpanData = dict[str, Any]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def nanos_datetime(value: int) -> datetime:
    """The instant `value` nanoseconds after the epoch, to the microsecond (cut, not rounded)."""
    # timedelta's positional (days, seconds, microseconds): a sixth faster than the keyword,
    # four times per span.
    return _EPOCH + timedelta(0, 0, value // 1000)


def _datetime(nanos: str | None) -> datetime | None:
    if nanos is None:
        return None
    return nanos_datetime(int(nanos))


def started_at(span: SpanData) -> datetime:
    """A span's start, as its step's `started_at`."""
    start = _datetime(span["start"])
    assert start is not None  # a span without a start is rejected when decoded
    return start
