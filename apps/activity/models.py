# ruff: noqa: DJ001 - the contract tells null ("not recorded") from "" apart, so strings are nullable.
"""What an Agent runtime observes: end users, conversations, their messages and model runs.

Ids come from the runtime (recording is idempotent by id); records without one get a
time-ordered id such as `run_01J...`. An id is unique per Agent only, never globally: two
workspaces may record the same `run_1`, and neither learns that the other did (docs/faults.md,
item 5). So each table has an internal row key (`row`), the public `id` is unique together with
the Agent, and the links between records (a run's conversation, a conversation's user) are
`(agent, id)` pairs: `ForeignObject`s over the plain `conversation_id` / `user_id` columns, with
composite foreign keys in PostgreSQL (migration 0003).

Every row carries its Agent, and every list is served by an index that starts with it, so a
page is one index range scan at any depth.
"""

from typing import Any

from django.db import models
from django.db.models import F, Value
from django.db.models.fields.related_descriptors import ForwardManyToOneDescriptor
from django.db.models.functions import Coalesce, Lower

from apps.common.ids import id_factory

ID_MAX_LENGTH = 64


class _SameAgentDescriptor(ForwardManyToOneDescriptor):
    """`run.conversation = x` for a link whose columns include the record's own `agent_id`.

    Django would copy every column of the link: unlinking (`= None`) would clear the Agent too,
    and linking a record of another Agent would move this one. Neither may happen.
    """

    def __set__(self, instance: Any, value: Any) -> None:
        agent_id = instance.__dict__.get("agent_id")
        if value is not None and agent_id is not None and value.agent_id != agent_id:
            raise ValueError("A record can only be linked to a record of its own Agent.")
        super().__set__(instance, value)
        if value is None:
            instance.agent_id = agent_id


class SameAgentLink(models.ForeignObject):
    """A link to another record of the same Agent: `(agent, <through>)` -> `(agent, id)`.

    Django does nothing on delete: PostgreSQL's composite foreign keys cascade (or set the id to
    null), and records are only ever deleted with their Agent.
    """

    forward_related_accessor_class = _SameAgentDescriptor

    def __init__(self, to: Any, *, through: str | None = None, **kwargs: Any) -> None:
        # `through` names the column holding the linked id; clones pass the full kwargs instead.
        if through is not None:
            kwargs.setdefault("from_fields", ["agent", through])
            kwargs.setdefault("to_fields", ["agent", "id"])
        kwargs.setdefault("on_delete", models.DO_NOTHING)
        super().__init__(to, **kwargs)

    def deconstruct(self):
        name, _path, args, kwargs = super().deconstruct()
        # Migrations see a plain ForeignObject: the descriptor changes no schema.
        return name, "django.db.models.ForeignObject", args, kwargs


class RunStatus(models.TextChoices):
    STREAMING = "streaming", "Streaming"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    ABORTED = "aborted", "Aborted"


END_STATES = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.ABORTED})


def agent_field(*, constraint: bool = True) -> models.ForeignKey:
    """The Agent owning an activity row. No index of its own: each table's unique (agent, id)
    index and every list index lead with the Agent and serve any lookup by it; one on the
    Agent alone (and Django's `_like` twin, for LIKE) served nothing and cost each inserted row
    two more index entries (docs/performance.md, "Recording").

    `constraint=False` for rows whose composite link already names an existing row of the same
    Agent (a run's or message's conversation, a step's run): PostgreSQL checks a foreign key
    per inserted row by locking the Agent's row (FOR KEY SHARE), and every recording of one
    Agent sharing that one row's lock cost a batch of a hundred runs a third of its speed."""
    return models.ForeignKey(
        "workspaces.Agent",
        on_delete=models.CASCADE,
        related_name="+",
        db_index=False,
        db_constraint=constraint,
    )


