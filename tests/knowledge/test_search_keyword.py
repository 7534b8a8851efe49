"""Keyword search: BM25 ranking with OR semantics, stop words, CJK bigrams, passage languages,
and the term statistics PostgreSQL keeps for it."""

from __future__ import annotations

import pytest
from django.db import connection

from apps.common import lexical
from apps.knowledge import search, services
from apps.knowledge.models import KnowledgeChunk, KnowledgeTerm, KnowledgeTermTotal
from apps.knowledge.search import keyword as search_keyword
from tests.knowledge.conftest import make_file_document

HANDBOOK = """# Handbook

## Holidays

Employees receive twenty-five days of paid holiday each year.

## Expenses

Travel expenses are reimbursed within ten working days of a claim.

## Badges

Never share your badge. Report a lost badge to security at once.
"""


def keyword(agent, query: str, limit: int = 5):
    return search.search_chunks(agent=agent, query=query, limit=limit, mode="keyword")


def headings(hits) -> list[str]:
    return [hit.heading_path[-1] if hit.heading_path else "" for hit in hits]


def needs_postgres() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's stemming, stop lists and term statistics")


@pytest.mark.smoke
def test_a_question_word_missing_from_the_passage_does_not_lose_it(agent):
    make_file_document(agent, HANDBOOK.encode(), "handbook.md")
    # "many", "get" and "year" appear nowhere near the answer (or at all): any word may match.
    hits = keyword(agent, "how many days of paid holiday do I get")
    assert headings(hits)[0] == "Holidays"
    assert "<mark>" in hits[0].snippet


@pytest.mark.smoke
def test_more_and_rarer_matched_words_rank_higher(agent):
    filler = "\n\n".join(
        f"# Note {n}\n\nThe office kitchen is open on weekdays." for n in range(12)
    )
    make_file_document(
        agent,
        (
            filler
            + "\n\n# Parking\n\nThe office garage opens at seven."
            + "\n\n# Garage code\n\nThe office garage door code changes monthly."
        ).encode(),
        "office.md",
    )
    hits = keyword(agent, "office garage door code", limit=20)
    # Both rare words beat one, and any rare word beats the word every note holds.
    assert headings(hits)[:2] == ["Garage code", "Parking"]
    assert all(hit.score > 0 for hit in hits)
    assert hits[0].score > hits[1].score > hits[2].score
    assert len(hits) == 14  # "office" is in every passage: all of them match, ranked last


def test_english_stop_words_do_not_count_in_text_indexed_word_for_word(agent):
    needs_postgres()
    # A CSV is indexed word for word ("simple"): "the" and "of" stay in its index.
    rows = ["name,notes"] + [f"row {n},the state of the art of the field" for n in range(30)]
    rows.append("turbine,maintenance of the turbine blades")
    make_file_document(agent, "\n".join(rows).encode(), "sheet.csv")
    assert set(KnowledgeChunk.objects.values_list("search_config", flat=True)) <= {
        "simple",
        "english",
    }
    hits = keyword(agent, "what is the maintenance of the turbine")
    assert hits and "<mark>turbine</mark>" in hits[0].snippet


def test_cjk_text_without_spaces_is_searchable_by_character_pairs(agent):
    japanese = "# 天気\n\n東京都の明日の天気は晴れのち曇りです。最高気温は二十度の予想です。\n"
    chinese = "# 退款\n\n退款会在十四天内退回原来的银行卡。\n"
    korean = "# 배송\n\n서울에서 주문한 상품은 이틀 안에 배송됩니다.\n"
    jp = make_file_document(agent, japanese.encode(), "tenki.md")
    zh = make_file_document(agent, chinese.encode(), "tuikuan.md")
    ko = make_file_document(agent, korean.encode(), "baesong.md")
    hits = keyword(agent, "東京の天気")
    assert [hit.document_id for hit in hits][:1] == [jp.pk]
    assert "<mark>東京</mark>" in hits[0].snippet and "<mark>天気</mark>" in hits[0].snippet
    assert [hit.document_id for hit in keyword(agent, "退款多久")][:1] == [zh.pk]
    # Korean glues particles to words: "서울" is found inside "서울에서".
    assert [hit.document_id for hit in keyword(agent, "서울 배송")][:1] == [ko.pk]
    assert keyword(agent, "大阪") == []


@pytest.mark.smoke
def test_cjk_bigrams_and_query_parsing():
    assert lexical.cjk_bigrams("東京都 abc 雨") == " 東京 京都  abc  雨 "
    assert lexical.index_text("plain English") is None
    parsed = lexical.parse_query('"lost badge" or holiday -security')
    assert (parsed.words, parsed.phrases, parsed.excluded) == (
        "lost badge holiday",
        ["lost badge"],
        ["security"],
    )
    marked = lexical.highlight("明日の東京都は雨", "東京 京都")
    assert marked == "明日の\x02東京都\x03は雨"


