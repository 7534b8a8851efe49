"""What counting one request costs: our moving window against the `limits` library's.

    REDIS_URL=redis://127.0.0.1:6379/0 uv run python benchmarks/rate_limit.py [--rounds 20000]

Every counted API request needs three answers: may it go, how many requests are left, and when
the next one frees up (the `RateLimit` and `Retry-After` headers). Ours gets all three from one
Lua script in one round trip (`apps.api.throttling`), and with a cached API key the key lookup
rides on the same call. The library's moving-window strategy needs `hit` and then
`get_window_stats` for the headers, and the key lookup stays a call of its own. This times each
way against the same Redis, with the same window layout, and counts the round trips to Redis each
makes per request. The library is only needed to run this comparison
(`uv run --with limits ...` when it is not installed).
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


class RoundTrips:
    """Counts what redis-py sends, whoever's client sends it: one send is one round trip."""

    def __init__(self) -> None:
        from redis.connection import Connection

        self.sent = 0
        original = Connection.send_packed_command

        def counted(connection, command, check_health=True):
            self.sent += 1
            return original(connection, command, check_health)

        Connection.send_packed_command = counted


def measure(label: str, count_one, *, rounds: int, trips: RoundTrips) -> dict:
    count_one()  # load scripts, open the connection
    samples = []
    before = trips.sent
    for _ in range(rounds):
        started = time.perf_counter()
        count_one()
        samples.append((time.perf_counter() - started) * 1e6)
    per_request = (trips.sent - before) / rounds
    samples.sort()
    return {
        "way": label,
        "median_us": statistics.median(samples),
        "p99_us": samples[int(len(samples) * 0.99) - 1],
        "round_trips": per_request,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20000)
    rounds = parser.parse_args().rounds

    import django

    django.setup()
    import redis
    from django.conf import settings

    from apps.api import throttling

    if not settings.REDIS_URL:
        sys.exit("Set REDIS_URL: the rate limiter counts in Redis.")
    settings.RATE_LIMIT_STORAGE_URL = settings.REDIS_URL
    # A limit no round reaches, so every request is counted the same way.
    settings.API_RATE_LIMIT = f"{rounds * 10}/minute"
    client = redis.Redis.from_url(settings.REDIS_URL)
    trips = RoundTrips()
    key_name = "bench:key-record"
    throttling.key_record_put(
        key_name,
        throttling.key_record(secret_hash="h", window_name="bench-gated", payload=b"{}"),
        seconds=600,
    )
    results = [
        measure(
            "ours: count (a signed token)",
            lambda: throttling.rate_window_hit(identifier="bench-plain"),
            rounds=rounds,
            trips=trips,
        ),
        measure(
            "ours: key lookup + count",
            lambda: throttling.key_record_hit(key_name, secret_hash="h"),
            rounds=rounds,
            trips=trips,
        ),
    ]
    try:
        from limits import parse
        from limits.storage import storage_from_string
        from limits.strategies import MovingWindowRateLimiter
    except ImportError:
        print("limits is not installed: only our own way measured")
    else:
        limiter = MovingWindowRateLimiter(storage_from_string(settings.REDIS_URL))
        item = parse(settings.API_RATE_LIMIT)

        def library_count() -> None:
            limiter.hit(item, "api-key", "bench-library")
            limiter.get_window_stats(item, "api-key", "bench-library")

        def library_lookup_and_count() -> None:
            client.get(key_name)
            library_count()

        results += [
            measure("limits: hit + window stats", library_count, rounds=rounds, trips=trips),
            measure(
                "limits: key lookup, hit + window stats",
                library_lookup_and_count,
                rounds=rounds,
                trips=trips,
            ),
        ]
    client.delete(key_name)
    print(f"{rounds} requests each, Redis at {settings.REDIS_URL}")
    print(f"{'way':42} {'median µs':>10} {'p99 µs':>10} {'round trips':>12}")
    for row in results:
        print(
            f"{row['way']:42} {row['median_us']:10.0f} {row['p99_us']:10.0f} "
            f"{row['round_trips']:12.1f}"
        )


if __name__ == "__main__":
    main()
