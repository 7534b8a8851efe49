"""Reads of knowledge documents: every one takes the Agent first."""

from django.db.models import F, Value
from django.db.models.functions import Coalesce, Lower

from apps.common.errors import BadRequest, Conflict, NotFound
from apps.common.keyset import Keyset, Page, PageRequest, paginate
from apps.common.sorting import ListSorts, SortColumn
from apps.knowledge.models import KnowledgeContentVersion, KnowledgeDocument
from apps.workspaces.models import Agent

# GET /knowledge: newest first, ties broken by id (index knowledge_doc_list).
DOCUMENT_KEYSET = Keyset(name="knowledge", field="created_at", descending=True)

# The console's orders: newest first (the API's), or by name (case aside), file size (web pages,
# which have none, below every file), status or last change. Indexes in KnowledgeDocument.Meta.
DOCUMENT_SORTS = ListSorts(
    DOCUMENT_KEYSET,
    (
        SortColumn("created", "Added", "created_at", "time"),
        SortColumn("name", "Name", Lower(F("name")), "text", "asc"),
        SortColumn("size", "Source · size", Coalesce(F("file_size_bytes"), Value(-1)), "number"),
        SortColumn("status", "Status", "status", "text", "asc"),
        SortColumn("updated", "Updated", "updated_at", "time"),
    ),
)


def document_list(
    *,
    agent: Agent,
    page: PageRequest,
    status: str | None = None,
    source_type: str | None = None,
    kind: str | None = None,
) -> Page:
    """An Agent's documents, newest first, optionally only of one status, source (`file` or
    `url`) or detected type (`pdf`, `docx`, ...: `document_kinds`); BadRequest for a value
    that is none of those."""
    queryset = document_queryset(agent=agent, status=status, source_type=source_type, kind=kind)
    return paginate(queryset, keyset=DOCUMENT_KEYSET, page=page)


def document_queryset(
    *,
    agent: Agent,
    status: str | None = None,
    source_type: str | None = None,
    kind: str | None = None,
):
    """The rows `document_list` pages (and the console counts)."""
    queryset = KnowledgeDocument.objects.filter(agent=agent)
    if status:
        if status not in KnowledgeDocument.Status.values:
            raise BadRequest(f"status must be one of {', '.join(KnowledgeDocument.Status.values)}.")
        queryset = queryset.filter(status=status)
    if source_type:
        if source_type not in KnowledgeDocument.SourceType.values:
            raise BadRequest("source must be file or url.")
        queryset = queryset.filter(source_type=source_type)
    if kind:
        queryset = queryset.filter(kind=kind[:16])
    return queryset


def document_kinds(*, agent: Agent) -> list[str]:
    """The detected types among the Agent's documents, for the type filter."""
    return sorted(
        KnowledgeDocument.objects.filter(agent=agent)
        .exclude(kind="")
        .values_list("kind", flat=True)
        .distinct()
    )


def document_get(*, agent: Agent, document_id: str) -> KnowledgeDocument:
    document = KnowledgeDocument.objects.filter(agent=agent, pk=document_id).first()
    if document is None:
        raise NotFound(f"No knowledge document {document_id} for this Agent.")
    return document


def document_content(*, agent: Agent, document_id: str) -> KnowledgeContentVersion:
    """The version currently indexed, read in one statement.

    A refresh swaps the document's `current_version` and deletes the old version in one
    transaction; reading the pointer and the version together means a reader always gets one
    complete version, the old or the new, never a gap between them.
    """
    version = (
        KnowledgeContentVersion.objects.filter(
            document_id=document_id,
            document__agent=agent,
            document__current_version_id=F("id"),
        )
        .only("id", "markdown", "sha256", "created_at", "document_id")
        .first()
    )
    if version is not None:
        return version
    document_get(agent=agent, document_id=document_id)  # 404 when there is no document at all
    raise Conflict("The document has no indexed content yet; poll it until its status is ready.")


def version_chunk_count(*, version: KnowledgeContentVersion) -> int:
    return version.chunks.count()


def document_list_by_ids(*, agent, document_ids: list[str]):
    """The Agent's documents among `document_ids` (a bulk action's ticked rows), by name."""
    return KnowledgeDocument.objects.filter(agent=agent, pk__in=document_ids).order_by("name", "id")
