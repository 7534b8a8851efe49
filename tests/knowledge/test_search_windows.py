"""Semantic search reads the whole passage: several overlapping windows per chunk, the best
one scoring; `knowledge_reembed` replaces vectors made by another model or windowing."""

from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from apps.knowledge import embedding_jobs, embeddings, search
from apps.knowledge.models import KnowledgeChunk, KnowledgeDocument
from tests.knowledge.conftest import make_file_document

# One passage of ~1,500 characters: its opening is about office furniture; the answer (the
# pet policy) is its last sentence, far past the first 128 word pieces.
FILLER = (
    "The office furniture inventory lists desks, chairs, shelves and filing cabinets for each "
    "floor of the building, with their purchase dates, suppliers and the team using them. "
)
LONG = (
    "# Facilities\n\n"
    + FILLER * 8
    + "Employees may bring a well-behaved dog to work on Fridays if their team agrees.\n"
)


def embed_all(document) -> None:
    assert embedding_jobs.document_embed(document_id=document.pk, max_batches=1000) == "done"


def test_a_long_passage_is_embedded_as_overlapping_windows_covering_every_word(settings):
    settings.KNOWLEDGE_EMBED_BATCH_SIZE = 2
    text = LONG.split("\n\n", 1)[1]
    (windows,) = embeddings._model().windows([text])
    assert len(windows) >= 3
    assert all(len(window.ids) <= embeddings.MAX_TOKENS for window in windows)
    # Consecutive windows share WINDOW_OVERLAP word pieces; without the overlaps and the
    # [CLS]/[SEP] marks, they are the whole passage's word pieces in order.
    from tokenizers import Tokenizer

    untruncated = Tokenizer.from_str(embeddings._model().tokenizer.to_str())
    untruncated.no_truncation()
    whole = untruncated.encode(text, add_special_tokens=False).ids
    joined = list(windows[0].ids[1:-1])
    for window in windows[1:]:
        assert window.ids[1 : 1 + embeddings.WINDOW_OVERLAP] == joined[-embeddings.WINDOW_OVERLAP :]
        joined += window.ids[1 + embeddings.WINDOW_OVERLAP : -1]
    assert joined == whole
    (vectors,) = embeddings.embed_passages([text])
    assert vectors.shape == (len(windows), embeddings.DIMENSIONS)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-3)


def test_the_answer_at_the_end_of_a_long_passage_is_found_by_meaning(agent):
    document = make_file_document(agent, LONG.encode(), "facilities.md")
    embed_all(document)
    chunk = KnowledgeChunk.objects.get(document=document)
    stored = embeddings.from_windows(bytes(chunk.embedding))
    assert stored.shape[0] >= 3 and chunk.embedding_model == embeddings.embedding_key()
    question = "can I bring my dog to the office"
    query = embeddings.embed_texts([question])[0]
    first_window_only = float(stored[0] @ query)
    hits = search.search_chunks(agent=agent, query=question, limit=3, mode="semantic")
    assert [hit.chunk_id for hit in hits] == [chunk.pk]
    # The best window (the one holding the dog sentence) scores, not the opening.
    assert hits[0].similarity == pytest.approx(float(np.max(stored @ query)), abs=1e-4)
    assert hits[0].similarity > first_window_only + 0.1


