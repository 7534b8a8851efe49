from django.apps import AppConfig


class ActivityConfig(AppConfig):
    name = "apps.activity"
    label = "activity"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from apps.activity.search_index import sqlite_fts_ensure

        # Word search on SQLite: FTS5 tables and their triggers (apps.activity.search_index).
        post_migrate.connect(sqlite_fts_ensure, sender=self)
        # A knowledge search that names its run is recorded as the run's retrieval step.
        from apps.activity.services import retrieval_step_record_on_search
        from apps.knowledge.events import on_knowledge_searched, provide_document_run_counts

        on_knowledge_searched(retrieval_step_record_on_search)
        # The document page's "runs that retrieved it" in the last 7 and 30 days.
        provide_document_run_counts(_document_run_counts)


def _document_run_counts(agent, document_id: str) -> dict[int, int]:
    from apps.activity.selectors import document_run_counts

    return document_run_counts(agent=agent, document_id=document_id, days=(7, 30))
