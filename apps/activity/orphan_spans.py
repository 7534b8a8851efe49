"""The AI SDK's detached tool calls given back to their run (apps.activity.tracing places the
other spans).
"""

import heapq
from typing import Any

from django.db import connection, models

from apps.activity import otlp, span_mapping
from apps.activity.models import PendingSpan, Run, RunStep
from apps.activity.trace_locks import locks_take
from apps.workspaces.models import Agent

_CONVERSATION_KEYS = ("conversationId", "conversation_id", "chatId", "gen_ai.conversation.id")


def orphan_tool_calls_attach(
    agent: Agent, incoming: dict[str, otlp.SpanData], pool: dict[str, otlp.SpanData]
) -> dict[str, str]:
    """Give the AI SDK's detached tool calls back to their run.

    `streamText` runs a tool while its result stream is read, outside the span that asked for
    it, so `ai.toolCall` arrives as the root of a trace of its own. Such a span, when it names
    its conversation, belongs to the run of that conversation that was running when the tool
    started: an agent root span of this request or a recorded run, or else the next such run
    to arrive (it waits in PendingSpan with its conversation). It is re-parented under that
    run's root, its own trace id kept as the `otel.trace_id` attribute.

    Returns the orphans still waiting: span id -> conversation id. Adopted waiting orphans
    are added to `pool`."""
    roots = [
        span
        for span in incoming.values()
        if span["parent_span_id"] is None and span_mapping.span_kind(span) == "agent"
    ]
    root_conversations = {span_mapping.metadata(root, *_CONVERSATION_KEYS) for root in roots}
    root_conversations.discard(None)
    orphans = [
        span
        for span in incoming.values()
        if span["parent_span_id"] is None
        and span["name"] == "ai.toolCall"
        and span_mapping.metadata(span, *_CONVERSATION_KEYS) is not None
    ]
    conversations = root_conversations | {
        span_mapping.metadata(span, *_CONVERSATION_KEYS) for span in orphans
    }
    locks_take(agent, {f"orphans:{conversation}" for conversation in conversations})
    if root_conversations:
        for span in PendingSpan.objects.filter(
            agent=agent, conversation_id__in=root_conversations
        ).values_list("span", flat=True):
            if span["span_id"] not in incoming:
                orphans.append(span)
                pool[span["span_id"]] = span
    by_conversation: dict[str, list[tuple[Any, Any, Any, tuple[str, str]]]] = {}
    for order, root in enumerate(roots):
        conversation = span_mapping.metadata(root, *_CONVERSATION_KEYS)
        if conversation is not None:
            end = int(root["end"]) if root["end"] else None
            by_conversation.setdefault(conversation, []).append(
                (int(root["start"]), end, order, (root["trace_id"], root["span_id"]))
            )
    owners = _latest_running(
        by_conversation,
        [(span_mapping.metadata(orphan, *_CONVERSATION_KEYS), int(orphan["start"]), orphan["span_id"])
         for orphan in orphans],
    )  # fmt: skip
    owners.update(
        _recorded_owners(agent, [orphan for orphan in orphans if orphan["span_id"] not in owners])
    )
    waiting: dict[str, str] = {}
    for orphan in orphans:
        conversation = span_mapping.metadata(orphan, *_CONVERSATION_KEYS)
        assert conversation is not None
        owner = owners.get(orphan["span_id"])
        if owner is None:
            waiting[orphan["span_id"]] = conversation
        elif owner[0] != orphan["trace_id"]:
            orphan["attributes"]["otel.trace_id"] = orphan["trace_id"]
            orphan["trace_id"], orphan["parent_span_id"] = owner
    return waiting


def _latest_running(
    intervals: dict[Any, list[tuple[Any, Any, Any, Any]]], points: list[tuple[Any, Any, Any]]
) -> dict[Any, Any]:
    """For each point (group, instant, key): the owner of the interval of its group running at
    that instant (start <= instant <= end, an end of None running still) that started last
    (then the last in order). Intervals are (start, end, order, owner). One sweep per group in
    time order with a heap of the intervals started, those ended dropped from its top: linear
    but for the sorting, however many intervals and points a request carries."""
    wanted: dict[Any, list[tuple[Any, Any]]] = {}
    for group, instant, key in points:
        if group in intervals:
            wanted.setdefault(group, []).append((instant, key))
    owners: dict[Any, Any] = {}
    for group, instants in wanted.items():
        started = sorted(intervals[group], key=lambda interval: (interval[0], interval[2]))
        running: list[tuple[_Reversed, _Reversed, int, Any, Any]] = []
        next_start = 0
        for instant, key in sorted(instants, key=lambda item: item[0]):
            while next_start < len(started) and started[next_start][0] <= instant:
                start, end, order, owner = started[next_start]
                entry = (_Reversed(start), _Reversed(order), next_start, end, owner)
                heapq.heappush(running, entry)
                next_start += 1
            while running and running[0][3] is not None and running[0][3] < instant:
                heapq.heappop(running)
            if running:
                owners[key] = running[0][4]
    return owners


class _Reversed:
    """Orders its value backwards (a max-heap of values that cannot be negated: datetimes)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: "_Reversed") -> bool:
        return self.value > other.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and self.value == other.value


def _recorded_owners(agent: Agent, orphans: list[otlp.SpanData]) -> dict[str, tuple[str, str]]:
    """span id -> (trace id, root span id) of the recorded run of the orphan's conversation
    running at its start (the one created last), for the orphans that have one: two queries
    whatever their number."""
    if not orphans:
        return {}
    starts = {orphan["span_id"]: otlp.started_at(orphan) for orphan in orphans}
    points = [(span_mapping.metadata(orphan, *_CONVERSATION_KEYS), starts[orphan["span_id"]],
               orphan["span_id"]) for orphan in orphans]  # fmt: skip
    intervals: dict[Any, list[tuple[Any, Any, Any, Any]]] = {}
    for run_id, conversation, created, completed in (
        Run.objects.filter(
            agent=agent,
            conversation_id__in={conversation for conversation, _at, _key in points},
            created_at__lte=max(starts.values()),
        )
        .filter(
            models.Q(completed_at__isnull=True) | models.Q(completed_at__gte=min(starts.values()))
        )
        .values_list("id", "conversation_id", "created_at", "completed_at")
    ):
        intervals.setdefault(conversation, []).append((created, completed, run_id, run_id))
    runs = _latest_running(intervals, points)
    if not runs:
        return {}
    root_steps = RunStep.objects.filter(agent=agent, run_id__in=set(runs.values()), parent_id=None)
    root_steps = root_steps.order_by("run_id", "started_at", "id")
    if connection.vendor == "postgresql":
        root_steps = root_steps.distinct("run_id")  # the first root step of each run only
    first: dict[str, tuple[str, str]] = {}
    for run_id, trace_id, step_id in root_steps.values_list("run_id", "trace_id", "id"):
        if trace_id:
            first.setdefault(run_id, (trace_id, step_id))
    return {key: first[run_id] for key, run_id in runs.items() if run_id in first}
