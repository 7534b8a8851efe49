"""Hostile OTLP traffic through gunicorn (issue 34): the worst shape of one request, and whether
the service still answers everyone else while several such requests are in flight.

    uv run python benchmarks/otlp_hostile.py [--spans 10000] [--repeats 3] [--concurrent 8]
        [--concurrent-spans 10000] [--probe-seconds 20] [--tiny]

Starts the service as the README runs it in production (gunicorn, 2 workers x 4 threads, on
loopback; benchmarks/recording.py's server, database and key: RECORDING_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/agent_console_recording). Two cases, each request an
`ExportTraceServiceRequest` in protobuf whose spans all lack a parent and share one trace id
(the shape that was quadratic: 2,000 spans took 42.7 s, 10,001 spans 22.7 minutes):

- one request of `--spans` spans, `--repeats` times (a new trace each time): the time from
  sending the body to the last byte of the answer, on loopback (an upper bound of the server's
  time), and that every span was recorded;
- `--concurrent` clients posting such requests of `--concurrent-spans` spans back to back for
  `--probe-seconds`, while one more client asks `GET /v1/connection` every 50 ms: that probe's
  p50 / p99 / max, and how the hostile requests were answered (200, or 503 with Retry-After
  when a process already records as many as it may: OTLP exporters retry those).

`--tiny` runs both for a moment at a small size (the smoke run of tests/benchmarks/).
"""

import argparse
import http.client
import os
import signal
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import benchmark_environment  # noqa: E402 - after the path is set
from benchmarks.recording import (  # noqa: E402
    DEFAULT_URL,
    prepare,
    settle,
    start_server,
    wait_until_up,
)

T0 = 1_738_324_800_000_000_000
_sequence = iter(range(1, 1 << 62))
_sequence_lock = threading.Lock()


def _next() -> int:
    with _sequence_lock:
        return next(_sequence)


