# ruff: noqa: DJ001 - null texts: "no passage was found" differs from an empty passage.
"""What the sweep (apps.knowledge.gaps.services.gaps_sweep) keeps of the Agent's retrieval steps.

Activity records every retrieval step (POST /v1/knowledge/search with `run_id`, the MCP
`search_knowledge` tool, OpenTelemetry retrieval spans, /v1/ingest); the sweep reads them in
the order they were written and keeps, per Agent:

- `KnowledgeGapOccurrence`: each step whose search found nothing above the threshold, or whose
  best passage scored low (and, once feedback is wired, the retrieval steps of runs an end user
  gave a thumbs down);
- `KnowledgeGapQuestion`: each distinct question text of those, with its embedding, in the group
  it joined;
- `KnowledgeGap`: a group of questions meaning the same thing, with its running totals;
- `KnowledgeDocumentRetrieval`: each (run, document) a retrieval step returned, for "retrieved N
  times in 30 days" and "never retrieved in 30 days" (rows older than RETRIEVAL_DAYS are pruned).
"""

from django.db import models
from django.db.models import Q

from apps.common.ids import id_factory

TEXT_LIMIT = 2000  # characters kept of a question or a passage


def _agent() -> models.ForeignKey:
    """The owning Agent. No index of its own: each table's unique constraint or list index
    leads with the Agent and serves any lookup by it."""
    return models.ForeignKey(
        "workspaces.Agent", on_delete=models.CASCADE, related_name="+", db_index=False
    )


