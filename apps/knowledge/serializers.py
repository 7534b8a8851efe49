"""Knowledge API shapes: strict input serializers, the plain output functions, and the
`...Out` serializers that describe that output for the OpenAPI document."""

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from apps.api.serializers import (
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    list_envelope,
)
from apps.common.time import iso
from apps.knowledge.models import DEFAULT_REFRESH_INTERVAL, REFRESH_INTERVALS, KnowledgeDocument
from apps.knowledge.relevance import DEFAULT_MIN_SCORE
from apps.knowledge.search import MODES as SEARCH_MODES
from apps.knowledge.search import SearchHit

MAX_QUERY_LENGTH = 500
MAX_SEARCH_LIMIT = 50
DEFAULT_SEARCH_LIMIT = 10


def _interval_validator(value: int) -> None:
    if value not in REFRESH_INTERVALS:
        raise serializers.ValidationError(
            "Must be one of " + ", ".join(map(str, REFRESH_INTERVALS)) + "."
        )


# --- input --------------------------------------------------------------------------------


class KnowledgeFileCreateIn(serializers.Serializer):
    """multipart/form-data: validated by hand in the view (files are not JSON)."""

    file = serializers.FileField(help_text="The document: at most 10 MB.")
    name = serializers.CharField(
        required=False, min_length=1, max_length=120, help_text="Defaults to the file name."
    )


class KnowledgeUrlCreateIn(StrictSerializer):
    url = StrictCharField(min_length=1, max_length=4096)
    name = StrictCharField(required=False, min_length=1, max_length=120)
    refresh_interval_hours = StrictIntegerField(
        required=False, default=DEFAULT_REFRESH_INTERVAL, validators=[_interval_validator]
    )


class KnowledgeDocumentUpdateIn(StrictSerializer):
    name = StrictCharField(required=False, min_length=1, max_length=120)
    is_enabled = StrictBooleanField(required=False)

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError("Send at least one of name and is_enabled.")
        return attrs


class KnowledgeScheduleIn(StrictSerializer):
    refresh_interval_hours = StrictIntegerField(validators=[_interval_validator])


class StrictScoreField(serializers.FloatField):
    """A JSON number (not a string or boolean), finite."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise serializers.ValidationError("Must be a JSON number.")
        return super().to_internal_value(data)


class KnowledgeSearchIn(StrictSerializer):
    query = StrictCharField(min_length=1, max_length=MAX_QUERY_LENGTH)
    limit = StrictIntegerField(
        required=False, default=DEFAULT_SEARCH_LIMIT, min_value=1, max_value=MAX_SEARCH_LIMIT
    )
    mode = serializers.ChoiceField(
        choices=list(SEARCH_MODES),
        required=False,
        default="hybrid",
        help_text="hybrid (keywords and meaning, fused by reciprocal rank), keyword or semantic.",
    )
    min_score = StrictScoreField(
        required=False,
        default=DEFAULT_MIN_SCORE,
        min_value=0.0,
        max_value=1.0,
        help_text=(
            "Extension. Passages whose calibrated relevance `score` is below this are not "
            f"returned. Default {DEFAULT_MIN_SCORE}, the calibrated threshold: a question the "
            "knowledge does not answer gets an empty list. 0 returns every candidate."
        ),
    )
    explain = StrictBooleanField(
        required=False,
        default=False,
        help_text=(
            "Extension. With `true`, each hit also carries `explain`: how it was found and "
            "scored (its keyword and semantic ranks, the fused value, coverage, similarity). "
            "Without it, hits carry exactly the fields listed."
        ),
    )
    run_id = StrictCharField(
        required=False,
        max_length=64,
        help_text="The run this search serves (extension): the search is recorded as that "
        "run's retrieval step, with the passages it returned. Also `X-Run-Id`.",
    )


# --- output -------------------------------------------------------------------------------


def document_out(document: KnowledgeDocument) -> dict:
    """Exactly the fields of contract section 2.6 (indexing progress is `indexing_out`)."""
    return {
        "object": "knowledge_document",
        "id": document.pk,
        "name": document.name,
        "source_type": document.source_type,
        "source_url": document.source_url,
        "file_name": document.file_name,
        "file_size_bytes": document.file_size_bytes,
        "is_enabled": document.is_enabled,
        "status": document.status,
        "error_message": document.error_message,
        "refresh_status": document.refresh_status,
        "refresh_error_message": document.refresh_error_message,
        "refresh_interval_hours": document.refresh_interval_hours,
        "character_count": document.character_count,
        "last_checked_at": iso(document.last_checked_at),
        "last_synced_at": iso(document.last_synced_at),
        "next_refresh_at": iso(document.next_refresh_at),
        "created_at": iso(document.created_at),
        "updated_at": iso(document.updated_at),
    }


def indexing_out(document: KnowledgeDocument, *, model: str) -> dict:
    """GET /v1/knowledge/{id}/indexing: how far the document's semantic index is."""
    return {
        "object": "knowledge_indexing",
        "document_id": document.pk,
        "state": document.embedding_state,
        "passages": document.chunk_count,
        "embedded": document.embedded_chunk_count,
        "model": model,
        "last_progress_at": iso(document.embedding_progressed_at),
        "retry_at": iso(document.embedding_retry_at),
        "error_message": document.embedding_error if document.embedding_retry_at else None,
    }


