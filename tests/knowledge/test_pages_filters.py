"""Knowledge list filters (issue 26, item 5): "show me what failed", by status, source and
type; an edited filter shows every document and says why."""

import pytest

from tests.knowledge.conftest import make_file_document
from tests.knowledge.factories import url_document_factory

pytestmark = pytest.mark.django_db


@pytest.fixture
def documents(agent):
    ready = make_file_document(agent, b"# Hours\n\nNine to five.", "hours.md")
    failed = make_file_document(agent, b"%PDF-1.4 broken", "contract.pdf")
    page = url_document_factory(
        agent=agent, name="Help page", url="https://example.com/help", kind="html"
    )
    assert (ready.status, failed.status) == ("ready", "failed")
    return {"ready": ready, "failed": failed, "page": page}


def _rows(html: str) -> set[str]:
    import re

    return set(re.findall(r'id="document-row-([^"]+)"', html))


def test_show_me_what_failed(owner_client, documents):
    html = owner_client.get("/knowledge/?status=failed").content.decode()
    assert _rows(html) == {documents["failed"].pk}
    assert '<option value="failed" selected>' in html


def test_filter_by_source_and_type(owner_client, documents):
    urls = owner_client.get("/knowledge/?source=url").content.decode()
    assert _rows(urls) == {documents["page"].pk}
    markdown = owner_client.get(
        "/knowledge/?kind=markdown", headers={"HX-Request": "true", "HX-Target": "document-table"}
    ).content.decode()
    assert "<html" not in markdown
    assert _rows(markdown) == {documents["ready"].pk}


def test_nothing_matching_says_so(owner_client, documents):
    html = owner_client.get("/knowledge/?status=processing").content.decode()
    assert "No documents match these filters." in html


def test_an_edited_filter_shows_every_document_and_why(owner_client, documents):
    html = owner_client.get("/knowledge/?status=exploded").content.decode()
    assert _rows(html) == {d.pk for d in documents.values()}
    assert "status must be one of" in html


def test_every_list_shows_its_total(owner_client, documents, agent):
    """Issue 26, item 5: only Runs and Conversations showed a total."""
    from tests.activity.factories import end_user_factory
    from tests.webhooks.factories import delivery_factory, webhook_factory

    end_user_factory(agent=agent, display_name="Ada")
    webhook = webhook_factory(agent=agent)
    for status in ("failed", "succeeded"):
        delivery_factory(webhook=webhook, status=status, next_attempt_at=None)

    assert 'id="list-count">3 documents<' in owner_client.get("/knowledge/").content.decode()
    failed = owner_client.get("/knowledge/?status=failed").content.decode()
    assert 'id="list-count">1 document matches these filters<' in failed
    assert 'id="list-count">1 user<' in owner_client.get("/users/").content.decode()
    assert 'id="list-count">2 deliveries<' in owner_client.get("/webhooks/").content.decode()
