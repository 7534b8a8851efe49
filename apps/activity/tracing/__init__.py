"""Recording OpenTelemetry spans as runs and steps (POST /v1/otlp/v1/traces).

A trace is a run: the run's id is the trace id, its root span (no parent) creates it, and
every span of the trace is a step (the root too) whose id is the span id. The run takes its
conversation from `gen_ai.conversation.id` (or the AI SDK's telemetry metadata
`conversationId`/`chatId`), its end user from `userId`/`user.id`, its model and token totals
from its model steps (apps.activity.services, "run totals follow model steps").

Exporters send a span when it ends, so a child usually arrives before its parent: a span whose
parent (or whose trace's run) is not known yet is kept in `PendingSpan` and placed when the
spans above it arrive. Writes are set-based: one upsert of every step of a request, one of
every waiting span, whatever their number.

A span that cannot be placed for a reason of its own (its id recorded in another trace, a parent
in another trace, a cycle of parents) is rejected alone and counted (OTLP partial success);
a trace whose run cannot be recorded rejects that trace's spans only.

Beside it: what a trace says about its run (apps.activity.trace_runs), the AI SDK's detached
tool calls (orphan_spans), spans whose parent never came (pending_spans), the locks requests
take on their traces (trace_locks).

One module per subject: `spans` (a request's spans recorded, stage by stage), `placing` (which
run each span belongs to, and the spans that can never be placed), `runs` (each trace's run
recorded), `steps` (the step rows of placed spans, looked up and written), `waiting` (the spans
that wait for their parents), `result` (what a request's spans came to). Callers import from
`apps.activity.tracing`; the names below are its public face.
"""

from apps.activity.tracing.placing import MAX_SPAN_DEPTH
from apps.activity.tracing.result import SpansResult
from apps.activity.tracing.spans import spans_record
from apps.activity.tracing.steps import step_values, steps_stored, steps_write
from apps.activity.tracing.waiting import MAX_PENDING_SPANS_PER_TRACE

__all__ = [
    "MAX_PENDING_SPANS_PER_TRACE",
    "MAX_SPAN_DEPTH",
    "SpansResult",
    "spans_record",
    "step_values",
    "steps_stored",
    "steps_write",
]
