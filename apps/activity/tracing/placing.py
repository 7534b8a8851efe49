"""Which run each span belongs to (its trace's, once its chain of parents reaches a root or a
recorded step), and the spans that can never be placed rejected: an id or a parent in another
trace, parents forming a cycle, nesting deeper than MAX_SPAN_DEPTH."""

from collections.abc import Callable

from apps.activity import otlp
from apps.activity.recording import MAX_STEP_DEPTH
from apps.activity.tracing.result import SpansResult

# Spans nest at most as deep as steps recorded through /v1/ingest may (counted within what one
# request can see: its spans and those waiting in their traces).
MAX_SPAN_DEPTH = MAX_STEP_DEPTH


def _dropper(
    pool: dict[str, otlp.SpanData], incoming: dict[str, otlp.SpanData], result: SpansResult
) -> Callable[[str, str], None]:
    """Take a span out of the pool; one of this request's is counted as rejected."""

    def drop(span_id: str, message: str) -> None:
        if span_id in incoming:
            result.reject(1, message)
        pool.pop(span_id, None)

    return drop


def _foreign_drop(pool: dict[str, otlp.SpanData], stored: dict, drop) -> None:
    """Reject the spans whose id, or whose parent, is recorded in another trace."""
    for span_id, span in list(pool.items()):
        known = stored.get(span_id)
        if known is not None and known[0] != span["trace_id"]:
            drop(span_id, f"span {span_id}: its id is recorded in another trace.")
            continue
        parent_id = span["parent_span_id"]
        parent = pool.get(parent_id) if parent_id else None
        parent_trace = parent["trace_id"] if parent else stored.get(parent_id, (None,))[0]
        if parent_id and parent_trace is not None and parent_trace != span["trace_id"]:
            drop(span_id, f"span {span_id}: parent {parent_id} belongs to another trace.")


def _spans_place(
    pool: dict[str, otlp.SpanData], orphans: dict[str, str], stored: dict, drop
) -> dict[str, str]:
    """Which run each span belongs to (span id -> run id): the trace's, once its chain reaches a
    root or a step. Each span is walked once: a walk stops at a span already placed or already
    known to wait. Spans nested deeper than MAX_SPAN_DEPTH are rejected."""
    placed: dict[str, str] = {}
    unplaced: set[str] = set()
    depth: dict[str, int] = {}  # levels below the top of what this request can see
    for span_id in pool:
        if span_id in orphans or span_id in placed or span_id in unplaced:
            continue
        chain = []
        current: str | None = span_id
        run_id = None
        top = 0
        while current is not None:
            if current in placed:
                run_id, top = placed[current], depth[current] + 1
                break
            if current in unplaced:
                break
            if current in stored and current not in pool:
                run_id = stored[current][1]
                break
            link = pool.get(current)
            if link is None:
                break
            chain.append(current)
            if link["parent_span_id"] is None:
                run_id = link["trace_id"]
                break
            current = link["parent_span_id"]
        if run_id is None:
            unplaced.update(chain)  # a chain that stops at an unknown parent waits
            continue
        for level, member in enumerate(reversed(chain), start=top):
            placed[member] = run_id
            depth[member] = level
    for span_id in [span_id for span_id, level in depth.items() if level >= MAX_SPAN_DEPTH]:
        drop(span_id, f"span {span_id}: nests deeper than {MAX_SPAN_DEPTH} levels (the limit "
                      "of span depth).")  # fmt: skip
        del placed[span_id]
    return placed


def _traces_of(
    pool: dict[str, otlp.SpanData], placed: dict[str, str]
) -> list[tuple[list[otlp.SpanData], list[otlp.SpanData]]]:
    """Each trace with a root: its roots (normally one, in the order they came) and its
    placed spans."""
    roots: dict[str, list[otlp.SpanData]] = {}
    by_run: dict[str, list[otlp.SpanData]] = {}
    for span_id, span in pool.items():
        if span_id in placed:
            by_run.setdefault(placed[span_id], []).append(span)
            if span["parent_span_id"] is None:
                roots.setdefault(span["trace_id"], []).append(span)
    return [(trace_roots, by_run.get(trace_id, [])) for trace_id, trace_roots in roots.items()]


def _drop_cycles(pool: dict[str, otlp.SpanData], drop) -> None:
    """Reject the spans whose parents lead back to themselves (never placeable)."""
    state: dict[str, int] = {}  # 1 = on the current walk, 2 = done
    for start in list(pool):
        walk: list[str] = []
        current: str | None = start
        while current is not None and current in pool and current not in state:
            state[current] = 1
            walk.append(current)
            current = pool[current]["parent_span_id"]
        if current is not None and state.get(current) == 1:
            cycle = walk[walk.index(current) :]
            for span_id in cycle:
                drop(span_id, f"span {span_id}: its parents form a cycle.")
        for span_id in walk:
            state[span_id] = 2
