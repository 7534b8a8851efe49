"""The Unanswered questions pages without a browser: who may see and change them, the HTMX
region, another Agent's group, and the retrieval figures on the Knowledge pages."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.knowledge.gaps import feedback
from apps.knowledge.gaps.models import KnowledgeGap
from tests.knowledge.conftest import make_file_document
from tests.knowledge.gap_helpers import ask, gap_factory, sweep

pytestmark = pytest.mark.django_db


def test_members_see_and_resolve_groups(member_client, agent):
    gap = gap_factory(agent, question="Do you ship to Canada?")
    page = member_client.get("/knowledge/unanswered/")
    assert page.status_code == 200
    assert b"Do you ship to Canada?" in page.content
    assert b"Unanswered questions" in page.content  # in the navigation too
    done = member_client.post(f"/knowledge/unanswered/{gap.pk}/resolve/")
    assert done.status_code == 302
    assert KnowledgeGap.objects.get(pk=gap.pk).status == "resolved"
    resolved = member_client.get("/knowledge/unanswered/?status=resolved")
    assert b"Do you ship to Canada?" in resolved.content
    assert b"Do you ship to Canada?" not in member_client.get("/knowledge/unanswered/").content


def test_htmx_asks_for_the_table_only(owner_client, agent):
    gap_factory(agent, question="pet policy")
    page = owner_client.get("/knowledge/unanswered/", headers={"HX-Request": "true",
                                                               "HX-Target": "gap-table"})  # fmt: skip
    body = page.content.decode()
    assert body.lstrip().startswith('<div id="gap-table">') and "pet policy" in body
    assert "<nav" not in body.split('<div id="gap-table">')[0]


def test_another_agents_group_is_not_found_and_unchanged(owner_client, sibling_agent):
    theirs = gap_factory(sibling_agent)
    assert owner_client.get(f"/knowledge/unanswered/{theirs.pk}/").status_code == 404
    assert owner_client.post(f"/knowledge/unanswered/{theirs.pk}/resolve/").status_code == 404
    assert KnowledgeGap.objects.get(pk=theirs.pk).status == "open"


def test_signed_out_is_sent_to_sign_in(agent):
    gap = gap_factory(agent)
    response = Client().post(f"/knowledge/unanswered/{gap.pk}/resolve/")
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert KnowledgeGap.objects.get(pk=gap.pk).status == "open"


def test_resolving_a_resolved_group_says_so(owner_client, agent):
    gap = gap_factory(agent, status="resolved")
    response = owner_client.post(f"/knowledge/unanswered/{gap.pk}/resolve/", follow=True)
    assert "already resolved" in response.content.decode()


def test_document_page_says_how_often_retrieved_and_the_negative_share(
    owner_client, agent, make_api, media_root
):
    document = make_file_document(agent, b"# Prices\n\nPlans start at 9 EUR.\n", "prices.md")
    never = make_file_document(agent, b"# Parking\n\nLot B.\n", "parking.md")
    writer = make_api(scopes=["activity:write"])
    passage = {"document_id": document.pk, "title": "prices.md", "passage": "x", "score": 0.9}
    for number in range(4):
        ask(writer, f"run_{number}", "prices", [passage])
    sweep()
    feedback.runs_feedback_record(agent_id=agent.pk, run_ids={"run_0"})
    page = owner_client.get(f"/knowledge/{document.pk}/").content.decode()
    assert 'data-runs="4" data-negative="1"' in page
    assert "25 % with negative feedback" in page
    assert "Never" in owner_client.get(f"/knowledge/{never.pk}/").content.decode()
    listing = owner_client.get("/knowledge/?retrieved=no").content.decode()
    assert f"document-row-{never.pk}" in listing and f"document-row-{document.pk}" not in listing
