"""Announcements of knowledge searches, so other apps can react without knowledge knowing them.

A search that names the run it serves (`run_id` on POST /v1/knowledge/search) is announced;
activity listens and records it as that run's retrieval step (apps.activity.apps). Listeners
run in the request, before the answer; one that raises (a run that does not exist) makes the
request fail with its error.
"""

from dataclasses import dataclass
from datetime import datetime

from apps.common.events import Announcement, Question
from apps.workspaces.models import Agent


@dataclass(frozen=True)
class SearchPassage:
    document_id: str
    document_name: str
    passage: str  # plain text (the snippet without its <mark> tags)
    score: float


@dataclass(frozen=True)
class KnowledgeSearched:
    agent: Agent
    run_id: str
    query: str
    mode: str
    passages: list[SearchPassage]
    started_at: datetime
    ended_at: datetime


knowledge_searched: Announcement[KnowledgeSearched] = Announcement()
on_knowledge_searched = knowledge_searched.listen
announce_knowledge_searched = knowledge_searched.announce


# --- Questions answered by whoever knows -----------------------------------------------------------
# Not announcements: the caller wants an answer. The app that knows registers a provider in its
# `AppConfig.ready()`; without one the answer is "nothing known".

# Runs that used a document: activity knows which runs retrieved it; the document's page asks
# through this hook (registered in apps.activity.apps) rather than importing activity.

_document_run_counts: Question[[Agent, str], dict[int, int]] = Question()
provide_document_run_counts = _document_run_counts.provide


def document_run_counts(*, agent: Agent, document_id: str) -> dict[int, int] | None:
    """{days: runs of the last `days` days that retrieved the document}, or None without a
    provider."""
    return _document_run_counts.ask(agent, document_id)


# --- Which ids name the Agent's documents -------------------------------------------------------
# The transcript links an AI SDK `source-document` part to the document's page when its
# `sourceId` is one of the Agent's documents; knowledge answers (apps.knowledge.apps).

_known_document_ids: Question[[Agent, set[str]], set[str]] = Question()
provide_document_finder = _known_document_ids.provide


def known_document_ids(*, agent: Agent, ids: set[str]) -> set[str]:
    """The ids among `ids` that name documents of the Agent (none without a finder)."""
    if not ids:
        return set()
    return _known_document_ids.ask(agent, ids) or set()