def test_reembed_replaces_vectors_made_otherwise_and_keeps_progress(agent):
    document = make_file_document(agent, LONG.encode(), "facilities.md")
    short = make_file_document(agent, b"# Note\n\nThe canteen opens at noon.", "note.md")
    embed_all(document)
    embed_all(short)
    # Vectors as the single-window code stored them: the first window only, no model key.
    for chunk in KnowledgeChunk.objects.all():
        first = embeddings.from_windows(bytes(chunk.embedding))[:1]
        KnowledgeChunk.objects.filter(pk=chunk.pk).update(
            embedding=first.astype("<f2").tobytes(), embedding_model=None
        )
    assert embedding_jobs.chunks_to_reembed() == 2
    out, err = io.StringIO(), io.StringIO()
    call_command("knowledge_reembed", stdout=out, stderr=err)
    assert "Re-embedded 2 chunks" in out.getvalue()
    assert "2/2 chunks" in err.getvalue()
    assert embedding_jobs.chunks_to_reembed() == 0
    chunk = KnowledgeChunk.objects.get(document=document)
    assert embeddings.from_windows(bytes(chunk.embedding)).shape[0] >= 3
    assert KnowledgeDocument.objects.get(pk=document.pk).embedded_chunk_count == 1
    out = io.StringIO()
    call_command("knowledge_reembed", stdout=out)
    assert "up to date" in out.getvalue()
    with pytest.raises(CommandError):
        call_command("knowledge_reembed", "--batch-size", "0")


# --- the model is a setting -------------------------------------------------------------------


@pytest.fixture
def fresh_model():
    embeddings._model.cache_clear()
    yield
    embeddings._model.cache_clear()


def _model_folder(tmp_path, **options):
    """A model folder as an operator would lay out a configured model: here the default's
    own files, with E5-style prefixes, so the test needs nothing downloaded."""
    import json
    import shutil

    folder = tmp_path / "model"
    folder.mkdir()
    package = embeddings._package_dir(embeddings.DEFAULT_MODEL_PACKAGE)
    (folder / "model.onnx").symlink_to(package / "model.onnx")
    shutil.copy(embeddings.DEFAULT_TOKENIZER / "tokenizer.json", folder / "tokenizer.json")
    (folder / "embedding.json").write_text(json.dumps(options))
    return folder


def test_a_configured_model_folder_is_loaded_and_search_skips_other_models_vectors(
    agent, settings, tmp_path, fresh_model
):
    document = make_file_document(agent, LONG.encode(), "facilities.md")
    embed_all(document)
    question = "can I bring my dog to the office"
    assert search.search_chunks(agent=agent, query=question, limit=3, mode="semantic")
    default_vector = embeddings.embed_texts([question])[0]

    folder = _model_folder(tmp_path, query_prefix="query: ", passage_prefix="passage: ")
    settings.KNOWLEDGE_EMBEDDING_MODEL = str(folder)
    embeddings._model.cache_clear()
    assert embeddings.embedding_key().startswith(str(folder))
    configured = embeddings.embed_texts([question])[0]
    assert not np.allclose(configured, default_vector, atol=1e-3)  # the prefix is read
    # The stored vectors are the default model's: not compared with this model's query...
    assert search.search_chunks(agent=agent, query=question, limit=3, mode="semantic") == []
    assert search.search_chunks(agent=agent, query="dog Fridays", limit=3, mode="hybrid")
    # ...until knowledge_reembed has replaced them.
    call_command("knowledge_reembed", stdout=io.StringIO(), stderr=io.StringIO())
    hits = search.search_chunks(agent=agent, query=question, limit=3, mode="semantic")
    assert [hit.document_id for hit in hits] == [document.pk]


def test_a_model_folder_without_its_files_is_refused(settings, tmp_path, fresh_model):
    (tmp_path / "empty").mkdir()
    settings.KNOWLEDGE_EMBEDDING_MODEL = str(tmp_path / "empty")
    with pytest.raises(embeddings.EmbeddingUnavailable):
        embeddings.embed_texts(["anything"])
    for missing in ("no_such_model_package", str(tmp_path / "no" / "folder")):
        settings.KNOWLEDGE_EMBEDDING_MODEL = missing
        embeddings._model.cache_clear()
        with pytest.raises(embeddings.EmbeddingUnavailable, match="not installed"):
            embeddings.embed_texts(["anything"])
    folder = _model_folder(tmp_path, pooling="max")
    settings.KNOWLEDGE_EMBEDDING_MODEL = str(folder)
    embeddings._model.cache_clear()
    with pytest.raises(embeddings.EmbeddingUnavailable, match="pooling"):
        embeddings.embed_texts(["anything"])