class KnowledgeGap(models.Model):
    """A group of unanswered questions that mean the same thing (apps.knowledge.gaps.clustering).

    `vector_sum` is the sum of its distinct questions' unit vectors (float32 bytes): the centroid
    new questions are compared with, grown by one addition per question, never recomputed.
    """

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        RESOLVED = "resolved", "Resolved"

    id = models.CharField(primary_key=True, max_length=40, default=id_factory("gap"))
    agent = _agent()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    # The most asked of its distinct questions (ties: the one asked first).
    representative = models.TextField()
    # Times its questions were asked (occurrences), of which nothing passed the threshold, and
    # the distinct questions it holds.
    question_count = models.PositiveIntegerField(default=0)
    no_answer_count = models.PositiveIntegerField(default=0)
    negative_feedback_count = models.PositiveIntegerField(default=0)
    distinct_count = models.PositiveIntegerField(default=0)
    vector_sum = models.BinaryField()
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    # The best passage any of its searches found, with its score.
    best_score = models.FloatField(null=True, blank=True)
    best_passage = models.TextField(null=True, blank=True)
    best_document_id = models.CharField(max_length=64, null=True, blank=True)
    best_document_title = models.CharField(max_length=255, null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    # When a question came after it was resolved and opened it again.
    reopened_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        indexes = [
            # GET /v1/knowledge/gaps and the page's default: last asked first (?status=: below).
            models.Index(fields=["agent", "-last_seen_at", "-id"], name="gap_agent_seen"),
            models.Index(
                fields=["agent", "status", "-last_seen_at", "-id"], name="gap_agent_status_seen"
            ),
            # The page sorted by how often asked, per status.
            models.Index(
                fields=["agent", "status", "-question_count", "-id"], name="gap_agent_status_count"
            ),
        ]


class KnowledgeGapQuestion(models.Model):
    """A distinct unanswered question of an Agent (by its normalised text), embedded once."""

    id = models.BigAutoField(primary_key=True)
    agent = _agent()
    # No index of its own: gap_question_gap_count leads with the group.
    gap = models.ForeignKey(
        KnowledgeGap, on_delete=models.CASCADE, related_name="questions", db_index=False
    )
    # sha256 of the lower-cased, whitespace-collapsed text: what "the same question" means.
    key = models.CharField(max_length=64)
    text = models.TextField()
    vector = models.BinaryField()
    count = models.PositiveIntegerField(default=0)
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()

    class Meta:
        constraints = [
            # The sweep finds a question asked before by its key.
            models.UniqueConstraint(fields=["agent", "key"], name="gap_question_agent_key"),
        ]
        indexes = [
            # A group's questions, most asked first (its representative, the page's list).
            models.Index(fields=["gap", "-count", "id"], name="gap_question_gap_count"),
            # The retention purge: wordings last asked before the cut-off.
            models.Index(fields=["agent", "last_seen_at"], name="gap_question_agent_seen"),
        ]


class KnowledgeGapOccurrence(models.Model):
    """One retrieval step that left its question unanswered (or a run disliked), kept until the
    sweep has grouped it (`gap` null meanwhile) and then as an example of its group."""

    class Reason(models.TextChoices):
        NO_ANSWER = "no_answer", "Nothing above the threshold"
        LOW_SCORE = "low_score", "Best passage scored low"
        NEGATIVE_FEEDBACK = "negative_feedback", "Negative feedback"

    id = models.BigAutoField(primary_key=True)
    agent = _agent()
    # No index of its own: gap_occurrence_gap_asked leads with the group, and with a plain one
    # beside it PostgreSQL read a large group's every asking and sorted them for its latest
    # (70 ms for a page of 100 groups, 5 ms without).
    gap = models.ForeignKey(
        KnowledgeGap,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="occurrences",
        db_index=False,
    )
    step_id = models.CharField(max_length=64)
    run_id = models.CharField(max_length=64)
    conversation_id = models.CharField(max_length=64, null=True, blank=True)
    query = models.TextField()
    reason = models.CharField(max_length=20, choices=Reason.choices)
    # An end user disliked the run's answer (apps.knowledge.gaps.feedback).
    negative_feedback = models.BooleanField(default=False)
    best_score = models.FloatField(null=True, blank=True)
    best_passage = models.TextField(null=True, blank=True)
    best_document_id = models.CharField(max_length=64, null=True, blank=True)
    best_document_title = models.CharField(max_length=255, null=True, blank=True)
    asked_at = models.DateTimeField()

    class Meta:
        constraints = [
            # A step is kept once, whichever way (sweep or feedback) it came.
            models.UniqueConstraint(fields=["agent", "step_id"], name="gap_occurrence_agent_step"),
        ]
        indexes = [
            # The sweep's next occurrences to group.
            models.Index(
                fields=["id"], condition=Q(gap__isnull=True), name="gap_occurrence_pending"
            ),
            # A group's latest examples (conversations).
            models.Index(fields=["gap", "-asked_at", "-id"], name="gap_occurrence_gap_asked"),
            # The retention purge: askings before the cut-off, oldest first.
            models.Index(fields=["agent", "asked_at", "id"], name="gap_occurrence_agent_asked"),
        ]


class KnowledgeDocumentRetrieval(models.Model):
    """A run whose retrieval returned a document of the Agent (once per run and document)."""

    id = models.BigAutoField(primary_key=True)
    agent = _agent()
    document_id = models.CharField(max_length=40)
    run_id = models.CharField(max_length=64)
    retrieved_at = models.DateTimeField()
    # Set by apps.knowledge.gaps.feedback when an end user disliked the run's answer.
    negative_feedback = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "run_id", "document_id"], name="doc_retrieval_agent_run_doc"
            ),
        ]
        indexes = [
            # A document's retrievals of the last 30 days; "never retrieved" on the list.
            models.Index(
                fields=["agent", "document_id", "-retrieved_at"], name="doc_retrieval_agent_doc"
            ),
            # Pruning rows past RETRIEVAL_DAYS.
            models.Index(fields=["retrieved_at"], name="doc_retrieval_at"),
        ]


class KnowledgeGapSweep(models.Model):
    """How far the sweep has read the retrieval steps: the last `activity.RunStep.row` read."""

    name = models.CharField(primary_key=True, max_length=40)
    last_row = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField()
