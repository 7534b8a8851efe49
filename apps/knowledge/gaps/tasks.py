"""The beat task of unanswered questions (CELERY_BEAT_SCHEDULE "knowledge-gaps-sweep"); imported
by apps.knowledge.apps so workers register it."""

from celery import shared_task

from apps.knowledge.gaps.services import gaps_sweep


@shared_task(name="knowledge.gaps_sweep")
def gaps_sweep_task() -> dict:
    """Read the new retrieval steps and group their unanswered questions (bulk queue: it runs
    the embedding model). Two at once cannot collide: each batch holds the sweep's row."""
    return gaps_sweep().as_dict()
