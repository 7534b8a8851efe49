"""OTLP recording is linear in the spans of a request, whatever their shape (issue 34).

The work a request costs is counted, not timed: the Python lines the recording code executes
(`sys.settrace` over the otlp/, tracing/ and recording/ packages of apps/activity, every loop
iteration a line event) and the SQL statements it sends (CaptureQueriesContext). Each generated shape is
posted at n and at 4n spans; linear work grows at most fourfold (the fixed cost of a request
makes it less; a generated shape's mix of placed and waiting spans varies a little with its
size, hence the slack), quadratic work about sixteenfold, and the statements do not grow."""

import itertools
import random
import sys
from pathlib import Path

import orjson
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from apps.activity.models import PendingSpan, RunStep
from tests.examples import examples

PATH = "/v1/otlp/v1/traces"
T0 = 1_738_324_800_000_000_000
# The recording code whose lines are counted: modules, and packages (every module in them).
_TRACED = ("apps/activity/otlp/", "apps/activity/tracing/", "apps/activity/recording/")
_ROOT = Path(__file__).resolve().parents[2]
_FILES = tuple(
    path.relative_to(_ROOT).as_posix()
    for name in _TRACED
    for path in ((_ROOT / name).glob("*.py") if name.endswith("/") else [_ROOT / name])
)
SMALL, LARGE = 80, 320

pytestmark = pytest.mark.django_db


_RUNS = itertools.count()


