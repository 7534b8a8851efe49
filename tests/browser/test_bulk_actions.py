"""Bulk actions with the keyboard alone (issue 26, item 4): tick rows with Space, choose the
action with Enter, read the count on the confirmation page, confirm with Enter."""

import pytest

from apps.knowledge.models import KnowledgeDocument
from apps.workspaces.models import ApiKey
from tests.factories import api_key_factory
from tests.knowledge.conftest import make_file_document

pytestmark = pytest.mark.django_db(transaction=True)


def _tab_to(page, predicate_js: str, limit: int = 80) -> None:
    """Press Tab until the focused element satisfies `predicate_js` (an expression of `el`)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(
            f"(() => {{ const el = document.activeElement; return {predicate_js}; }})()"
        ):
            return
    raise AssertionError(f"never reached an element where {predicate_js}")


def test_delete_two_documents_with_the_keyboard(console_page, agent):
    page = console_page
    documents = [
        make_file_document(agent, f"Text {n}".encode(), f"doc-{n}.txt", ingest=False)
        for n in range(3)
    ]
    page.goto(f"{page.live_server_url}/knowledge/")
    for document in documents[:2]:
        _tab_to(page, f"el.name === 'ids' && el.value === '{document.pk}'")
        page.keyboard.press("Space")
    assert page.locator("#bulk-documents [data-bulk-count]").inner_text() == "2 selected"

    # Back up to the bar above the table with Shift+Tab, to its Delete button.
    for _ in range(80):
        page.keyboard.press("Shift+Tab")
        if page.evaluate(
            "document.activeElement.value === 'delete' && 'bulkAction' in document.activeElement.dataset"
        ):
            break
    page.keyboard.press("Enter")
    page.locator("#bulk-question").wait_for()
    assert page.locator("#bulk-question").inner_text() == "Delete 2 documents?"
    assert KnowledgeDocument.objects.count() == 3

    _tab_to(page, "el.id === 'bulk-confirm'")
    page.keyboard.press("Enter")
    page.get_by_text("Deleted 2 documents.").wait_for()
    assert list(KnowledgeDocument.objects.values_list("pk", flat=True)) == [documents[2].pk]


def test_select_all_then_revoke_keys_with_the_keyboard(console_page, agent, owner):
    page = console_page
    for n in range(2):
        api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner, name=f"Job {n}")
    page.goto(f"{page.live_server_url}/api-keys/")
    _tab_to(page, "el.dataset.selectAll === 'bulk-keys'")
    page.keyboard.press("Space")
    assert page.locator("#bulk-keys [data-bulk-count]").inner_text() == "2 selected"

    page.keyboard.press("Shift+Tab")  # the bar's Revoke button sits just before the table
    assert page.evaluate("document.activeElement.value") == "revoke"
    page.keyboard.press("Enter")
    assert page.locator("#bulk-question").inner_text() == "Revoke 2 keys?"
    _tab_to(page, "el.id === 'bulk-confirm'")
    page.keyboard.press("Enter")
    page.get_by_text("Revoked 2 keys.").wait_for()
    assert ApiKey.objects.filter(kind="key", revoked_at__isnull=True).count() == 0
