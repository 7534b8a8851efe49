"""The demo Agent's help articles: queued once, then extracted, indexed and searchable."""

import pytest

from apps.knowledge import tasks
from apps.knowledge.demo import ARTICLES, knowledge_seed_demo
from apps.knowledge.models import KnowledgeDocument
from apps.knowledge.search import search_chunks

pytestmark = pytest.mark.django_db


def test_demo_articles_are_queued_once_and_become_searchable(agent, media_root):
    assert knowledge_seed_demo(agent=agent)
    assert knowledge_seed_demo(agent=agent) is None
    documents = KnowledgeDocument.objects.filter(agent=agent)
    assert documents.count() == len(ARTICLES)
    assert {d.status for d in documents} == {"processing"}
    for document in documents:
        assert tasks.ingest.run(document.pk) == "ready"
    hits = search_chunks(agent=agent, query="bank transfer", limit=5)
    assert hits and "Refund policy" in hits[0].document_name
