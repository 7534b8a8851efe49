from contextlib import suppress

from django.apps import AppConfig
from django.db import DatabaseError
from django.db.backends.signals import connection_created


def _hnsw_scans_until_enough(sender, connection, **kwargs) -> None:
    """pgvector's HNSW index holds every Agent's chunks, and a search keeps one Agent's: without
    an iterative scan, the index stops after `hnsw.ef_search` (40) nearest chunks of ANY Agent
    and the filter may leave few or none. `relaxed_order` scans on until the LIMIT is met (the
    search re-sorts by similarity). Set per connection, so a search costs no extra query; on a
    server without pgvector it is an inert placeholder setting."""
    from django.conf import settings

    # Behind a transaction pooler a session SET would land on one server connection of the
    # pool and not on the next: the search sets it for its own transaction instead
    # (search.semantic.hnsw_scans_until_enough).
    if connection.vendor == "postgresql" and settings.DATABASE_POOLER != "transaction":
        # A pgvector older than 0.8 has no iterative scans: it keeps its default.
        with connection.cursor() as cursor, suppress(DatabaseError):
            cursor.execute("SET hnsw.iterative_scan = relaxed_order")


class KnowledgeConfig(AppConfig):
    name = "apps.knowledge"
    label = "knowledge"

    def ready(self) -> None:
        connection_created.connect(_hnsw_scans_until_enough, dispatch_uid="knowledge-hnsw-scan")
        from apps.knowledge.events import provide_document_finder

        provide_document_finder(_known_document_ids)
        # The unanswered-questions sweep is a task of its own module (apps.knowledge.gaps).
        import apps.knowledge.gaps.tasks  # noqa: F401
        from apps.scores.events import on_run_feedback_changed

        on_run_feedback_changed(_run_feedback_changed)


def _run_feedback_changed(event) -> None:
    """A run got (or lost) an end user's thumbs down: its retrieval questions join (or leave)
    the Unanswered questions, and its documents' share of disliked runs follows."""
    from apps.knowledge.gaps.feedback import runs_feedback_record

    runs_feedback_record(agent_id=event.agent_id, run_ids={event.run_id}, negative=event.negative)


def _known_document_ids(agent, ids: set[str]) -> set[str]:
    from apps.knowledge.models import KnowledgeDocument

    return set(
        KnowledgeDocument.objects.filter(agent=agent, pk__in=ids).values_list("pk", flat=True)
    )
