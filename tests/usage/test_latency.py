"""The histogram's percentiles keep the promised precision against exact nearest-rank ones."""

import math
import random

import pytest

from apps.usage.latency import BOUNDARIES, RELATIVE_ERROR, bucket_of, bucket_value, percentiles


def exact_nearest_rank(values: list[float], percent: int) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(percent * len(ordered) / 100)) - 1]


@pytest.mark.parametrize("seed", range(20))
def test_percentiles_are_within_the_promised_error(seed):
    rng = random.Random(seed)
    values = [rng.lognormvariate(rng.uniform(3, 10), rng.uniform(0.2, 1.5)) for _ in range(997)]
    histogram: dict[int, int] = {}
    for value in values:
        histogram[bucket_of(value)] = histogram.get(bucket_of(value), 0) + 1
    p50, p95 = percentiles(histogram, (50, 95))
    for reported, percent in ((p50, 50), (p95, 95)):
        exact = exact_nearest_rank(values, percent)
        # Rounding to 0.1 ms adds at most 0.05 ms.
        assert abs(reported - exact) <= exact * RELATIVE_ERROR + 0.05, (percent, exact, reported)


def test_bucket_edges():
    assert RELATIVE_ERROR < 0.0444
    assert bucket_of(0.0) == 0 and bucket_value(0) == 0.5
    assert bucket_of(1.0) == 1 and bucket_of(BOUNDARIES[1]) == 2
    assert bucket_of(1e12) == len(BOUNDARIES) and bucket_value(len(BOUNDARIES)) == 2.0**24


def test_empty_histogram_has_no_percentiles():
    assert percentiles({}, (50, 95)) == [None, None]
    assert percentiles({3: 0}, (50,)) == [None]