def test_each_passage_is_stemmed_in_its_own_language(agent):
    needs_postgres()
    mixed = (
        "# Shipping\n\nOrders are shipped the next working day and arrive within three days "
        "anywhere in the country, except during the holiday season.\n\n"
        "# Envíos\n\nLos pedidos se envían el siguiente día hábil y llegan en un plazo de tres "
        "días a cualquier lugar del país, excepto durante las fiestas de fin de año.\n"
    )
    document = make_file_document(agent, mixed.encode(), "shipping.md")
    configs = dict(
        KnowledgeChunk.objects.filter(document=document).values_list("position", "search_config")
    )
    assert sorted(configs.values()) == ["english", "spanish"]
    assert set(document.search_configs.split(",")) == {"english", "spanish"}
    # Spanish stemming finds "envían" from "envío" in the Spanish passage only.
    assert headings(keyword(agent, "envío"))[:1] == ["Envíos"]
    assert headings(keyword(agent, "shipping"))[:1] == ["Shipping"]


def _recounted(agent) -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.term, count(*) FROM knowledge_chunk c, "
            "unnest(tsvector_to_array(c.search_vector)) AS t(term) "
            "WHERE c.agent_id = %s AND c.is_searchable GROUP BY 1",
            [agent.pk],
        )
        return dict(cursor.fetchall())


def _kept(agent) -> dict[str, int]:
    return dict(KnowledgeTerm.objects.filter(agent=agent).values_list("term", "chunks"))


def test_term_statistics_follow_every_change_of_the_searchable_chunks(agent, other_agent):
    needs_postgres()
    handbook = make_file_document(agent, HANDBOOK.encode(), "handbook.md")
    make_file_document(other_agent, HANDBOOK.encode(), "theirs.md")
    assert _kept(agent) == _recounted(agent) and _kept(agent)["badg"] == 1
    total = KnowledgeTermTotal.objects.get(agent=agent)
    assert total.chunks == KnowledgeChunk.objects.filter(document=handbook).count() == 3

    services.document_update(agent=agent, document_id=handbook.pk, is_enabled=False)
    assert _kept(agent) == {} and not KnowledgeTermTotal.objects.filter(agent=agent).exists()
    assert _kept(other_agent) == _recounted(other_agent) != {}

    services.document_update(agent=agent, document_id=handbook.pk, is_enabled=True)
    extra = make_file_document(
        agent,
        b"# Visitors\n\nEvery visitor must wear a badge at all times inside the building, "
        b"and return it at the reception desk before leaving.",
        "more.md",
    )
    assert _kept(agent) == _recounted(agent) and _kept(agent)["badg"] == 2

    services.document_delete(agent=agent, document_id=extra.pk)
    assert _kept(agent) == _recounted(agent) and _kept(agent)["badg"] == 1
    # An unready document's chunks are not counted.
    make_file_document(agent, b"# Draft\n\nzeppelin draft", "draft.md", ingest=False)
    assert "zeppelin" not in _kept(agent)


def test_refresh_replaces_the_old_versions_statistics(agent, page_server, loopback):
    needs_postgres()
    from apps.knowledge import pipeline

    page_server.pages["/p"] = (200, {"Content-Type": "text/plain"}, b"alpha beta gamma")
    document = services.document_create_from_url(agent=agent, url=page_server.url("/p"))
    pipeline.document_ingest(document_id=document.pk)
    assert {"alpha", "beta", "gamma"} <= set(_kept(agent))
    page_server.pages["/p"] = (200, {"Content-Type": "text/plain"}, b"delta beta")
    services.document_refresh_request(agent=agent, document_id=document.pk)
    assert pipeline.document_refresh(document_id=document.pk) == "refreshed"
    assert _kept(agent) == _recounted(agent)
    assert "alpha" not in _kept(agent) and _kept(agent)["delta"] == 1


def test_a_rare_word_is_found_among_many_chunks_of_a_common_one(agent, monkeypatch):
    """Past the exact budget a common word is sampled, but every chunk holding a rarer query
    word is ranked: the one that holds both comes first."""
    needs_postgres()
    monkeypatch.setattr(search_keyword, "KEYWORD_EXACT_BUDGET", 5)
    monkeypatch.setattr(search_keyword, "KEYWORD_CANDIDATE_CAP", 3)
    common = "\n\n".join(f"# Part {n}\n\nThe service desk answers call {n}." for n in range(40))
    make_file_document(
        agent, (common + "\n\n# Zeppelin\n\nThe zeppelin service flies daily.").encode(), "s.md"
    )
    hits = keyword(agent, "zeppelin service", limit=10)
    assert headings(hits)[0] == "Zeppelin"
    assert len(hits) == 10  # chunks holding only the common word fill the answer up
    # The common word alone: a sample of at most the cap is ranked.
    assert len(keyword(agent, "service", limit=20)) == 3


def test_phrase_and_exclusion_still_filter(agent):
    make_file_document(agent, HANDBOOK.encode(), "handbook.md")
    assert headings(keyword(agent, '"lost badge"')) == ["Badges"]
    assert keyword(agent, '"badge lost"') == []
    assert keyword(agent, "badge -security") == []
    assert set(headings(keyword(agent, "holiday or reimbursed"))) == {"Holidays", "Expenses"}
