"""The latency histogram the usage rollup keeps: the console's one latency computation lives in
apps.common.latency (the Overview reads its percentiles with the same rule); these names stay
importable from here for the rollup's code."""

from apps.common.latency import (
    BOUNDARIES,
    LAST_BUCKET,
    RELATIVE_ERROR,
    bucket_of,
    bucket_value,
    percentiles,
)

__all__ = [
    "BOUNDARIES",
    "LAST_BUCKET",
    "RELATIVE_ERROR",
    "bucket_of",
    "bucket_value",
    "percentiles",
]
