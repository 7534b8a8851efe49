# ruff: noqa: DJ001 - the contract tells null ("not recorded") from "" apart, so strings are nullable.
"""The steps of a run (the spans of its trace), and the OpenTelemetry spans that wait for their
parent before they can be placed as steps."""

from django.db import models

from apps.activity.models.links import ID_MAX_LENGTH, SameAgentLink, agent_field
from apps.activity.models.runs import TokenUsage
from apps.common.ids import id_factory


class StepKind(models.TextChoices):
    AGENT = "agent", "Agent"
    MODEL = "model", "Model call"
    TOOL = "tool", "Tool call"
    RETRIEVAL = "retrieval", "Retrieval"
    CUSTOM = "custom", "Custom"


class StepStatus(models.TextChoices):
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"


class RunStep(TokenUsage):
    """One step of a run (a span of its trace): an ordered tree under the run.

    `parent_id` names another step of the same run (None for a top-level step). Steps come from
    POST /v1/ingest (`type: step`) or from OpenTelemetry spans (apps.activity.otlp), where the
    id is the span id and `trace_id` the trace's. Input, output, documents and attributes are
    bounded: a value larger than the limit is stored as a preview and named in `truncated`.
    """

    Kind = StepKind
    Status = StepStatus

    row = models.BigAutoField(primary_key=True)
    id = models.CharField(max_length=ID_MAX_LENGTH, default=id_factory("step"))
    agent = agent_field(constraint=False)
    run_id = models.CharField(max_length=ID_MAX_LENGTH)
    run = SameAgentLink("Run", through="run_id", related_name="steps")
    parent_id = models.CharField(max_length=ID_MAX_LENGTH, null=True, blank=True)
    trace_id = models.CharField(max_length=32, null=True, blank=True)
    kind = models.CharField(max_length=12, choices=StepKind.choices, default=StepKind.CUSTOM)
    name = models.CharField(max_length=255)
    status = models.CharField(
        max_length=12, choices=StepStatus.choices, default=StepStatus.COMPLETED
    )
    error = models.TextField(null=True, blank=True)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.FloatField(null=True, blank=True)
    input = models.JSONField(null=True, blank=True)
    output = models.JSONField(null=True, blank=True)
    # Model calls (and the token and credit fields of TokenUsage).
    model_id = models.CharField(max_length=255, null=True, blank=True)
    first_token_ms = models.FloatField(null=True, blank=True)
    finish_reason = models.CharField(max_length=64, null=True, blank=True)
    # Tool calls.
    tool_name = models.CharField(max_length=255, null=True, blank=True)
    mcp_server = models.CharField(max_length=255, null=True, blank=True)
    # Retrievals: the query and what came back, [{document_id, title, url, passage, score}].
    query = models.TextField(null=True, blank=True)
    documents = models.JSONField(default=list)
    # Everything the runtime sent that has no field here (OpenTelemetry attributes).
    attributes = models.JSONField(default=dict)
    # The fields stored shortened because they were too large.
    truncated = models.JSONField(default=list)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    # Word search over input, output, error and query, as on Message.
    search_text = models.TextField(null=True, blank=True)
    search_config = models.CharField(max_length=20, default="simple", db_default="simple")

    class Meta:
        indexes = [
            # GET /v1/runs/{id}/steps and the run page: a run's steps in start order.
            models.Index(fields=["agent", "run_id", "started_at", "id"], name="step_run_started"),
            # OTLP: the known spans of a trace, to place children and refuse foreign ids.
            models.Index(
                fields=["agent", "trace_id"],
                condition=models.Q(trace_id__isnull=False),
                name="step_agent_trace",
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["agent", "id"], name="step_agent_id"),
            models.CheckConstraint(
                condition=models.Q(credits_charged__isnull=True) | models.Q(credits_charged__gte=0),
                name="step_credits_non_negative",
            ),
            models.CheckConstraint(
                condition=models.Q(duration_ms__isnull=True) | models.Q(duration_ms__gte=0),
                name="step_duration_non_negative",
            ),
        ]


class PendingSpan(models.Model):
    """An OpenTelemetry span waiting for its parent (or its trace's root) to arrive.

    Exporters send a span when it ends, so children usually arrive before their parents. The
    span is kept decoded (apps.activity.otlp) and placed as a step when the spans above it are
    known; then this row is deleted.
    """

    row = models.BigAutoField(primary_key=True)
    agent = agent_field()
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, null=True, blank=True)
    # An AI SDK tool call detached from its run waits for a run of this conversation
    # (apps.activity.orphan_spans.orphan_tool_calls_attach).
    conversation_id = models.CharField(max_length=ID_MAX_LENGTH, null=True, blank=True)
    span = models.JSONField()
    received_at = models.DateTimeField()

    class Meta:
        indexes = [
            # The spans already received of the traces a request carries.
            models.Index(fields=["agent", "trace_id"], name="pending_span_trace"),
            # The detached tool calls a new run of the conversation adopts.
            models.Index(
                fields=["agent", "conversation_id"],
                condition=models.Q(conversation_id__isnull=False),
                name="pending_span_conversation",
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["agent", "span_id"], name="pending_span_agent_span"),
        ]
