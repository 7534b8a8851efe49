"""Hybrid's order and what a hit explains (issue 37, section 3; issue 38, defect 4): `explain`
is opt-in, a table of contents ranks below the sections it lists, stop words of a question's
own language do not count (nor are they highlighted), and the console says what its order is."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from apps.knowledge import embedding_jobs, relevance
from tests.knowledge.conftest import make_file_document

HIT_FIELDS = {
    "object",
    "document_id",
    "document_name",
    "chunk_id",
    "heading_path",
    "position",
    "snippet",
    "score",
    "text",
}
EXPLAIN_FIELDS = {
    "keyword_rank",
    "semantic_rank",
    "fused",
    "fused_rank",
    "coverage",
    "similarity",
    "contents_page",
}

HANDBOOK = """# Staff handbook

## Contents

* [Holidays](#holidays)
* [Expenses](#expenses)
* [Remote work](#remote-work)
* [Equipment](#equipment)
* [Security](#security)

## Holidays

Every employee has twenty-five days of paid holiday a year, plus public holidays. Holidays are
booked in the HR portal at least two weeks ahead and approved by the line manager.

## Expenses

Travel expenses are refunded within a month when the receipt is uploaded to the expenses tool.

## Remote work

Staff may work from home up to three days a week after their probation period.

## Equipment

A laptop and a headset are issued on the first day; a second screen is available on request.

## Security

Passwords are changed every ninety days and the laptop disk is encrypted.
"""


def search_api(api, query: str, **extra):
    response = api.post("/v1/knowledge/search", json={"query": query, **extra})
    assert response.status == 200, response.body
    return response.json()["data"]


@pytest.fixture
def handbook(agent):
    document = make_file_document(agent, HANDBOOK.encode(), "handbook.md")
    assert embedding_jobs.document_embed(document_id=document.pk, max_batches=100) == "done"
    return document


def test_hits_carry_exactly_their_fields_unless_explain_is_asked(api, handbook):
    for mode in ("hybrid", "keyword", "semantic"):
        hits = search_api(api, "paid holiday days", mode=mode)
        assert hits, mode
        assert all(set(hit) == HIT_FIELDS for hit in hits), mode
        explained = search_api(api, "paid holiday days", mode=mode, explain=True)
        assert [hit["chunk_id"] for hit in explained] == [hit["chunk_id"] for hit in hits]
        for hit in explained:
            assert set(hit) == HIT_FIELDS | {"explain"}
            assert set(hit["explain"]) == EXPLAIN_FIELDS
        first = explained[0]["explain"]
        assert 0 < first["coverage"] <= 1
        if mode == "keyword":
            assert first["keyword_rank"] == 1 and first["similarity"] is None
            assert first["fused"] is None and first["fused_rank"] is None
        if mode == "hybrid":
            assert first["fused"] > 0 and first["fused_rank"] >= 1
            assert first["similarity"] is not None
    assert search_api(api, "paid holiday days", explain=False)[0].keys() == HIT_FIELDS


@pytest.mark.parametrize("value", ["yes", 1, None, [True]])
def test_explain_must_be_a_boolean(api, handbook, value):
    response = api.post("/v1/knowledge/search", json={"query": "holiday", "explain": value})
    assert response.status == 400, response.body
    assert "explain" in response.body.decode()


def test_a_table_of_contents_ranks_below_the_section_it_lists(api, handbook):
    for mode in ("hybrid", "keyword", "semantic"):
        hits = search_api(api, "holidays expenses", mode=mode, explain=True, min_score=0)
        names = [hit["heading_path"][-1] for hit in hits]
        assert names[0] in ("Holidays", "Expenses"), (mode, names)
        assert "Contents" in names, (mode, names)
        contents = names.index("Contents")
        assert contents > names.index("Holidays") and contents > names.index("Expenses"), names
        assert hits[contents]["explain"]["contents_page"] is True
        assert not any(hit["explain"]["contents_page"] for hit in hits if hit is not hits[contents])


def test_contents_pages_are_recognised_by_title_or_by_their_entries():
    assert relevance.is_contents_page("## 目录\n\n* [版本控制](#版本控制)", ["Books", "目录"])
    assert relevance.is_contents_page(
        "1 Scope ........ 3\n2 Terms ........ 5\n3 Design ....... 8\n4 Tests ........ 12\n"
    )
    assert not relevance.is_contents_page(
        "## Holidays\n\nEvery employee has twenty-five days of paid holiday.", ["Holidays"]
    )
    assert not relevance.is_contents_page("- one item\n- two items\n- three\n- four")


def test_saturated_scores_keep_the_fused_order():
    # 0.93-1.00 all count as "surely relevant": the fused place decides among them.
    keys = sorted(
        [
            (relevance.order_key(0.99, place=3), "c"),
            (relevance.order_key(0.93, place=1), "a"),
            (relevance.order_key(0.97, place=2), "b"),
            (relevance.order_key(0.5, place=0), "d"),
        ]
    )
    assert [name for _, name in keys] == ["a", "b", "c", "d"]


LIBRARY = (
    "# ساعات عمل المكتبة\n\nتفتح المكتبة العامة من الساعة التاسعة صباحا حتى الساعة الخامسة "
    "مساء من الأحد إلى الخميس. يمكن استعارة الكتب لمدة أسبوعين، وهي مجانية لكل من يسكن في "
    "المدينة. هل تحتاج إلى بطاقة؟ نعم، البطاقة مطلوبة.\n"
)


def test_an_unrelated_arabic_question_made_of_common_words_gets_nothing(api, agent):
    document = make_file_document(agent, LIBRARY.encode(), "library.md")
    assert embedding_jobs.document_embed(document_id=document.pk, max_batches=100) == "done"
    # Shares only common words with the passage ("ما هي", "من", "إلى", "في", "هل").
    unrelated = "ما هي أفضل طريقة للسفر من المطار إلى الفندق في دبي؟ هل هي رخيصة؟"
    for mode in ("keyword", "hybrid", "semantic"):
        assert search_api(api, unrelated, mode=mode) == [], mode
    for mode in ("keyword", "hybrid"):
        hits = search_api(api, "متى تفتح المكتبة العامة", mode=mode)
        assert hits and hits[0]["document_name"] == "library.md", mode


def test_stop_words_are_not_highlighted(api, handbook):
    hits = search_api(api, "how to book holidays in the HR portal", mode="keyword")
    snippet = hits[0]["snippet"]
    assert "<mark>portal</mark>" in snippet
    for stop in ("to", "in", "the"):
        assert f"<mark>{stop}</mark>" not in snippet.lower(), snippet


def test_console_says_which_order_its_list_is_in(owner, agent, handbook):
    client = Client()
    client.force_login(owner)
    url = reverse("knowledge:document_search")
    page = client.get(url, {"q": "how to book holidays"}).content.decode()
    assert "In order of score, highest first" in page
    assert "fused rank 1" in page or "fused rank 2" in page
    assert "<mark>to</mark>" not in page
    page = client.get(url, {"q": "book holidays", "mode": "keyword"}).content.decode()
    assert "In keyword order" in page
    page = client.get(url, {"q": "book holidays", "mode": "semantic"}).content.decode()
    assert "In order of meaning" in page
    page = client.get(url, {"q": "holidays expenses", "min_score": "0"}).content.decode()
    assert "table of contents (score halved)" in page
