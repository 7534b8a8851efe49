"""A fixed log-scale latency histogram: percentiles over any set of days, with a known error.

Exact percentiles cannot be added up day by day, but histograms can. Bucket 0 holds turn
latencies under 1 ms; bucket k (1..192) holds [2^((k-1)/8), 2^(k/8)) ms, so each bucket is
9.05 % wide; bucket 193 holds 2^24 ms (about 4.7 hours) and above. A percentile is the bucket
of the nearest-rank run (the ceil(p * n)-th smallest latency), reported as the bucket's
geometric middle: within 4.43 % of that run's latency (within 0.5 ms under 1 ms; latencies
over 4.7 hours are reported as 2^24 ms).

The boundaries are one list of floats shared by Python (`bisect`) and PostgreSQL
(`width_bucket` over the same array), so live recording and the rebuild put every latency in
the same bucket, even one exactly on a boundary.

This is the console's one latency computation: the Usage page reads these histograms from
its daily rollup (apps.usage), the Overview groups an Agent's runs into the same buckets in
SQL (apps.activity.overview, which also filters by model, user and status); both read the
percentiles off with `percentiles` below, so the same runs give the same p50 and p95.
"""

import math
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping

STEPS_PER_DOUBLING = 8
TOP_EXPONENT = 24
# `width_bucket(latency, BOUNDARIES)` in PostgreSQL is `bucket_of(latency)` (the rebuild and the
# Overview pass BOUNDARIES as the array parameter).
BUCKET_SQL = "width_bucket({column}, %s::float8[])"
# Lower bounds of buckets 1..193: 2^0, 2^(1/8), ..., 2^24 ms.
BOUNDARIES: tuple[float, ...] = tuple(
    2 ** (i / STEPS_PER_DOUBLING) for i in range(TOP_EXPONENT * STEPS_PER_DOUBLING + 1)
)
LAST_BUCKET = len(BOUNDARIES)
RELATIVE_ERROR = 2 ** (1 / (2 * STEPS_PER_DOUBLING)) - 1  # 0.0443


def bucket_of(latency_ms: float) -> int:
    return bisect_right(BOUNDARIES, latency_ms)


def bucket_value(bucket: int) -> float:
    """The latency a bucket stands for: its geometric middle."""
    if bucket <= 0:
        return 0.5
    if bucket >= LAST_BUCKET:
        return BOUNDARIES[-1]
    return math.sqrt(BOUNDARIES[bucket - 1] * BOUNDARIES[bucket])


def percentiles(histogram: Mapping[int, int], wanted: Iterable[int]) -> list[float | None]:
    """Nearest-rank percentiles (`wanted` in whole percent) of a {bucket: runs} histogram,
    rounded to 0.1 ms; None for an empty histogram."""
    total = sum(count for count in histogram.values() if count > 0)
    wanted = list(wanted)
    if total == 0:
        return [None] * len(wanted)
    ordered = sorted((bucket, count) for bucket, count in histogram.items() if count > 0)
    results: list[float | None] = []
    for percent in wanted:
        rank = max(1, -(-percent * total // 100))  # ceil in integers: no float rounding
        seen = 0
        for bucket, count in ordered:
            seen += count
            if seen >= rank:
                results.append(round(bucket_value(bucket), 1))
                break
    return results


def merged(histograms: Iterable[Mapping[int, int]]) -> dict[int, int]:
    """One histogram of several (several days into a period): counts add up per bucket."""
    total: Counter[int] = Counter()
    for histogram in histograms:
        total.update(histogram)
    return dict(total)