class EndUser(models.Model):
    """A person observed by the Agent: the contract's `user` resource."""

    class IdentityType(models.TextChoices):
        ANONYMOUS = "anonymous", "Anonymous"
        USER = "user", "User"
        PREVIEW = "preview", "Preview"
        UNKNOWN = "unknown", "Unknown"

    row = models.BigAutoField(primary_key=True)
    id = models.CharField(max_length=ID_MAX_LENGTH, default=id_factory("usr"))
    agent = agent_field()
    external_id = models.CharField(max_length=255, null=True, blank=True)
    identity_type = models.CharField(
        max_length=20, choices=IdentityType.choices, default=IdentityType.UNKNOWN
    )
    display_name = models.CharField(max_length=255, null=True, blank=True)
    email = models.CharField(max_length=320, null=True, blank=True)
    avatar_url = models.CharField(max_length=2048, null=True, blank=True)
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()

    class Meta:
        indexes = [
            # GET /v1/users and the Users page: an Agent's users, most recently seen first.
            models.Index(fields=["agent", "-last_seen_at", "-id"], name="enduser_agent_seen"),
            # The Users page sorted by first seen (selectors.USER_SORTS).
            models.Index(
                fields=["agent", "-first_seen_at", "-id"], name="enduser_agent_first_seen"
            ),
            # The Users page sorted by name: the expression of selectors.USER_SORTS exactly, or
            # the index is not used.
            models.Index(
                F("agent"),
                Lower(Coalesce(F("display_name"), F("id"))),
                F("id"),
                name="enduser_agent_name",
            ),
            # ... by email, external id or identity (the same expressions as USER_SORTS).
            models.Index(
                F("agent"),
                Lower(Coalesce(F("email"), Value(""))),
                F("id"),
                name="enduser_agent_email",
            ),
            models.Index(
                F("agent"), Coalesce(F("external_id"), Value("")), F("id"), name="enduser_agent_ext"
            ),
            models.Index(fields=["agent", "identity_type", "id"], name="enduser_agent_identity"),
        ]
        constraints = [
            # Ids are the runtime's and unique per Agent only (see the module docstring).
            models.UniqueConstraint(fields=["agent", "id"], name="enduser_agent_id"),
            # Recording upserts by external id: at most one user per external id and Agent.
            models.UniqueConstraint(
                fields=["agent", "external_id"],
                condition=models.Q(external_id__isnull=False),
                name="enduser_unique_external_id",
            ),
        ]

    def __str__(self) -> str:
        return self.display_name or self.email or self.external_id or self.id


