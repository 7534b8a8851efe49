"""What a search needs to know of the Agent before it starts: which database answers, the
text search configurations of its passages, how many documents and vectors it has (and a stamp
that changes with them), and the searchable version of one document."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from apps.common import lexical


def is_postgres() -> bool:
    return connection.vendor == "postgresql"


@dataclass(frozen=True)
class AgentSearchState:
    configs: list[str]  # text search configurations of the Agent's ready passages
    document_count: int
    embedded_count: int
    stamp: tuple  # changes whenever the Agent's documents or their vectors change


def agent_state(agent_id: str) -> AgentSearchState:
    if is_postgres():
        sql = (
            "SELECT coalesce(string_agg(DISTINCT search_configs, ','), ''), count(*), "
            "coalesce(sum(embedded_chunk_count), 0), max(updated_at) "
            "FROM knowledge_document WHERE agent_id = %s AND status = 'ready'"
        )
    else:
        sql = (
            "SELECT coalesce(group_concat(DISTINCT search_configs), ''), count(*), "
            "coalesce(sum(embedded_chunk_count), 0), max(updated_at) "
            "FROM knowledge_document WHERE agent_id = %s AND status = 'ready'"
        )
    with connection.cursor() as cursor:
        cursor.execute(sql, [agent_id])
        languages, documents, embedded, changed = cursor.fetchone()
    configs = sorted({name for name in languages.split(",") if name in lexical.SEARCH_CONFIGS})
    return AgentSearchState(
        configs=configs or ["simple"],
        document_count=documents,
        embedded_count=embedded,
        stamp=(documents, embedded, str(changed)),
    )


def searchable_version(*, agent_id: str, document_id: str) -> str | None:
    """The current version of one of the Agent's documents when the Agent searches it (ready
    and enabled): its chunks are the ones a search restricted to the document reads (the
    (version, position) index finds them)."""
    from apps.knowledge.models import KnowledgeDocument

    return (
        KnowledgeDocument.objects.filter(
            pk=document_id, agent_id=agent_id, status="ready", is_enabled=True
        )
        .values_list("current_version_id", flat=True)
        .first()
    )
