"""Two or more documents per non-Latin script, and questions that must pick the right one
(issue 37, section 4).

The English model rates any two texts of one script alike, so with one document per script a
search "finds" it for any question in that script. Here each script has several documents, all
cut from the corpus and read in place: the first article of the Universal Declaration in seven
languages, the country-code table's rows of five countries (names in Arabic, Russian and
Chinese), the six-script greeting PDF and the Shift-JIS name list. Every question must rank its
own document first in keyword and hybrid mode, and a question none of them answers, in the same
scripts, must get nothing in every mode at the default threshold.
"""

from __future__ import annotations

import csv
import io

import pytest

from apps.knowledge import embedding_jobs
from tests.knowledge.conftest import corpus_file, make_file_document

LANGUAGES = [
    "Arabic, Standard",
    "Russian",
    "Chinese, Mandarin (Simplified)",
    "Japanese",
    "Korean",
    "Thai",
    "Hindi",
]
COUNTRIES = ("EGY", "FRA", "JPN", "CHN", "RUS")

# (question, the document that answers it)
QUESTIONS = [
    ("يولد جميع الناس أحرارا متساوين في الكرامة والحقوق", "udhr.txt"),
    ("جمهورية مصر العربية", "countries.csv"),
    ("مرحبا بالعالم", "multilang.pdf"),
    ("Все люди рождаются свободными и равными", "udhr.txt"),
    ("Арабская Республика Египет", "countries.csv"),
    ("Привет, мир", "multilang.pdf"),
    ("人人生而自由 尊严和权利一律平等", "udhr.txt"),
    ("阿拉伯埃及共和国", "countries.csv"),
    ("你好世界", "multilang.pdf"),
    ("すべての人間は生まれながらにして自由", "udhr.txt"),
    ("こんにちは世界", "multilang.pdf"),
    ("佐藤太郎 東京", "test_mskanji.csv"),
    ("มนุษย์ทั้งหลายเกิดมามีอิสระ", "udhr.txt"),
    ("สวัสดีชาวโลก", "multilang.pdf"),
]
# Questions none of the documents answers, in the same scripts.
UNRELATED = [
    "ما هي أفضل وصفة لطهي الأرز؟",
    "كم سعر تذكرة الطيران إلى دبي؟",
    "Сколько стоит билет на поезд до Казани?",
    "明天北京会下雨吗？",
    "近くの美味しいラーメン屋はどこですか？",
    "가장 가까운 지하철역이 어디예요?",
    "सबसे अच्छा क्रिकेट खिलाड़ी कौन है?",
]


def udhr_extract() -> bytes:
    """The article in LANGUAGES, each under its language's name, as the corpus file has it."""
    lines = corpus_file("txt/UDHR_first_article_all.txt").read_text(encoding="utf-8").splitlines()
    parts = []
    for language in LANGUAGES:
        index = lines.index(language)
        parts.append(f"{language}\n{lines[index + 1]}\n")
    return "\n".join(parts).encode()


def countries_extract() -> bytes:
    """The country-code table's header and the rows of COUNTRIES."""
    text = corpus_file("csv/country-codes.csv").read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(rows[0])
    writer.writerows(row for row in rows[1:] if row[2] in COUNTRIES)
    return out.getvalue().encode()


@pytest.fixture
def scripts_agent(agent):
    documents = [
        (udhr_extract(), "udhr.txt"),
        (countries_extract(), "countries.csv"),
        (corpus_file("pdf/multilang.pdf").read_bytes(), "multilang.pdf"),
        (corpus_file("csv/test_mskanji.csv").read_bytes(), "test_mskanji.csv"),
    ]
    for data, name in documents:
        document = make_file_document(agent, data, name)
        assert document.status == "ready", (name, document.error_message)
        assert embedding_jobs.document_embed(document_id=document.pk, max_batches=200) == "done"
    return agent


def search_api(api, query: str, **extra):
    response = api.post("/v1/knowledge/search", json={"query": query, **extra})
    assert response.status == 200, response.body
    return response.json()["data"]


def test_each_question_picks_its_own_document_among_those_of_its_script(api, scripts_agent):
    for mode in ("keyword", "hybrid"):
        for question, expected in QUESTIONS:
            hits = search_api(api, question, mode=mode)
            assert hits, (mode, question)
            assert hits[0]["document_name"] == expected, (mode, question, hits[0]["text"][:80])


def test_an_unrelated_question_in_those_scripts_gets_nothing(api, scripts_agent):
    for mode in ("keyword", "hybrid", "semantic"):
        for question in UNRELATED:
            hits = search_api(api, question, mode=mode)
            assert hits == [], (mode, question, [(h["document_name"], h["score"]) for h in hits])
