"""benchmarks/knowledge_relevance.py cannot rot: its question sets stay well formed, its judge
and scores say what the docs say, and its smoke mode runs end to end — corpus files ingested by
a real worker, questions asked through the served API in every mode, BM25 over the same
passages — against the test database."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.corpus import CORPUS_DIR, SKIP_REASON

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "knowledge_relevance", ROOT / "benchmarks" / "knowledge_relevance.py"
)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.mark.parametrize("name", ["main", "heldout"])
def test_question_sets_are_well_formed_and_as_large_as_the_issue_asks(name):
    question_set = bench.load_set(name)
    questions = question_set["questions"]
    ids = [q["id"] for q in questions]
    assert len(ids) == len(set(ids))
    assert {q["kind"] for q in questions} == set(bench.KINDS)
    for question in questions:
        if question["kind"] == "no_answer":
            assert "answers" not in question and "documents" not in question
        else:
            assert question["answers"] and all(a.strip() for a in question["answers"])
            assert set(question["documents"]) <= set(question_set["documents"])
    minimum_questions, minimum_documents = (150, 30) if name == "main" else (40, 10)
    assert len(questions) >= minimum_questions
    used = {path for q in questions for path in q.get("documents", [])}
    assert len(used) >= minimum_documents
    assert len({q["lang"] for q in questions}) >= 5


def test_the_two_sets_share_no_question():
    main = {q["question"].casefold() for q in bench.load_set("main")["questions"]}
    heldout = {q["question"].casefold() for q in bench.load_set("heldout")["questions"]}
    assert not main & heldout


def test_normalise_ignores_case_punctuation_table_pipes_and_link_targets():
    passage = "| Nespresso | 3128 | 678 |\nSee [the Wiki](https://example.org/x_y) now."
    assert "nespresso 3128 678" in bench.normalise(passage)
    assert bench.normalise("the wiki now") in bench.normalise(passage)
    assert "example" not in bench.normalise(passage)
    assert bench.normalise("Привет, МИР") == "привет мир"
    assert bench.normalise("ＡＢＣ１") == "abc1"  # NFKC folds full-width forms


def test_answer_rank_counts_only_passages_of_the_question_s_documents():
    question = {"kind": "lexical", "documents": ["a.md"], "answers": ["Two-year warranty"]}
    documents = {"a.md": "doc-a", "b.md": "doc-b"}
    passages = {
        "1": "nothing here",
        "2": "every kettle two year warranty",
        "3": "two year warranty",
    }
    assert bench.answer_rank(question, [("1", "doc-a"), ("2", "doc-a")], passages, documents) == 2
    # The same words in another document do not answer.
    assert bench.answer_rank(question, [("3", "doc-b")], passages, documents) is None


def test_summarise_gives_recall_at_5_and_10_and_mrr_at_10():
    scores = bench.summarise([1, 2, 6, None])
    assert scores == {"n": 4, "r5": 0.5, "r10": 0.75, "mrr10": pytest.approx((1 + 0.5 + 1 / 6) / 4)}


def test_abstention_is_read_at_the_default_threshold_and_names_lost_english_answers():
    question_set = {
        "name": "t",
        "documents": ["a.md"],
        "questions": [
            {"id": "q1", "kind": "lexical", "lang": "en"},
            {"id": "q2", "kind": "paraphrase", "lang": "de"},
            {"id": "q3", "kind": "no_answer", "lang": "ja"},
            {"id": "q4", "kind": "no_answer", "lang": "en"},
        ],
    }

    def outcome(rank, empty=False, top=0.5):
        return {"rank": rank, "empty": empty, "top_score": None if empty else top}

    ranked = {mode: {q: outcome(1) for q in ("q1", "q2", "q3", "q4")} for mode in bench.MODES}
    ranked["bm25"] = {q: outcome(None, empty=True) for q in ("q1", "q2", "q3", "q4")}
    for mode in bench.MODES:
        # At the default threshold q1 (English) and q2 (German) lose their answer, q3 abstains.
        ranked[f"{mode}@default"] = {
            "q1": outcome(None, empty=True),
            "q2": outcome(None),
            "q3": outcome(None, empty=True),
            "q4": outcome(None, top=0.9),
        }
    report = bench._report(question_set, ranked, "min_score", [], 10, 1.0)
    hybrid = report["abstention"]["hybrid"]
    assert hybrid["no_answer_empty"] == 1 and hybrid["no_answer"] == 2
    assert hybrid["answerable_empty"] == 1
    assert hybrid["english_answers_lost"] == ["q1"]
    assert report["metrics"]["hybrid"]["all"]["r5"] == 1.0  # rankings come from min_score 0
    assert "at the default `min_score`" in bench.render_markdown(report)


@pytest.mark.benchmark
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_smoke_mode_ingests_asks_every_mode_and_scores_beside_bm25(knowledge_worker):
    question_set = bench.smoke_set(bench.load_set("main"))
    question_set["name"] = "main (smoke)"
    for path in question_set["documents"]:
        if not (CORPUS_DIR / path).exists():
            pytest.skip(f"{SKIP_REASON}: {path} not found under {CORPUS_DIR} (set CORPUS_DIR)")
    agent = bench.create_agent()
    documents = bench.ingest(agent=agent, paths=question_set["documents"], corpus=CORPUS_DIR)
    failed = bench.wait_until_searchable(documents, timeout=120, quiet=True)
    assert failed == {}

    report = bench.evaluate(agent=agent, question_set=question_set, documents=documents)

    assert report["questions"] == {"lexical": 3, "paraphrase": 0, "crosslingual": 1, "no_answer": 1}
    # Every answer lies in a passage of its document: the set matches what extraction gives.
    assert report["unreachable"] == []
    assert report["unknown_chunks"] == 0  # every hit was judged on a passage's text
    assert set(report["per_question"]) >= {"keyword", "semantic", "hybrid", "bm25"}
    # Plain BM25 is deterministic over these passages: the exact-word questions come first, and
    # the Japanese weather question shares no token with any passage.
    assert report["per_question"]["bm25"]["m020"] == 1
    assert report["per_question"]["bm25"]["m036"] == 1
    assert report["abstention"]["bm25"]["no_answer_empty"] == 1
    for mode in bench.MODES:
        assert report["metrics"][mode]["all"]["n"] == 4
    markdown = bench.render_markdown(report)
    assert "| plain BM25 |" in markdown and "| hybrid |" in markdown
    json.dumps(report)  # --json writes it as it is

    # benchmarks/knowledge_rank_orders.py reads the Agent this run left ready: every answerable
    # question's pool, ordered again each way.
    orders_spec = importlib.util.spec_from_file_location(
        "knowledge_rank_orders", ROOT / "benchmarks" / "knowledge_rank_orders.py"
    )
    assert orders_spec is not None and orders_spec.loader is not None
    orders = importlib.util.module_from_spec(orders_spec)
    orders_spec.loader.exec_module(orders)
    rows = orders.dump(question_set)
    assert len(rows) == 4  # the answerable ones
    table = orders.analyse(rows)
    assert "| all R@5 |" in table and len(table.splitlines()) == 2 + len(orders.ORDERS)
