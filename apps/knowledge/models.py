"""Knowledge documents, their content versions and the chunks the Agent searches.

A document keeps its ingestion `status` and its `refresh_status` apart (contract 3.1). Content
is versioned: the document points at its `current_version`, and a refresh switches the pointer
in one transaction once the new version is extracted and indexed. Chunks carry the document and
the Agent as well as the version so search filters without joins through versions.

The search vector of a chunk is not a Django field: on PostgreSQL it is a stored generated
`tsvector` column with a GIN index, on SQLite an FTS5 table keyed by the chunk id (see
migration 0002 and `apps.knowledge.search`).
"""

from django.db import models
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce, Lower

from apps.common.ids import id_factory

REFRESH_INTERVALS = (0, 6, 12, 24, 168)
DEFAULT_REFRESH_INTERVAL = 24


def _document_upload_to(document: "KnowledgeDocument", filename: str) -> str:
    return f"knowledge/{document.agent_id}/{document.pk}/{filename}"


class KnowledgeDocument(models.Model):
    class SourceType(models.TextChoices):
        FILE = "file", "File"
        URL = "url", "URL"

    class Status(models.TextChoices):
        PROCESSING = "processing", "Processing"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    class RefreshStatus(models.TextChoices):
        IDLE = "idle", "Idle"
        REFRESHING = "refreshing", "Refreshing"
        FAILED = "failed", "Failed"

    id = models.CharField(
        primary_key=True, max_length=40, default=id_factory("doc"), editable=False
    )
    agent = models.ForeignKey(
        "workspaces.Agent", on_delete=models.CASCADE, related_name="knowledge_documents"
    )
    name = models.CharField(max_length=120)
    source_type = models.CharField(max_length=4, choices=SourceType.choices)
    source_url = models.CharField(max_length=2048, null=True, blank=True)  # noqa: DJ001 - null: the contract tells "none" from ""
    # The guard's canonical form of source_url: what "the same URL" means for duplicates.
    normalized_url = models.CharField(max_length=2048, null=True, blank=True)  # noqa: DJ001 - null: the contract tells "none" from ""
    file_name = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001 - null: the contract tells "none" from ""
    file_size_bytes = models.BigIntegerField(null=True, blank=True)
    file = models.FileField(upload_to=_document_upload_to, max_length=400, blank=True)
    # SHA-256 of the uploaded bytes: the same file twice for one Agent is a conflict.
    content_sha256 = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001 - null: the contract tells "none" from ""
    kind = models.CharField(max_length=16, blank=True)
    is_enabled = models.BooleanField(default=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PROCESSING)
    error_message = models.CharField(max_length=500, null=True, blank=True)  # noqa: DJ001 - null: the contract tells "none" from ""
    refresh_status = models.CharField(
        max_length=10, choices=RefreshStatus.choices, default=RefreshStatus.IDLE
    )
    refresh_error_message = models.CharField(max_length=500, null=True, blank=True)  # noqa: DJ001 - null: the contract tells "none" from ""
    refresh_interval_hours = models.PositiveIntegerField(null=True, blank=True)
    character_count = models.PositiveIntegerField(null=True, blank=True)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    next_refresh_at = models.DateTimeField(null=True, blank=True)
    # Work bookkeeping. queued_at: when ingestion or a refresh was last queued; claimed_until:
    # the lease of the worker doing it (expired = the worker died); attempts: claims of the
    # current piece of work, so a file that kills workers fails instead of looping forever.
    queued_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # The PostgreSQL text search configuration of the current version's language ("english",
    # "french", ...; "simple" for CJK and anything not recognised), detected at ingestion.
    language = models.CharField(max_length=20, default="simple")
    # Every configuration its current version's passages use (comma-separated): a passage is
    # indexed in its own language when it clearly has one (apps.common.lexical).
    search_configs = models.CharField(max_length=400, default="simple")
    # Embedding progress of the current version, shown in the console: semantic search finds
    # the document's chunks as they are embedded; keyword search finds them all from `ready`.
    chunk_count = models.PositiveIntegerField(default=0)
    embedded_chunk_count = models.PositiveIntegerField(default=0)
    # The embedding task's bookkeeping (GET /v1/knowledge/{id}/indexing, the document page):
    # the lease of the task embedding the document now (past = nobody is), when a batch was
    # last stored, and after a failed batch: the error, consecutive failures (the backoff) and
    # when it is tried again.
    embedding_claimed_until = models.DateTimeField(null=True, blank=True)
    embedding_progressed_at = models.DateTimeField(null=True, blank=True)
    embedding_error = models.CharField(max_length=500, null=True, blank=True)  # noqa: DJ001 - null: no error
    embedding_failures = models.PositiveSmallIntegerField(default=0)
    embedding_retry_at = models.DateTimeField(null=True, blank=True)
    current_version = models.ForeignKey(
        "KnowledgeContentVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "knowledge_document"
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "normalized_url"],
                condition=Q(source_type="url"),
                name="knowledge_doc_unique_url",
            ),
            models.UniqueConstraint(
                fields=["agent", "content_sha256"],
                condition=Q(source_type="file"),
                name="knowledge_doc_unique_file",
            ),
        ]
        indexes = [
            # GET /knowledge and the console list: an Agent's documents, newest first (keyset).
            models.Index(fields=["agent", "-created_at", "-id"], name="knowledge_doc_list"),
            # The console list sorted by name, file size, status or last change
            # (selectors.DOCUMENT_SORTS; an expression must stay the one the sort orders by).
            models.Index(F("agent"), Lower(F("name")), F("id"), name="knowledge_doc_name"),
            models.Index(
                F("agent"),
                Coalesce(F("file_size_bytes"), Value(-1)).desc(),
                F("id").desc(),
                name="knowledge_doc_size",
            ),
            models.Index(fields=["agent", "status", "id"], name="knowledge_doc_status_order"),
            models.Index(fields=["agent", "-updated_at", "-id"], name="knowledge_doc_updated"),
            # knowledge.refresh_due: URL documents whose scheduled refresh is due.
            models.Index(
                fields=["next_refresh_at"],
                condition=Q(next_refresh_at__isnull=False),
                name="knowledge_doc_due",
            ),
            # knowledge.embed_stalled: ready documents whose embedding is not finished.
            models.Index(
                fields=["updated_at"],
                condition=Q(status="ready", embedded_chunk_count__lt=F("chunk_count")),
                name="knowledge_doc_embedding",
            ),
            # knowledge.recover_stalled: documents with work queued or running.
            models.Index(
                fields=["queued_at"],
                condition=Q(status="processing") | Q(refresh_status="refreshing"),
                name="knowledge_doc_working",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_working(self) -> bool:
        """Processing or refreshing: the console polls such rows until they settle."""
        return (
            self.status == self.Status.PROCESSING
            or self.refresh_status == self.RefreshStatus.REFRESHING
        )

    @property
    def is_empty(self) -> bool:
        """Ready, but the file held no text (a blank or whitespace-only one): searching it finds
        nothing, which the console says rather than a plain "Ready"."""
        return self.status == self.Status.READY and self.character_count == 0

    @property
    def is_embedding(self) -> bool:
        """Ready, with chunks the embedding task has not reached yet."""
        return self.status == self.Status.READY and self.embedded_chunk_count < self.chunk_count

    @property
    def embedding_state(self) -> str:
        """Where the semantic index stands: `waiting` (for extraction, or for a worker to take
        the embedding), `running` (a task holds it now), `retrying` (a batch failed; tried
        again at `embedding_retry_at`) or `done` (every passage embedded, or nothing to
        embed)."""
        from django.utils import timezone

        if self.status == self.Status.PROCESSING:
            return "waiting"
        if not self.is_embedding:
            return "done"
        if self.embedding_retry_at is not None:
            return "retrying"
        if self.embedding_claimed_until is not None and self.embedding_claimed_until > (
            timezone.now()
        ):
            return "running"
        return "waiting"

    @property
    def needs_polling(self) -> bool:
        """The console row shows progress that is still moving."""
        return self.is_working or self.is_embedding


class KnowledgeContentVersion(models.Model):
    id = models.CharField(
        primary_key=True, max_length=40, default=id_factory("kcv"), editable=False
    )
    document = models.ForeignKey(
        KnowledgeDocument, on_delete=models.CASCADE, related_name="versions"
    )
    markdown = models.TextField()
    sha256 = models.CharField(max_length=64)
    page_count = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "knowledge_content_version"


class KnowledgeChunk(models.Model):
    # An integer key: SQLite's FTS5 table uses it as its rowid.
    id = models.BigAutoField(primary_key=True)
    version = models.ForeignKey(
        KnowledgeContentVersion, on_delete=models.CASCADE, related_name="chunks"
    )
    document = models.ForeignKey(KnowledgeDocument, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey("workspaces.Agent", on_delete=models.CASCADE, related_name="+")
    heading_path = models.JSONField(default=list)
    text = models.TextField()
    position = models.PositiveIntegerField()
    # The document's language configuration when the chunk was written; the tsvector is built
    # with it and the query is parsed with it (see apps.knowledge.search).
    search_config = models.CharField(max_length=20, default="simple")
    # What the keyword index reads instead of `text` when they differ: text with CJK runs cut
    # into character pairs (apps.common.lexical.index_text). Null for most passages.
    index_text = models.TextField(null=True, blank=True)  # noqa: DJ001 - null: nothing stored
    # True exactly when the chunk belongs to the current version of an enabled, ready
    # document: the partial search indexes hold only such chunks, so a search never joins
    # the document table to find out.
    is_searchable = models.BooleanField(default=False)
    # The embeddings of the chunk's windows (embeddings.embed_passages), each L2-normalised, as
    # little-endian float16 end to end (768 bytes a window), and the sign bits (48 bytes) of
    # their normalised mean, which the in-process vector scan compares first. Null until the
    # embedding task reaches the chunk.
    embedding = models.BinaryField(null=True, blank=True)
    embedding_bits = models.BinaryField(null=True, blank=True)
    # What made the vectors (embeddings.embedding_key(): model and windowing); null for vectors
    # made before windows. `manage.py knowledge_reembed` replaces vectors made otherwise.
    embedding_model = models.CharField(max_length=120, null=True, blank=True)  # noqa: DJ001 - null: made before the key existed

    class Meta:
        db_table = "knowledge_chunk"
        indexes = [
            # Deleting or replacing a version's chunks; reading a document's chunks in order.
            models.Index(fields=["version", "position"], name="knowledge_chunk_version"),
            # Search filters an Agent's chunks (the GIN index finds the matches).
            models.Index(fields=["agent"], name="knowledge_chunk_agent"),
            # knowledge.embed: the next batch of a document's chunks still without a vector.
            models.Index(
                fields=["document", "id"],
                condition=Q(embedding__isnull=True),
                name="knowledge_chunk_unembedded",
            ),
        ]


class KnowledgeTerm(models.Model):
    """How many of an Agent's searchable chunks hold a term (PostgreSQL only): the document
    frequency BM25 weighs a query term by. Kept by statement triggers on knowledge_chunk
    (migration 0005), whatever inserts, flips `is_searchable`, or deletes chunks."""

    id = models.BigAutoField(primary_key=True)
    agent = models.ForeignKey("workspaces.Agent", on_delete=models.CASCADE, related_name="+")
    term = models.TextField()
    chunks = models.IntegerField()

    class Meta:
        db_table = "knowledge_term"
        constraints = [
            models.UniqueConstraint(fields=["agent", "term"], name="knowledge_term_unique")
        ]


class KnowledgeTermTotal(models.Model):
    """An Agent's searchable chunks and their summed lengths in distinct terms: BM25's
    collection size and average passage length (PostgreSQL only, kept by the same triggers)."""

    agent = models.OneToOneField(
        "workspaces.Agent", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    chunks = models.BigIntegerField()
    lexemes = models.BigIntegerField()

    class Meta:
        db_table = "knowledge_term_total"


# Unanswered questions and document retrievals (apps.knowledge.gaps), registered with this app.
from apps.knowledge.gaps.models import (  # noqa: E402, F401
    KnowledgeDocumentRetrieval,
    KnowledgeGap,
    KnowledgeGapOccurrence,
    KnowledgeGapQuestion,
    KnowledgeGapSweep,
)
