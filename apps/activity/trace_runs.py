"""What a trace says about its run (its root, conversation, end user, messages), read off its
spans, and the run recorded from it in a recording unit (apps.activity.recording).
"""

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from apps.activity import otlp, span_mapping
from apps.activity.models import Conversation, Message, Run
from apps.activity.recording import Unit, Wanted

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,63}$")


@dataclass
class TraceFacts:
    """What a trace says about its run, read off its spans."""

    root: otlp.SpanData
    trace: list[otlp.SpanData]
    head: otlp.SpanData
    trace_id: str
    external_id: str | None
    conversation_id: str

    @classmethod
    def of(cls, roots: list[otlp.SpanData], trace: list[otlp.SpanData]) -> "TraceFacts":
        """Read once per trace, whatever its number of roots (a trace has one; when spans
        without a parent share a trace id, the first to start is the run's root)."""
        root = min(roots, key=lambda span: (int(span["start"]), span["span_id"]))
        agent_spans = [span for span in trace if span_mapping.span_kind(span) == "agent"]
        ordered = [root, *sorted(agent_spans, key=lambda span: span["start"]), *trace]

        def find(*names: str) -> str | None:
            for span in ordered:
                value = span_mapping.metadata(span, *names)
                if value is not None:
                    return value
            return None

        trace_id = root["trace_id"]
        conversation_id = find("gen_ai.conversation.id", "conversationId", "conversation_id",
                               "chatId", "session.id")  # fmt: skip
        if conversation_id is None or not _ID.match(conversation_id):
            conversation_id = f"otel-{trace_id}"
        return cls(
            root=root,
            trace=trace,
            head=agent_spans[0] if agent_spans else root,
            trace_id=trace_id,
            external_id=find("userId", "user_id", "user.id", "enduser.id"),
            conversation_id=conversation_id,
        )

    @staticmethod
    def wanted(facts: list["TraceFacts"]) -> Wanted:
        wanted = Wanted.empty()
        for fact in facts:
            if fact.external_id is not None:
                wanted.external_ids.add(fact.external_id)
            wanted.lock(Conversation, fact.conversation_id)
            wanted.lock(Run, fact.trace_id)
            for suffix in ("in", "out"):
                wanted.lock(Message, f"{fact.head['span_id']}-{suffix}")
        return wanted


def run_of_trace(unit: Unit, fact: TraceFacts) -> None:
    """Record (or update) the trace's run, its conversation, end user and messages."""
    root, trace, trace_id, conversation_id = (
        fact.root,
        fact.trace,
        fact.trace_id,
        fact.conversation_id,
    )
    fields = span_mapping.step_fields(root)
    started, ended = fields["started_at"], fields["ended_at"]
    user_id = None
    if fact.external_id is not None:
        unit.record(
            "user", {"external_id": fact.external_id, "last_seen_at": ended or started}, "record"
        )
        user = unit.user_by_external_id(fact.external_id)
        assert user is not None
        user_id = user.id
    question, answer = span_mapping.messages_of(fact.head)
    status = {"failed": "failed", "completed": "completed"}.get(fields["status"], "streaming")
    conversation = {"id": conversation_id, "status": status}
    if unit.get(Conversation, conversation_id) is None:
        conversation["created_at"] = started
        if question:
            conversation["title"] = question[:500]
    if user_id is not None:
        conversation["user_id"] = user_id
    unit.record("conversation", conversation, "record")
    resource = root["resource"]
    sdk = "-".join(
        str(resource[key])
        for key in ("telemetry.sdk.name", "telemetry.sdk.version")
        if resource.get(key)
    )
    run: dict[str, Any] = {
        "id": trace_id,
        "conversation_id": conversation_id,
        "request_id": trace_id,
        "sdk_version": span_mapping.sdk_version(trace) or (sdk or root["scope"] or "otlp")[:64],
        "created_at": started,
        **span_mapping.run_dimensions([root, fact.head, *trace]),
    }
    if user_id is not None:
        run["user_id"] = user_id
    existing = unit.get(Run, trace_id)
    if existing is None or existing.status == "streaming":
        run["status"] = status
    if ended is not None:
        run["completed_at"] = ended
        run["total_turn_latency_ms"] = (ended - started).total_seconds() * 1000
    if status == "failed":
        run["error_code"] = span_mapping.error_code(root)
    first_tokens = [
        (otlp.started_at(span), ms)
        for span in trace
        if isinstance(ms := span["attributes"].get("ai.response.msToFirstChunk"), int | float)
        and span_mapping.span_kind(span) == "model"
    ]
    if first_tokens:
        start, ms = min(first_tokens, key=lambda item: item[0])
        run["first_chunk_at"] = start + timedelta(milliseconds=ms)
    unit.record("run", run, f"trace {trace_id}")
    head_id = fact.head["span_id"]
    if question:
        unit.record(
            "message",
            {"id": f"{head_id}-in", "conversation_id": conversation_id, "role": "user",
             "parts": [{"type": "text", "text": question}], "created_at": started},
            "record",
        )  # fmt: skip
    if answer:
        unit.record(
            "message",
            {"id": f"{head_id}-out", "conversation_id": conversation_id, "role": "assistant",
             "parts": [{"type": "text", "text": answer}], "run_id": trace_id,
             "created_at": ended or started},
            "record",
        )  # fmt: skip