class Conversation(models.Model):
    class Source(models.TextChoices):
        EMBED = "embed", "Embed"
        PREVIEW = "preview", "Preview"

    row = models.BigAutoField(primary_key=True)
    id = models.CharField(max_length=ID_MAX_LENGTH, default=id_factory("conv"))
    agent = agent_field()
    user_id = models.CharField(max_length=ID_MAX_LENGTH, null=True, blank=True)
    user = SameAgentLink("EndUser", through="user_id", related_name="conversations", null=True)
    title = models.CharField(max_length=500, null=True, blank=True)
    status = models.CharField(max_length=12, choices=RunStatus.choices, null=True, blank=True)
    source = models.CharField(max_length=12, choices=Source.choices, null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        indexes = [
            # GET /v1/conversations and the Conversations page: most recently updated first.
            models.Index(fields=["agent", "-updated_at", "-id"], name="conv_agent_updated"),
            # The console's conversations sorted by start (either way: one index serves both).
            models.Index(fields=["agent", "-created_at", "-id"], name="conv_agent_created"),
            # ?user_id= on the list, and a user's page: that user's conversations.
            models.Index(fields=["agent", "user_id", "-updated_at", "-id"], name="conv_agent_user"),
            # ?status= on the list.
            models.Index(
                fields=["agent", "status", "-updated_at", "-id"], name="conv_agent_status"
            ),
            # The Conversations page sorted by title, status or source (CONVERSATION_SORTS:
            # the same expressions, or the index is not used).
            models.Index(
                F("agent"), Lower(Coalesce(F("title"), Value(""))), F("id"), name="conv_agent_title"
            ),
            models.Index(
                F("agent"), Coalesce(F("status"), Value("")), F("id"), name="conv_agent_status_sort"
            ),
            models.Index(
                F("agent"), Coalesce(F("source"), Value("")), F("id"), name="conv_agent_source"
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["agent", "id"], name="conv_agent_id"),
        ]

    def __str__(self) -> str:
        return self.title or self.id


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"
        SYSTEM = "system", "System"

    row = models.BigAutoField(primary_key=True)
    id = models.CharField(max_length=ID_MAX_LENGTH, default=id_factory("msg"))
    agent = agent_field(constraint=False)
    conversation_id = models.CharField(max_length=ID_MAX_LENGTH)
    conversation = SameAgentLink("Conversation", through="conversation_id", related_name="messages")
    role = models.CharField(max_length=10, choices=Role.choices)
    # AI SDK UIMessage parts, stored exactly as the runtime sent them.
    parts = models.JSONField(default=list)
    source_id = models.CharField(max_length=255, null=True, blank=True)
    # The run that produced this message (an assistant answer), of the same conversation.
    run_id = models.CharField(max_length=ID_MAX_LENGTH, null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField(null=True, blank=True)
    # Word search (apps.activity.search_index): the words of the text parts as indexed, and
    # their text search configuration. PostgreSQL stores `search_vector` from them (a generated
    # column with a GIN index, migration 0015), which the ORM never reads. The database default
    # lets rows written in SQL (fills, benchmarks) leave the configuration out.
    search_text = models.TextField(null=True, blank=True)
    search_config = models.CharField(max_length=20, default="simple", db_default="simple")

    class Meta:
        indexes = [
            # GET /v1/conversations/{id}/messages and the transcript: oldest first.
            models.Index(
                fields=["agent", "conversation_id", "created_at", "id"], name="msg_conv_created"
            ),
            # The run page: the messages a run produced.
            models.Index(
                fields=["agent", "run_id"],
                condition=models.Q(run_id__isnull=False),
                name="msg_agent_run",
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["agent", "id"], name="msg_agent_id"),
        ]


class TokenUsage(models.Model):
    """The token and credit totals a run states and its model steps carry: the same fields
    with the same meaning on both (a run's total is the sum of its model steps' once they
    carry it; apps.activity.recording)."""

    input_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    output_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    total_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    cache_read_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    cache_write_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    credits_charged = models.FloatField(null=True, blank=True)

    class Meta:
        abstract = True


class Run(TokenUsage):
    Status = RunStatus

    row = models.BigAutoField(primary_key=True)
    id = models.CharField(max_length=ID_MAX_LENGTH, default=id_factory("run"))
    agent = agent_field(constraint=False)
    conversation_id = models.CharField(max_length=ID_MAX_LENGTH)
    conversation = SameAgentLink("Conversation", through="conversation_id", related_name="runs")
    user_id = models.CharField(max_length=ID_MAX_LENGTH, null=True, blank=True)
    user = SameAgentLink("EndUser", through="user_id", related_name="runs", null=True)
    request_id = models.CharField(max_length=255)
    status = models.CharField(max_length=12, choices=RunStatus.choices, default=RunStatus.STREAMING)
    model_id = models.CharField(max_length=255, null=True, blank=True)
    effort = models.CharField(max_length=64, null=True, blank=True)
    sdk_version = models.CharField(max_length=64)
    protocol_version = models.PositiveIntegerField(default=1)
    tool_names = models.JSONField(default=list)
    failed_tool_names = models.JSONField(default=list)
    component_kinds = models.JSONField(default=list)
    # The knowledge documents its retrieval steps returned (kept by recording, not sent: not
    # part of the contract's run object), for ?document_id= on the runs lists.
    document_ids = models.JSONField(default=list, db_default=models.Value([], models.JSONField()))
    error_code = models.CharField(max_length=255, null=True, blank=True)
    first_chunk_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    total_turn_latency_ms = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    # The run's dimensions (apps.activity.dimensions): not part of the contract's run object,
    # served as their own object (GET /v1/runs/{id}/attributes) and as list filters.
    environment = models.CharField(max_length=64, null=True, blank=True)
    release = models.CharField(max_length=128, null=True, blank=True)
    tags = models.JSONField(default=list, db_default=models.Value([], models.JSONField()))
    metadata = models.JSONField(default=dict, db_default=models.Value({}, models.JSONField()))

    class Meta:
        indexes = [
            # ?environment= and ?release= on the runs lists (GIN indexes for ?tag= and
            # ?metadata=, migration 0013).
            models.Index(
                fields=["agent", "environment", "-created_at", "-id"], name="run_agent_env"
            ),
            models.Index(
                fields=["agent", "release", "-created_at", "-id"], name="run_agent_release"
            ),
            # GET /v1/runs, the Runs page and the Overview's date range: newest first.
            models.Index(fields=["agent", "-created_at", "-id"], name="run_agent_created"),
            # ?conversation_id= on the list, and the runs beside a transcript.
            models.Index(
                fields=["agent", "conversation_id", "-created_at", "-id"], name="run_agent_conv"
            ),
            # ?status= on the list (for example every failed run).
            models.Index(fields=["agent", "status", "-created_at", "-id"], name="run_agent_status"),
            # ?user_id= on the list and a user's page; with the tokens and credits beside the
            # key, the users' totals (selectors.user_usage) are an index-only scan.
            models.Index(
                fields=["agent", "user_id", "-created_at", "-id"],
                include=["total_tokens", "credits_charged"],
                name="run_agent_user",
            ),
            # ?model_id= and ?error_code= on the list (the console's run filters).
            models.Index(
                fields=["agent", "model_id", "-created_at", "-id"], name="run_agent_model"
            ),
            models.Index(
                fields=["agent", "error_code", "-created_at", "-id"], name="run_agent_error"
            ),
            # The Runs page sorted by tokens, credits or latency (selectors.RUN_SORTS; the
            # expression must stay the one the sort orders by, or the index is not used).
            models.Index(
                F("agent"),
                Coalesce(F("total_tokens"), Value(-1)).desc(),
                F("id").desc(),
                name="run_agent_tokens",
            ),
            models.Index(
                F("agent"),
                Coalesce(F("credits_charged"), Value(-1.0)).desc(),
                F("id").desc(),
                name="run_agent_credits",
            ),
            models.Index(
                F("agent"),
                Coalesce(F("total_turn_latency_ms"), Value(-1.0)).desc(),
                F("id").desc(),
                name="run_agent_latency",
            ),
            # ... or by status or model, A to Z (run_agent_status and run_agent_model serve
            # the filters: newest first within one value, not the values in order).
            models.Index(fields=["agent", "status", "id"], name="run_agent_status_sort"),
            models.Index(
                F("agent"), Coalesce(F("model_id"), Value("")), F("id"), name="run_agent_model_sort"
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["agent", "id"], name="run_agent_id"),
            models.CheckConstraint(
                condition=models.Q(credits_charged__isnull=True) | models.Q(credits_charged__gte=0),
                name="run_credits_non_negative",
            ),
            models.CheckConstraint(
                condition=models.Q(total_turn_latency_ms__isnull=True)
                | models.Q(total_turn_latency_ms__gte=0),
                name="run_latency_non_negative",
            ),
            models.CheckConstraint(
                condition=models.Q(protocol_version__gte=1), name="run_protocol_version_min_1"
            ),
        ]


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


class Rollup(models.Model):
    """Daily analytics of steps and runs per group (apps.activity.analytics): how many, how many
    failed, their tokens and credits, per Agent, UTC day, group and key — steps by tool, model
    and step name, runs by environment and release, and the Overview's figures
    (apps.activity.overview_rollup). Written with the recording as differences, so the
    analytics never scan the steps; split in stripes like the usage rollup (a recording adds to
    a stripe no other recording of the Agent in flight holds; readers sum them)."""

    row = models.BigAutoField(primary_key=True)
    agent = agent_field()
    day = models.DateField()
    group = models.CharField(max_length=12)  # analytics.GROUPS
    key = models.CharField(max_length=255)  # "" when the run has no environment / release
    stripe = models.PositiveSmallIntegerField(default=0)
    count = models.BigIntegerField(default=0)
    failed = models.BigIntegerField(default=0)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    total_tokens = models.BigIntegerField(default=0)
    # Exact decimal sums of the rows' float credits (apps.common.credits).
    credits = models.DecimalField(max_digits=30, decimal_places=9, default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "group", "day", "key", "stripe"], name="rollup_agent_group_day"
            ),
        ]


class RollupLatency(models.Model):
    """How many of a Rollup row's steps (runs) took a latency in one bucket of the histogram of
    apps.common.latency: percentiles over any period, without the steps."""

    row = models.BigAutoField(primary_key=True)
    agent = agent_field()
    day = models.DateField()
    group = models.CharField(max_length=12)
    key = models.CharField(max_length=255)
    bucket = models.PositiveSmallIntegerField()
    stripe = models.PositiveSmallIntegerField(default=0)
    count = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "group", "day", "key", "bucket", "stripe"],
                name="rollup_latency_agent_group_day",
            ),
        ]
