"""Bulk actions on ticked documents (issue 26, item 4): the page asks first with how many and
what happens, then acts one document at a time through the same services as each row."""

import pytest

from apps.knowledge.models import KnowledgeDocument
from tests.knowledge.conftest import make_file_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def three(agent):
    return [
        make_file_document(agent, f"Text {n}".encode(), f"doc-{n}.txt", ingest=False)
        for n in range(3)
    ]


def test_delete_asks_with_the_count_then_deletes(owner_client, three):
    ids = [three[0].pk, three[1].pk]

    asked = owner_client.post("/knowledge/bulk/", {"action": "delete", "ids": ids})
    html = asked.content.decode()
    assert asked.status_code == 200
    assert "Delete 2 documents?" in html and "deleted for good" in html
    assert "doc-0.txt" in html and "doc-1.txt" in html and "doc-2.txt" not in html
    assert KnowledgeDocument.objects.count() == 3  # nothing happens before the confirmation

    done = owner_client.post(
        "/knowledge/bulk/", {"action": "delete", "ids": ids, "confirm": "1"}, follow=True
    )
    assert "Deleted 2 documents." in done.content.decode()
    assert list(KnowledgeDocument.objects.values_list("pk", flat=True)) == [three[2].pk]


def test_disable_and_a_refresh_of_files_says_why_they_were_left(owner_client, three):
    ids = [document.pk for document in three]
    owner_client.post("/knowledge/bulk/", {"action": "disable", "ids": ids, "confirm": "1"})
    assert not KnowledgeDocument.objects.filter(is_enabled=True).exists()

    refreshed = owner_client.post(
        "/knowledge/bulk/", {"action": "refresh", "ids": ids, "confirm": "1"}, follow=True
    ).content.decode()
    assert "Refresh started for 0 documents. 3 left as they were:" in refreshed


def test_another_agents_documents_are_never_touched(owner_client, agent, other_agent):
    theirs = make_file_document(other_agent, b"Theirs", "theirs.txt", ingest=False)
    mine = make_file_document(agent, b"Mine", "mine.txt", ingest=False)

    asked = owner_client.post("/knowledge/bulk/", {"action": "delete", "ids": [theirs.pk, mine.pk]})
    assert "Delete 1 document?" in asked.content.decode()
    owner_client.post(
        "/knowledge/bulk/", {"action": "delete", "ids": [theirs.pk, mine.pk], "confirm": "1"}
    )
    assert list(KnowledgeDocument.objects.values_list("pk", flat=True)) == [theirs.pk]


def test_nothing_ticked_or_an_unknown_action_says_so(owner_client, three):
    none = owner_client.post("/knowledge/bulk/", {"action": "delete"}, follow=True)
    assert "Tick the documents to act on first." in none.content.decode()
    odd = owner_client.post(
        "/knowledge/bulk/", {"action": "explode", "ids": [three[0].pk]}, follow=True
    )
    assert "Choose refresh, disable or delete." in odd.content.decode()
    too_many = owner_client.post(
        "/knowledge/bulk/",
        {"action": "delete", "ids": [f"doc_{n}" for n in range(101)]},
        follow=True,
    )
    assert "Choose at most 100 rows at a time." in too_many.content.decode()
    assert KnowledgeDocument.objects.count() == 3


def test_the_list_has_a_box_per_row_tied_to_the_bulk_form(owner_client, three):
    html = owner_client.get("/knowledge/").content.decode()
    assert 'id="bulk-documents"' in html
    for document in three:
        assert f'name="ids" value="{document.pk}" form="bulk-documents"' in html


def test_every_pager_uses_one_style_of_links():
    """Issue 26, item 5: "Older »" and "Older →" both appeared. Every list pages through
    templates/_pager.html (whatever its order: "Older" is wrong for a list sorted by name);
    only the time-ordered histories on detail pages (revisions, a server's changes) say
    Newer and Older, in the one style."""
    import re
    from pathlib import Path

    labels = set()
    for template in Path("templates").rglob("*.html"):
        labels |= set(
            re.findall(
                r">\s*([^<>]*\b(?:Older|Newer|Newest|First page)\b[^<>]*)<", template.read_text()
            )
        )
    assert labels <= {"« First page", "Newest", "← Newer", "Older →"}, labels
    for template in Path("templates").rglob("*_list.html"):
        text = template.read_text()
        if "cursor" not in text:  # a list shown whole (API keys)
            continue
        assert 'class="pager"' not in text and "_pager.html" in text, template
