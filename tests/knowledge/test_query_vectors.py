"""A query's vector is computed once per process and model (a small cache of recent queries),
the model loads in the background when a web process starts, queries are embedded by several
threads at once (never behind a passage batch), and a forked child never inherits
a lock held by one of its parent's threads."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from apps.knowledge import embeddings
from tests.knowledge.test_search_windows import _model_folder


@pytest.fixture(autouse=True)
def empty_query_cache():
    embeddings._query_vectors.clear()
    yield
    embeddings._query_vectors.clear()


def test_a_repeated_query_is_embedded_once_and_its_vector_cannot_be_changed():
    first = embeddings.embed_query("how do I get my money back")
    assert np.allclose(first, embeddings.embed_texts(["how do I get my money back"])[0])
    assert embeddings.embed_query("how do I get my money back") is first
    assert embeddings.embed_query("where is my parcel") is not first
    with pytest.raises(ValueError, match="read-only"):
        first[0] = 1.0


def test_the_cache_keeps_the_most_recent_queries(monkeypatch):
    monkeypatch.setattr(embeddings, "QUERY_CACHE_SIZE", 2)
    refund = embeddings.embed_query("refund")
    parcel = embeddings.embed_query("parcel")
    assert embeddings.embed_query("refund") is refund  # now the most recent of the two
    embeddings.embed_query("invoice")  # the third: the least recent (parcel) goes
    assert len(embeddings._query_vectors) == 2
    assert embeddings.embed_query("refund") is refund
    again = embeddings.embed_query("parcel")
    assert again is not parcel and np.allclose(again, parcel)


def test_another_model_gets_its_own_query_vectors(settings, tmp_path):
    question = "can I bring my dog to the office"
    default = embeddings.embed_query(question)
    # The same files with E5-style prefixes: another model as far as the vectors go.
    settings.KNOWLEDGE_EMBEDDING_MODEL = str(
        _model_folder(tmp_path, query_prefix="query: ", passage_prefix="passage: ")
    )
    embeddings._model.cache_clear()
    try:
        configured = embeddings.embed_query(question)
        assert not np.allclose(configured, default, atol=1e-3)
    finally:
        settings.KNOWLEDGE_EMBEDDING_MODEL = ""
        embeddings._model.cache_clear()
    assert embeddings.embed_query(question) is default


def test_the_model_loads_in_a_background_thread():
    embeddings._model.cache_clear()
    thread = embeddings.load_in_background()
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert embeddings._model.cache_info().currsize == 1


def test_a_forked_child_does_not_inherit_a_held_embedding_lock():
    with embeddings._lock:  # a parent's thread loading the model while the process forks
        child = os.fork()
        if child == 0:  # the child: its own lock is free
            acquired = embeddings._lock.acquire(timeout=2)
            os._exit(0 if acquired else 1)
        _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_queries_embedded_by_several_threads_at_once_get_their_own_vectors():
    # The web threads embed their queries concurrently (no lock around the inference).
    questions = [f"question number {n} about refunds and parcels" for n in range(16)]
    alone = embeddings.embed_texts(questions)
    results: dict[int, np.ndarray] = {}

    def embed(n: int) -> None:
        for _ in range(3):
            results[n] = embeddings.embed_texts([questions[n]])[0]

    threads = [threading.Thread(target=embed, args=(n,)) for n in range(len(questions))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(results) == list(range(len(questions)))
    for n, vector in results.items():
        assert np.allclose(vector, alone[n], atol=1e-5)


def test_a_query_is_embedded_while_a_passage_batch_holds_the_model():
    embeddings.embed_texts(["loads the model"])
    answered: list[np.ndarray] = []
    with embeddings._lock:  # this process's worker side is embedding a batch of passages
        thread = threading.Thread(
            target=lambda: answered.append(embeddings.embed_query("where is my parcel"))
        )
        thread.start()
        thread.join(timeout=60)
        assert not thread.is_alive() and len(answered) == 1
