"""Reads of unanswered questions and document retrievals: every one takes the Agent first.
Nothing here groups or embeds: the sweep keeps the groups current (services.gaps_sweep)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from apps.api.pagination import unknown_query_refuse
from apps.common.errors import BadRequest, NotFound
from apps.common.keyset import Keyset, Page, PageRequest, page_request, paginate
from apps.common.sorting import ListSorts, SortColumn
from apps.knowledge.gaps.models import (
    KnowledgeDocumentRetrieval,
    KnowledgeGap,
    KnowledgeGapOccurrence,
    KnowledgeGapQuestion,
)
from apps.knowledge.gaps.services import RETRIEVAL_DAYS
from apps.workspaces.models import Agent

# GET /v1/knowledge/gaps: last asked first (index gap_agent_seen / gap_agent_status_seen).
GAP_KEYSET = Keyset(name="knowledge-gaps", field="last_seen_at", descending=True)
# The page: most asked first, or last asked first (indexes gap_agent_status_count and
# gap_agent_status_seen: the page always filters by status).
GAP_PAGE_KEYSET = Keyset(
    name="knowledge-gaps-page", field="question_count", descending=True, value_kind="number"
)
GAP_SORTS = ListSorts(
    GAP_PAGE_KEYSET,
    (
        SortColumn("count", "Asked", "question_count", "number"),
        SortColumn("last_seen", "Last asked", "last_seen_at", "time"),
    ),
)
STATUSES = tuple(KnowledgeGap.Status.values)
LIST_PARAMETERS = frozenset({"limit", "after", "status"})
# Example conversations shown per group in a list, and the latest askings looked at for them.
LIST_EXAMPLES = 3
EXAMPLE_SCAN = 20


@dataclass(frozen=True)
class GapFilters:
    status: str | None = None


def gap_filters_parse(params) -> tuple[GapFilters, PageRequest]:
    """The list's query: `status`, `limit`, `after`; any other parameter is a 400."""
    unknown_query_refuse(params, LIST_PARAMETERS)
    status = params.get("status") or None
    if status is not None and status not in STATUSES:
        raise BadRequest(f"status must be one of: {', '.join(STATUSES)}; got {status!r}.")
    return GapFilters(status=status), page_request(params)


def gap_queryset(*, agent: Agent, filters: GapFilters | None = None) -> QuerySet[KnowledgeGap]:
    queryset = KnowledgeGap.objects.filter(agent=agent).defer("vector_sum")
    if filters and filters.status:
        queryset = queryset.filter(status=filters.status)
    return queryset


def gap_list(*, agent: Agent, filters: GapFilters, page: PageRequest) -> Page:
    """An Agent's groups of unanswered questions, last asked first, each with its example
    conversations (`gap.examples`)."""
    result = paginate(gap_queryset(agent=agent, filters=filters), keyset=GAP_KEYSET, page=page)
    gap_examples_attach(result.rows)
    return result


def gap_examples_attach(gaps: Iterable[KnowledgeGap], *, per_gap: int = LIST_EXAMPLES) -> None:
    """Set `gap.examples`: the conversations of its latest askings, newest first (distinct,
    at most `per_gap`), each {conversation_id, run_id, question, asked_at}: the latest
    EXAMPLE_SCAN askings of each group, one index range of gap_occurrence_gap_asked per group
    (on PostgreSQL all groups of a page in one statement)."""
    gaps = list(gaps)
    if not gaps:
        return
    rows: dict[str, list[tuple]] = {gap.pk: [] for gap in gaps}
    if connection.vendor == "postgresql":
        table = KnowledgeGapOccurrence._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT g.id, o.conversation_id, o.run_id, o.query, o.asked_at "  # noqa: S608
                "FROM unnest(%s::varchar[]) AS g(id) CROSS JOIN LATERAL ("
                f"SELECT conversation_id, run_id, query, asked_at FROM {table} "
                "WHERE gap_id = g.id ORDER BY asked_at DESC, id DESC LIMIT %s) o",
                [list(rows), EXAMPLE_SCAN],
            )
            for gap_id, *row in cursor.fetchall():
                rows[gap_id].append(tuple(row))
    else:
        for gap in gaps:
            rows[gap.pk] = list(
                KnowledgeGapOccurrence.objects.filter(gap_id=gap.pk)
                .order_by("-asked_at", "-id")
                .values_list("conversation_id", "run_id", "query", "asked_at")[:EXAMPLE_SCAN]
            )
    for gap in gaps:
        seen: dict[str, dict] = {}
        for conversation, run_id, query, asked_at in rows[gap.pk]:
            if conversation and conversation not in seen and len(seen) < per_gap:
                seen[conversation] = {
                    "conversation_id": conversation,
                    "run_id": run_id,
                    "question": query,
                    "asked_at": asked_at,
                }
        gap.examples = list(seen.values())  # type: ignore[attr-defined]


