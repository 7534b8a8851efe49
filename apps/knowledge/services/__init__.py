"""Changes to knowledge documents asked for by people (API and console alike), by subject:

- `create`: a new document from an uploaded file or a public URL;
- `change`: rename, enable or disable, delete, refresh, retry, schedule;
- `common`: what they share (the audit entry, the task queued after commit, the name and
  interval checks, the next refresh time, removing stored files).

The work itself (fetch, extract, chunk, index) runs in Celery; see apps.knowledge.pipeline.
Every function takes the Agent first, so another Agent's document is simply not found.
Callers import from `apps.knowledge.services`; the names below are the package's public face.
"""

from apps.knowledge.services.change import (
    document_delete,
    document_refresh_request,
    document_retry,
    document_schedule,
    document_update,
)
from apps.knowledge.services.common import enqueue_after_commit, next_refresh_time
from apps.knowledge.services.create import (
    document_create_from_upload,
    document_create_from_url,
    max_upload_bytes,
)

__all__ = [
    "document_create_from_upload",
    "document_create_from_url",
    "document_delete",
    "document_refresh_request",
    "document_retry",
    "document_schedule",
    "document_update",
    "enqueue_after_commit",
    "max_upload_bytes",
    "next_refresh_time",
]
