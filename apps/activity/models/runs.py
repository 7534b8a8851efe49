# ruff: noqa: DJ001 - the contract tells null ("not recorded") from "" apart, so strings are nullable.
"""Model runs (a turn's answer) with their statuses, and the token and credit fields a run
shares with its model steps."""

from django.db import models
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce

from apps.activity.models.links import ID_MAX_LENGTH, SameAgentLink, agent_field
from apps.common.ids import id_factory


class RunStatus(models.TextChoices):
    STREAMING = "streaming", "Streaming"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    ABORTED = "aborted", "Aborted"


END_STATES = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.ABORTED})


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
            # ?metadata=, migration 0013). Partial, as ?error_code='s: the filters ask for a
            # value, and a run without one (most runs) costs its recording no index entry.
            models.Index(
                fields=["agent", "environment", "-created_at", "-id"],
                condition=Q(environment__isnull=False),
                name="run_agent_env",
            ),
            models.Index(
                fields=["agent", "release", "-created_at", "-id"],
                condition=Q(release__isnull=False),
                name="run_agent_release",
            ),
            # GET /v1/runs, the Runs page and the Overview's date range: newest first.
            models.Index(fields=["agent", "-created_at", "-id"], name="run_agent_created"),
            # ?conversation_id= on the list, and the runs beside a transcript.
            models.Index(
                fields=["agent", "conversation_id", "-created_at", "-id"], name="run_agent_conv"
            ),
            # ?status= on the list (for example every failed run, newest first), and the Runs
            # page sorted by status (selectors.RUN_SORTS: status, then created_at, then id, all
            # in one direction) — one index, as recording writes every index of every run.
            models.Index(
                fields=["agent", "-status", "-created_at", "-id"], name="run_agent_status"
            ),
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
                fields=["agent", "error_code", "-created_at", "-id"],
                condition=Q(error_code__isnull=False),
                name="run_agent_error",
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
            # ... or by model, A to Z (run_agent_model serves the filter: newest first within
            # one value, and its nulls are not the '' this order reads them as).
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