def gap_get(*, agent: Agent, gap_id: str) -> KnowledgeGap:
    gap = gap_queryset(agent=agent).filter(pk=gap_id[:40]).first()
    if gap is None:
        raise NotFound(f"No unanswered question group {gap_id} for this Agent.")
    gap_examples_attach([gap], per_gap=10)
    return gap


def gap_questions(*, gap: KnowledgeGap, limit: int = 20) -> list[KnowledgeGapQuestion]:
    """A group's distinct questions, most asked first."""
    return list(
        KnowledgeGapQuestion.objects.filter(gap=gap)
        .order_by("-count", "first_seen_at", "id")
        .only("id", "text", "count", "first_seen_at", "last_seen_at")[:limit]
    )


def gap_askings(*, gap: KnowledgeGap, limit: int = 20) -> list[KnowledgeGapOccurrence]:
    """A group's latest askings: question, why it was unanswered, its run and conversation."""
    return list(
        KnowledgeGapOccurrence.objects.filter(gap=gap)
        .order_by("-asked_at", "-id")
        .only(
            "id", "query", "reason", "negative_feedback", "run_id", "conversation_id",
            "best_score", "best_document_id", "best_document_title", "asked_at",
        )[:limit]
    )  # fmt: skip


def gap_open_count(*, agent: Agent) -> int:
    return KnowledgeGap.objects.filter(agent=agent, status=KnowledgeGap.Status.OPEN).count()


# --- documents ---------------------------------------------------------------------------


def _since(days: int):
    return timezone.now() - timedelta(days=days)


@dataclass(frozen=True)
class DocumentRetrievals:
    runs: int  # runs of the last `days` days whose retrieval returned the document
    negative: int  # of those, runs an end user gave a thumbs down
    days: int

    @property
    def negative_share(self) -> float | None:
        return self.negative / self.runs if self.runs else None


def document_retrievals(
    *, agent: Agent, document_id: str, days: int = RETRIEVAL_DAYS
) -> DocumentRetrievals:
    """How often the document was retrieved in the last `days` days, and how many of those
    runs got negative feedback (apps.knowledge.gaps.feedback)."""
    totals = KnowledgeDocumentRetrieval.objects.filter(
        agent=agent, document_id=document_id, retrieved_at__gte=_since(days)
    ).aggregate(runs=Count("id"), negative=Count("id", filter=Q(negative_feedback=True)))
    return DocumentRetrievals(runs=totals["runs"], negative=totals["negative"], days=days)


def document_retrieval_counts(
    *, agent: Agent, document_ids: Iterable[str], days: int = RETRIEVAL_DAYS
) -> dict[str, int]:
    """{document id: runs that retrieved it in the last `days` days} for a page of documents
    (absent: none)."""
    ids = list(document_ids)
    if not ids:
        return {}
    return dict(
        KnowledgeDocumentRetrieval.objects.filter(
            agent=agent, document_id__in=ids, retrieved_at__gte=_since(days)
        )
        .values_list("document_id")
        .annotate(runs=Count("id"))
        .values_list("document_id", "runs")
    )


def documents_by_retrieval(
    queryset: QuerySet, *, agent: Agent, retrieved: bool, days: int = RETRIEVAL_DAYS
) -> QuerySet:
    """The documents of `queryset` retrieved (or, `retrieved=False`, never retrieved) in the
    last `days` days: one index probe of doc_retrieval_agent_doc per document."""
    recent = KnowledgeDocumentRetrieval.objects.filter(
        agent=agent, document_id=OuterRef("pk"), retrieved_at__gte=_since(days)
    )
    return queryset.filter(Exists(recent)) if retrieved else queryset.filter(~Exists(recent))
