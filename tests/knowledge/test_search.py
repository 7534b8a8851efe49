"""POST /v1/knowledge/search: ranked chunks of enabled, ready documents of the Agent."""

from __future__ import annotations

import pytest

from apps.common.lexical import fts5_expression
from apps.knowledge.search.snippets import render_snippet, snippet_text
from tests.knowledge.conftest import make_file_document

HIT_KEYS = {
    "text",
    "object",
    "document_id",
    "document_name",
    "chunk_id",
    "heading_path",
    "position",
    "snippet",
    "score",
}

HANDBOOK = """# Employee handbook

## Holidays

Employees receive twenty-five days of paid holiday each year.

## Expenses

Travel expenses are reimbursed within ten working days of a claim.

## Security

Never share your badge. Report a lost badge to security at once.
"""
RUSSIAN = "# Доставка\n\nМы доставляем посылки по всей стране за три дня.\n"
CHINESE = "# 配送\n\n我们 提供 全国 配送 服务\n"


def search(api, query: str, **extra):
    response = api.post("/v1/knowledge/search", json={"query": query, **extra})
    assert response.status == 200, response.body
    return response.json()


@pytest.fixture
def handbook(agent):
    return make_file_document(agent, HANDBOOK.encode(), "handbook.md")


@pytest.mark.smoke
def test_search_finds_the_right_chunk_with_its_heading_path(api, handbook):
    body = search(api, "reimbursed expenses")
    assert set(body) == {"object", "query", "data"}
    assert body["object"] == "knowledge_search_result"
    assert body["query"] == "reimbursed expenses"
    hit = body["data"][0]
    assert set(hit) == HIT_KEYS
    assert hit["object"] == "knowledge_search_hit"
    assert hit["document_id"] == handbook.pk
    assert hit["document_name"] == "handbook.md"
    assert hit["heading_path"] == ["Employee handbook", "Expenses"]
    assert "<mark>reimbursed</mark>" in hit["snippet"]
    assert isinstance(hit["score"], float) and hit["score"] > 0


@pytest.mark.smoke
def test_disabled_document_drops_out_and_comes_back(api, handbook):
    assert search(api, "badge")["data"]
    api.patch(f"/v1/knowledge/{handbook.pk}", json={"is_enabled": False})
    assert search(api, "badge")["data"] == []
    chunk_ids_before = set(handbook.versions.get().chunks.values_list("pk", flat=True))
    api.patch(f"/v1/knowledge/{handbook.pk}", json={"is_enabled": True})
    hits = search(api, "badge")["data"]
    assert [h["document_id"] for h in hits] == [handbook.pk]
    assert {int(h["chunk_id"]) for h in hits} <= chunk_ids_before  # no re-indexing


def test_search_ranks_the_chunk_that_matches_best_first(api, agent):
    make_file_document(
        agent,
        b"# Cats\n\nCats sleep a lot.\n\n# Dogs\n\nDogs love walks. Dogs chase balls. Dogs bark at dogs.\n",
        "pets.md",
    )
    hits = search(api, "dogs")["data"]
    assert hits[0]["heading_path"] == ["Dogs"]


def test_search_ignores_other_agents_and_unready_documents(api, agent, other_agent):
    make_file_document(other_agent, HANDBOOK.encode(), "theirs.md")
    make_file_document(agent, b"# Draft\n\nbadge policy draft", "draft.md", ingest=False)
    assert search(api, "badge")["data"] == []


def test_deleted_document_leaves_no_search_results(api, handbook):
    api.delete(f"/v1/knowledge/{handbook.pk}")
    assert search(api, "badge")["data"] == []


def test_search_matches_non_english_text(api, agent):
    make_file_document(agent, RUSSIAN.encode(), "ru.md")
    make_file_document(agent, CHINESE.encode(), "zh.md")
    assert search(api, "посылки")["data"][0]["document_name"] == "ru.md"
    assert search(api, "配送")["data"][0]["document_name"] == "zh.md"


def test_search_syntax_phrase_or_and_exclusion(api, handbook):
    assert len(search(api, '"lost badge"')["data"]) == 1
    assert search(api, '"badge lost"')["data"] == []
    assert len(search(api, "holiday or reimbursed")["data"]) == 2
    assert search(api, "badge -security")["data"] == []


def test_snippet_escapes_document_html(api, agent):
    make_file_document(
        agent,
        b"# Note\n\nTom & Jerry say the <script>alert(1)</script> tag is dangerous.\n",
        "x.md",
    )
    snippet = search(api, "dangerous")["data"][0]["snippet"]
    assert "<script>" not in snippet
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in snippet
    assert "Tom &amp; Jerry" in snippet
    assert "<mark>dangerous</mark>" in snippet


def test_search_limit_caps_results(api, agent):
    text = "\n\n".join(f"# Section {n}\n\nwidget number {n}" for n in range(8))
    make_file_document(agent, text.encode(), "widgets.md")
    assert len(search(api, "widget", limit=3)["data"]) == 3


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"query": ""},
        {"query": 5},
        {"query": "x", "limit": 0},
        {"query": "x", "limit": 51},
        {"query": "x", "limit": "5"},
        {"query": "x", "extra": True},
    ],
)
def test_search_body_is_strict(api, payload):
    response = api.post("/v1/knowledge/search", json=payload)
    assert response.status == 400
    assert response.json()["name"] == "bad_request"