def roots_body(spans: int) -> bytes:
    """`spans` parentless spans of one new trace, with a few attributes each (as an SDK sends)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    stamp = time.time_ns() & ((1 << 40) - 1)
    trace_id = ((os.getpid() << 88) | (stamp << 40) | _next()).to_bytes(16, "big")
    request = ExportTraceServiceRequest()
    scope_spans = request.resource_spans.add().scope_spans.add()
    scope_spans.scope.name = "hostile"
    # 64 bits: 30 of the clock, 20 of the sequence, 14 of the index (16,384 spans a request).
    base = (((stamp & ((1 << 30) - 1)) << 20) | (_next() & ((1 << 20) - 1))) << 14
    for index in range(spans):
        span = scope_spans.spans.add()
        span.trace_id = trace_id
        span.span_id = (base + index + 1).to_bytes(8, "big")
        span.name = f"execute_tool t{index % 7}"
        span.start_time_unix_nano = T0 + index * 1000
        span.end_time_unix_nano = T0 + index * 1000 + 500
        span.attributes.extend(
            [
                KeyValue(key="gen_ai.operation.name", value=AnyValue(string_value="execute_tool")),
                KeyValue(key="gen_ai.tool.name", value=AnyValue(string_value=f"t{index % 7}")),
            ]
        )
    return request.SerializeToString()


def post(port: int, key: str, body: bytes, timeout: float = 600) -> tuple[int, bytes, float]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    started = time.perf_counter()
    connection.request(
        "POST",
        "/v1/otlp/v1/traces",
        body=body,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/x-protobuf"},
    )
    response = connection.getresponse()
    answer = response.read()
    elapsed = time.perf_counter() - started
    connection.close()
    return response.status, answer, elapsed


def one_request_case(port: int, key: str, spans: int, repeats: int) -> list[float]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    times = []
    for _ in range(repeats):
        body = roots_body(spans)
        settle()
        status, answer, elapsed = post(port, key, body)
        response = ExportTraceServiceResponse()
        response.ParseFromString(answer)
        if status != 200 or response.partial_success.rejected_spans:
            raise SystemExit(f"the request was not recorded whole: {status} {response}")
        times.append(elapsed)
        print(
            f"  {spans} root spans of one trace, one request ({len(body) / 1024:.0f} KB): "
            f"{elapsed:.2f} s",
            flush=True,
        )
    return times


def concurrent_case(
    port: int, keys: list[str], probe_key: str, clients: int, spans: int, seconds: float
) -> dict:
    stop_at = time.monotonic() + seconds
    statuses: Counter = Counter()
    hostile_times: list[float] = []
    lock = threading.Lock()

    def hostile(key: str) -> None:
        while time.monotonic() < stop_at:
            body = roots_body(spans)
            try:
                status, _answer, elapsed = post(port, key, body)
            except OSError as error:
                status, elapsed = type(error).__name__, 0.0
            with lock:
                statuses[status] += 1
                if status == 200:
                    hostile_times.append(elapsed)
            if status == 503:
                time.sleep(0.2)  # an exporter backs off before it retries

    probes: list[float] = []
    probe_statuses: Counter = Counter()

    def probe() -> None:
        time.sleep(min(1.0, seconds / 4))  # the hostile requests are in flight first
        while time.monotonic() < stop_at:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            started = time.perf_counter()
            connection.request(
                "GET", "/v1/connection", headers={"Authorization": f"Bearer {probe_key}"}
            )
            response = connection.getresponse()
            response.read()
            probes.append(time.perf_counter() - started)
            probe_statuses[response.status] += 1
            connection.close()
            time.sleep(0.05)

    threads = [
        threading.Thread(target=hostile, args=(keys[i % len(keys)],)) for i in range(clients)
    ]
    threads.append(threading.Thread(target=probe))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    probes.sort()

    def quantile(values: list[float], q: float) -> float:
        return values[min(len(values) - 1, int(q * len(values)))] * 1000 if values else 0.0

    return {
        "probes": len(probes),
        "probe_statuses": dict(probe_statuses),
        "p50": quantile(probes, 0.50),
        "p99": quantile(probes, 0.99),
        "max": probes[-1] * 1000 if probes else 0.0,
        "hostile": dict(statuses),
        "hostile_p50": statistics.median(hostile_times) if hostile_times else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrent", type=int, default=8)
    parser.add_argument("--concurrent-spans", type=int, default=10_000)
    parser.add_argument("--probe-seconds", type=float, default=20)
    parser.add_argument("--port", type=int, default=8772)
    parser.add_argument("--tiny", action="store_true", help="both cases, a moment, small sizes")
    args = parser.parse_args()
    if args.tiny:
        args.spans, args.repeats, args.concurrent_spans, args.probe_seconds = 200, 1, 100, 2

    env = benchmark_environment(os.environ.get("RECORDING_DATABASE_URL", DEFAULT_URL))
    credentials = prepare(args.concurrent)
    keys = [credential["key"] for credential in credentials]
    print(
        f"hostile OTLP through gunicorn (2 workers x 4 threads), {os.cpu_count()} CPUs; load "
        f"average before: {' / '.join(f'{v:.2f}' for v in os.getloadavg())} (1/5/15 min)",
        flush=True,
    )
    server = start_server(env, args.port)
    try:
        wait_until_up(args.port, keys[0])
        times = one_request_case(args.port, keys[0], args.spans, args.repeats)
        print(
            f"  one request of {args.spans} roots: median {statistics.median(times):.2f} s, "
            f"max {max(times):.2f} s (target <= 2 s)",
            flush=True,
        )
        settle()
        result = concurrent_case(
            args.port, [keys[1]], keys[0], args.concurrent, args.concurrent_spans,
            args.probe_seconds,
        )  # fmt: skip
        print(
            f"  {args.concurrent} clients posting {args.concurrent_spans} roots each, "
            f"{args.probe_seconds:g} s: GET /v1/connection x {result['probes']} "
            f"{result['probe_statuses']}: p50 {result['p50']:.0f} ms, p99 {result['p99']:.0f} "
            f"ms, max {result['max']:.0f} ms (target p99 <= 500 ms); hostile requests "
            f"answered {result['hostile']}, a recorded one in {result['hostile_p50']:.2f} s "
            "(median)",
            flush=True,
        )
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
