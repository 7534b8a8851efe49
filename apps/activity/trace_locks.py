"""Advisory locks that serialise the requests recording the same traces (or end user, or
conversation) until they commit (apps.activity.tracing, orphan_spans, pending_spans).
"""

from django.db import connection

from apps.workspaces.models import Agent


def locks_take(agent: Agent, names: set[str]) -> None:
    """Serialise requests touching the same traces (or end user, or conversation) until they
    commit: a child and its parent sent at once (exporters send each span as it ends) must not
    both miss the other, and two traces must not both create one conversation."""
    if connection.vendor != "postgresql" or not names:
        return
    keys = sorted(f"{agent.pk}:{name}" for name in names)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(key, 25)) "
            "FROM unnest(%s::text[]) AS key ORDER BY key",
            [keys],
        )