def test_query_of_only_punctuation_finds_nothing(api, handbook):
    assert search(api, "!!! ???")["data"] == []


@pytest.mark.smoke
@pytest.mark.parametrize(
    ("query", "expression"),
    [
        ("lost badge", '("lost" OR "badge")'),
        ('"lost badge"', '("lost" OR "badge") AND "lost badge"'),
        ("holiday or expenses", '("holiday" OR "expenses")'),
        ("badge -security", '"badge" NOT "security"'),
        ('quote" NEAR(', '("quote" OR "NEAR")'),
        ("東京都", '("東京" OR "京都")'),
        ("-only", ""),
        ("***", ""),
    ],
)
def test_fts5_expression_quotes_every_term(query, expression):
    assert fts5_expression(query) == expression


@pytest.mark.smoke
def test_render_snippet_escapes_and_marks():
    assert render_snippet("a <b> \x02word\x03 & c") == "a &lt;b&gt; <mark>word</mark> &amp; c"
    assert render_snippet("\x02open") == "<mark>open</mark>"


def test_words_inside_angle_brackets_are_searchable(api, agent):
    make_file_document(
        agent, b"# Example\n\n```html\n<!DOCTYPE html>\n<blink>x</blink>\n```\n", "c.md"
    )
    hits = search(api, "doctype")["data"]
    assert len(hits) == 1
    assert "&lt;!<mark>DOCTYPE</mark> html&gt;" in hits[0]["snippet"]


REFUNDS = b"""# Refund policy

## How long it takes

Refunds go back to the **original** payment method, as the [bank](https://bank.example/faq)
says:

| Method | Time |
|:---|---:|
| Card | 3-5 business days |
| PayPal | 1 business day |
"""


def test_snippet_reads_as_text_not_markdown_syntax(api, agent):
    make_file_document(agent, REFUNDS, "refunds.md")
    (hit,) = search(api, "paypal")["data"]
    snippet = hit["snippet"]
    # A table's snippet is the row that matched, under its header.
    assert snippet == "Method: <mark>PayPal</mark> · Time: 1 business day"
    for syntax in ("|", "---", "**", "##", "](", "https://bank.example"):
        assert syntax not in snippet
    # The API keeps the whole path; the console drops a first heading that repeats the name.
    assert hit["heading_path"] == ["Refund policy", "How long it takes"]


@pytest.mark.smoke
@pytest.mark.parametrize(
    ("markdown", "text"),
    [
        ("## When you can ask for a \x02refund\x03", "When you can ask for a \x02refund\x03"),
        ("within **30 days** or __so__ with `code`", "within 30 days or so with code"),
        ("| a | b |\n|:---|---:|\n| x | y |", "a · b · x · y"),
        ("see [the policy](https://x.example/p) and ![logo](a.png)", "see the policy and logo"),
        ("C# and #1 stay, a|b too", "C# and #1 stay, a · b too"),
    ],
    ids=["heading", "emphasis-code", "table", "links", "not-syntax"],
)
def test_snippet_text_keeps_the_words_of_markdown(markdown, text):
    assert snippet_text(markdown) == text


@pytest.mark.smoke
def test_a_search_restricted_to_one_document_finds_only_its_passages(agent):
    from apps.knowledge import embedding_jobs, search
    from apps.knowledge.services import document_update

    kettles = make_file_document(
        agent, b"# Kettles\n\nEvery kettle carries a two-year warranty.\n", "kettles.md"
    )
    toasters = make_file_document(
        agent, b"# Toasters\n\nToasters carry a one-year warranty.\n", "toasters.md"
    )
    for document in (kettles, toasters):
        assert embedding_jobs.document_embed(document_id=document.pk, max_batches=100) == "done"

    def names(**kwargs) -> list[str]:
        hits = search.search_chunks(agent=agent, query="warranty", limit=10, **kwargs)
        return [hit.document_name for hit in hits]

    assert sorted(names()) == ["kettles.md", "toasters.md"]
    for mode in search.MODES:
        assert names(mode=mode, document_id=kettles.pk) == ["kettles.md"], mode
        assert names(mode=mode, document_id=toasters.pk) == ["toasters.md"], mode
    # The hit scores as it does in a search of everything (the Agent's statistics).
    everything = {
        hit.document_name: hit.score
        for hit in search.search_chunks(agent=agent, query="warranty", limit=10)
    }
    alone = search.search_chunks(agent=agent, query="warranty", limit=10, document_id=kettles.pk)
    assert alone[0].score == everything["kettles.md"]
    # What the Agent does not search, a restricted search does not either.
    document_update(agent=agent, document_id=kettles.pk, is_enabled=False)
    assert names(document_id=kettles.pk) == []
    assert names(document_id="doc_unknown") == []
    assert names() == ["toasters.md"]