def search_out(*, query: str, hits: list[SearchHit], explain: bool = False) -> dict:
    data = []
    for hit in hits:
        item = {
            "object": "knowledge_search_hit",
            "document_id": hit.document_id,
            "document_name": hit.document_name,
            "chunk_id": str(hit.chunk_id),
            "heading_path": hit.heading_path,
            "position": hit.position,
            "snippet": hit.snippet,
            "score": hit.score,
            "text": hit.text,
        }
        if explain:  # asked for: the hits' fields stay exactly the listed ones otherwise
            item["explain"] = explain_out(hit)
        data.append(item)
    return {"object": "knowledge_search_result", "query": query, "data": data}


def explain_out(hit: SearchHit) -> dict:
    return {
        "keyword_rank": hit.keyword_rank,
        "semantic_rank": hit.semantic_rank,
        "fused": hit.fused,
        "fused_rank": hit.fused_rank,
        "coverage": hit.coverage,
        "similarity": hit.similarity,
        "contents_page": hit.contents_page,
    }


@extend_schema_serializer(component_name="KnowledgeDocument")
class KnowledgeDocumentOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["knowledge_document"])
    id = serializers.CharField()
    name = serializers.CharField(min_length=1, max_length=120)
    source_type = serializers.ChoiceField(choices=["file", "url"])
    source_url = serializers.URLField(allow_null=True)
    file_name = serializers.CharField(allow_null=True)
    file_size_bytes = serializers.IntegerField(allow_null=True, min_value=0)
    is_enabled = serializers.BooleanField()
    status = serializers.ChoiceField(choices=["processing", "ready", "failed"])
    error_message = serializers.CharField(allow_null=True)
    refresh_status = serializers.ChoiceField(choices=["idle", "refreshing", "failed"])
    refresh_error_message = serializers.CharField(allow_null=True)
    refresh_interval_hours = serializers.ChoiceField(
        choices=list(REFRESH_INTERVALS), allow_null=True
    )
    character_count = serializers.IntegerField(allow_null=True, min_value=0)
    last_checked_at = serializers.DateTimeField(allow_null=True)
    last_synced_at = serializers.DateTimeField(allow_null=True)
    next_refresh_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


KnowledgeDocumentListOut = list_envelope(KnowledgeDocumentOut, "KnowledgeDocumentList")


class KnowledgeSearchExplainOut(serializers.Serializer):
    keyword_rank = serializers.IntegerField(
        allow_null=True,
        help_text="Place in the keyword (BM25) candidates, 1 = first; null: not there.",
    )
    semantic_rank = serializers.IntegerField(
        allow_null=True, help_text="Place in the semantic candidates (best window's cosine)."
    )
    fused = serializers.FloatField(
        allow_null=True, help_text="Reciprocal rank fusion value (hybrid mode), else null."
    )
    fused_rank = serializers.IntegerField(
        allow_null=True, help_text="Place in the fused list (hybrid mode), 1 = first."
    )
    coverage = serializers.FloatField(
        help_text="Share of the query's idf-weighted words the passage holds (stop words aside)."
    )
    similarity = serializers.FloatField(
        allow_null=True, help_text="Cosine of the query with the passage's best window."
    )
    contents_page = serializers.BooleanField(
        help_text="The passage reads as a table of contents or an index: ranked below the "
        "sections it points to."
    )


class KnowledgeIndexingOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["knowledge_indexing"])
    document_id = serializers.CharField()
    state = serializers.ChoiceField(
        choices=["waiting", "running", "retrying", "done"],
        help_text="`waiting`: for extraction, or for a worker to take the embedding; "
        "`running`: a worker is embedding it now; `retrying`: the last batch failed and is "
        "tried again at `retry_at`; `done`: every passage is embedded (or there is nothing to "
        "embed).",
    )
    passages = serializers.IntegerField(
        min_value=0,
        help_text="Passages of the current version; keyword search finds them all once the "
        "document is ready.",
    )
    embedded = serializers.IntegerField(
        min_value=0,
        help_text="Passages embedded so far: searchable by meaning. Equal to `passages` when "
        "the document is fully searchable.",
    )
    model = serializers.CharField(help_text="The embedding model the passages are embedded with.")
    last_progress_at = serializers.DateTimeField(
        allow_null=True, help_text="When passages were last embedded; null before the first."
    )
    retry_at = serializers.DateTimeField(
        allow_null=True, help_text="When a failed batch is tried again (state `retrying`)."
    )
    error_message = serializers.CharField(
        allow_null=True, help_text="Why the last batch failed (state `retrying`)."
    )


class KnowledgeSearchHitOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["knowledge_search_hit"])
    document_id = serializers.CharField()
    document_name = serializers.CharField()
    chunk_id = serializers.CharField()
    heading_path = serializers.ListField(
        child=serializers.CharField(), help_text="Headings enclosing the chunk, outermost first."
    )
    position = serializers.IntegerField(min_value=0)
    snippet = serializers.CharField(
        help_text="The matching passage, HTML-escaped, with matched words in <mark>...</mark>."
    )
    score = serializers.FloatField(
        help_text=(
            "Calibrated relevance in [0, 1], the same scale in every mode: the estimated "
            "probability that the passage answers the query (docs/knowledge.md, 'Relevance "
            "score'). Results come in the mode's order (BM25, meaning, or fused rank)."
        )
    )
    text = serializers.CharField(
        help_text="Extension. The passage's full text (markdown), to answer from."
    )
    explain = KnowledgeSearchExplainOut(
        required=False, help_text="Only when the request has `explain: true`."
    )


class KnowledgeSearchResultOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["knowledge_search_result"])
    query = serializers.CharField()
    data = KnowledgeSearchHitOut(many=True)  # type: ignore[assignment]  # the contract names it