class _Ids:
    """Fresh trace and span ids for each call, the same seed included: the examples share one
    database, and hypothesis runs an example again while shrinking."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(f"{seed}-{next(_RUNS)}")

    def trace(self) -> str:
        return f"{self.random.getrandbits(128) | 1:032x}"

    def span(self) -> str:
        return f"{self.random.getrandbits(64) | 1:016x}"


def _span(trace, span_id, parent=None, *, name="step", attributes=None, offset=0):
    span = {
        "traceId": trace,
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": str(T0 + offset),
        "endTimeUnixNano": str(T0 + offset + 1_000_000),
        "attributes": [
            {"key": key, "value": {"stringValue": value}}
            for key, value in (attributes or {}).items()
        ],
    }
    if parent:
        span["parentSpanId"] = parent
    return span


def _body(spans):
    return orjson.dumps(
        {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}
    )


def _requests(shape: str, n: int, ids: _Ids, mix: float, order: random.Random) -> list[list]:
    """The requests (lists of OTLP/JSON spans) of one shape at size n."""
    trace = ids.trace()
    if shape == "roots":  # parentless spans sharing one trace id
        return [[_span(trace, ids.span(), offset=i) for i in range(n)]]
    if shape == "chain":  # one deep chain, children first as exporters send them
        chain = [ids.span() for _ in range(n)]
        spans = [_span(trace, chain[0])] + [
            _span(trace, chain[i], chain[i - 1], offset=i) for i in range(1, n)
        ]
        return [spans[::-1]]
    if shape == "waiting chain":  # a deep chain whose top never came: everything waits
        chain = [ids.span() for _ in range(n + 1)]
        return [[_span(trace, chain[i], chain[i - 1], offset=i) for i in range(1, n + 1)]]
    if shape == "fan-out":
        root = ids.span()
        return [[_span(trace, root)] + [_span(trace, ids.span(), root) for _ in range(n - 1)]]
    if shape == "many traces":
        spans = []
        for _ in range(n // 2):
            trace, root = ids.trace(), ids.span()
            spans += [_span(trace, root), _span(trace, ids.span(), root)]
        return [spans]
    if shape == "repeated ids":  # every span id twice in one request
        root = ids.span()
        spans = [_span(trace, root)]
        for _ in range(n // 2 - 1):
            span_id = ids.span()
            spans += [_span(trace, span_id, root), _span(trace, span_id, root, name="again")]
        return [spans]
    if shape == "sent twice":  # the same request again
        root = ids.span()
        spans = [_span(trace, root)] + [_span(trace, ids.span(), root) for _ in range(n - 1)]
        return [spans, spans]
    if shape == "parents later":  # children first, then their parents in a second request
        roots = [ids.span() for _ in range(max(1, int(n * mix / 2)))]
        children = [
            _span(trace, ids.span(), roots[i % len(roots)], offset=i) for i in range(n // 2)
        ]
        return [children, [_span(trace, root, offset=i) for i, root in enumerate(roots)]]
    if shape == "detached tool calls":  # AI SDK roots and tool calls of one conversation
        conversation = {"ai.telemetry.metadata.conversationId": f"conv-{ids.span()}"}
        agents = [
            _span(ids.trace(), ids.span(), name="ai.streamText", attributes=conversation,
                  offset=i * 1_000_000)
            for i in range(max(1, int(n * mix / 2)))
        ]  # fmt: skip
        tools = [
            _span(ids.trace(), ids.span(), name="ai.toolCall", attributes=conversation,
                  offset=order.randrange(n) * 1_000_000)
            for _ in range(n - len(agents))
        ]  # fmt: skip
        return [agents + tools]
    # "forest": a random mix of roots, children, missing parents and traces.
    traces = [ids.trace() for _ in range(max(1, int(n * mix / 4)))]
    spans, known = [], []
    for i in range(n):
        trace = traces[order.randrange(len(traces))]
        roll = order.random()
        if not known or roll < mix / 3:
            parent = None
        elif roll < mix / 2:
            parent = ids.span()  # never arrives: waits
        else:
            parent_trace, parent = known[order.randrange(len(known))]
            trace = parent_trace
        span_id = ids.span()
        known.append((trace, span_id))
        spans.append(_span(trace, span_id, parent, offset=i))
    order.shuffle(spans)
    return [spans]


def _cost(client, requests) -> tuple[int, int]:
    """(lines of recording code executed, SQL statements) over the requests, each answered 200."""
    lines = 0

    def tracer(frame, event, arg):
        nonlocal lines
        if frame.f_code.co_filename.endswith(_FILES):
            lines += 1
            return tracer
        return None

    statements = 0
    for spans in requests:
        body = _body(spans)
        connection.queries_log.clear()  # a full log (9,000 entries) would count nothing
        with CaptureQueriesContext(connection) as queries:
            sys.settrace(tracer)
            try:
                response = client.post(PATH, data=body, content_type="application/json")
            finally:
                sys.settrace(None)
        assert response.status == 200, response.body
        statements += len(queries)
    return lines, statements


SHAPES = ["roots", "chain", "waiting chain", "fan-out", "many traces", "repeated ids",
          "sent twice", "parents later", "detached tool calls", "forest"]  # fmt: skip


@pytest.fixture
def writer(make_api):
    return make_api(scopes=["activity:write"])


# No `explain` phase: it traces lines itself (sys.settrace), which would replace the counter.
@settings(
    max_examples=examples(20),
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    shape=st.sampled_from(SHAPES),
    mix=st.floats(min_value=0.05, max_value=1.0),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_recording_work_grows_linearly_with_the_spans_of_any_shape(writer, shape, mix, seed):
    ids = _Ids(seed)
    small = _cost(writer, _requests(shape, SMALL, ids, mix, random.Random(seed)))
    large = _cost(writer, _requests(shape, LARGE, ids, mix, random.Random(seed)))
    assert large[0] <= LARGE / SMALL * 1.5 * small[0], (shape, small, large)
    assert large[1] <= small[1] + 2, (shape, small, large)


def test_the_counted_code_is_the_recording_code():
    """A traced module that moves is not silently left out of the count."""
    assert all((_ROOT / name).exists() for name in _TRACED), _TRACED
    assert {
        "apps/activity/otlp/decoding.py",
        "apps/activity/otlp/values.py",
        "apps/activity/tracing/placing.py",
        "apps/activity/tracing/steps.py",
        "apps/activity/recording/unit.py",
        "apps/activity/recording/steps.py",
    } <= set(_FILES)


@pytest.mark.parametrize("shape", SHAPES)
def test_every_shape_is_counted_at_both_sizes(writer, shape):
    """The examples above cover each shape at least once, whatever hypothesis draws."""
    ids = _Ids(7)
    small = _cost(writer, _requests(shape, SMALL, ids, 0.5, random.Random(7)))
    large = _cost(writer, _requests(shape, LARGE, ids, 0.5, random.Random(7)))
    assert large[0] <= LARGE / SMALL * 1.15 * small[0], (shape, small, large)
    assert large[1] <= small[1] + 2, (shape, small, large)


def test_ten_thousand_roots_of_one_trace_are_one_run(writer):
    """The shape of the attack, at full size: every span recorded, the trace one run."""
    ids = _Ids(1)
    (spans,) = _requests("roots", 10_000, ids, 1.0, random.Random(1))
    with CaptureQueriesContext(connection) as queries:
        response = writer.post(PATH, data=_body(spans), content_type="application/json")
    assert response.status == 200 and response.json() == {}
    statements = len(queries)
    assert RunStep.objects.count() == 10_000 and not PendingSpan.objects.exists()
    assert statements < 40, statements
