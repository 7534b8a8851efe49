"""The worker side of knowledge: ingest, refresh, and the two beat sweepers, one module each:

- `claims`: the lease a claim holds, its heartbeat and release;
- `producing`: reading a document's bytes and extracting its Markdown, under a claim;
- `versions`: writing a content version with its chunks and search vectors;
- `ingest`: a document's first extraction; `refresh`: a URL document fetched again;
- `sweeps`: the beat sweepers that queue due refreshes and recover stalled work.

Each piece of work is claimed with a conditional update that sets a lease (`claimed_until`);
the fetch and the extraction run with no transaction open and no row locked; the result is
written in one short transaction that first locks the document row and re-reads its state, so
a document deleted meanwhile is left alone ("obsolete"). A worker killed mid-task leaves an
expired lease, and `documents_recover_stalled` queues the work again. Every failure becomes a
short human message on the document, never a stack trace.

Callers import from `apps.knowledge.pipeline`; the names below are the package's public face.
"""

from apps.knowledge.pipeline.ingest import document_ingest
from apps.knowledge.pipeline.producing import INTERRUPTED, MAX_ATTEMPTS
from apps.knowledge.pipeline.refresh import document_refresh
from apps.knowledge.pipeline.sweeps import documents_recover_stalled, documents_refresh_due

__all__ = [
    "INTERRUPTED",
    "MAX_ATTEMPTS",
    "document_ingest",
    "document_refresh",
    "documents_recover_stalled",
    "documents_refresh_due",
]
