"""BM25 over integer term ids: the index that WebShop's product search and SearchQA's retriever share.

This module holds :class:`Analyzer` (text -> search terms: a word pattern, stop words, an optional
PyStemmer stemmer) and :class:`BM25Index` (scores and stable top-k over bm25s's precomputed score
matrix; saved as ``.npy`` files and loaded memory-mapped).

Scoring is bm25s's ``method="lucene"``, Lucene's BM25 since Lucene 8:
``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` times ``tf / (tf + k1 * (1 - b + b * dl / avgdl))``,
float32, summed over the query's terms (a term repeated in the query counts once per occurrence).
bm25s precomputes that per (term, document) as a sparse CSC matrix; a query adds up one column per
distinct term (a vectorised add), then :meth:`BM25Index.top` keeps the best documents with a
positive score, equal scores in document order. Searching never changes the index, so any number
of threads may search at once.

>>> analyzer = Analyzer(r"[a-z0-9]+", stop_words=frozenset({"the"}))
>>> vocab: dict[str, int] = {}
>>> index = BM25Index.build(analyzer.term_ids(["the red mug", "a blue mug", "red red dress"], vocab), vocab)
>>> index.top(index.scores(analyzer.query_ids("red mug", vocab)), k=2).tolist()
[0, 2]
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np

try:
    import Stemmer as _PyStemmer
except ImportError:  # pragma: no cover - PyStemmer ships with agentenvs[webshop] and [searchqa]
    _PyStemmer = None

__all__ = ["Analyzer", "BM25Index", "HAVE_STEMMER"]

#: Whether PyStemmer is importable (without it, analyzers do not stem).
HAVE_STEMMER = _PyStemmer is not None

_FILES = ("data", "indices", "indptr")


@dataclass(frozen=True)
class Analyzer:
    """Text -> search terms: lower-case, the words ``pattern`` finds, minus ``stop_words``, stemmed.

    Args:
        pattern: a regex over the lower-cased text; a match's first group (or the whole match
            when the pattern has no group) is a word.
        stop_words: words dropped before stemming.
        stemmer: a PyStemmer algorithm name (``"porter"``, ``"english"``) or ``None``; without
            PyStemmer installed, words are not stemmed.
        min_stem_length: shorter words are kept unstemmed (Lucene's Porter filter: 3).

    One stemmer per thread, so an analyzer may be shared by threads.
    """

    pattern: str
    stop_words: frozenset[str] = frozenset()
    stemmer: str | None = None
    min_stem_length: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "_regex", re.compile(self.pattern))
        object.__setattr__(self, "_local", threading.local())

    @property
    def stemming(self) -> bool:
        """Whether words are stemmed (a stemmer is named and PyStemmer is importable)."""
        return self.stemmer is not None and HAVE_STEMMER

    def words(self, text: str) -> Iterable[str]:
        """The lower-cased words of ``text`` without stop words (not stemmed)."""
        stop = self.stop_words
        return (w for w in self._regex.findall(text.lower()) if w not in stop)  # type: ignore[attr-defined]  # set in __post_init__

    def stem(self, words: list[str]) -> list[str]:
        """The stems of ``words`` (unchanged when not :attr:`stemming`)."""
        if not self.stemming:
            return words
        local = self._local  # type: ignore[attr-defined]
        stemmer = getattr(local, "stemmer", None)
        if stemmer is None:
            stemmer = local.stemmer = _PyStemmer.Stemmer(self.stemmer)
        stems = stemmer.stemWords(words)
        floor = self.min_stem_length
        return [w if len(w) < floor else s for w, s in zip(words, stems, strict=True)]

    def terms(self, text: str, max_terms: int | None = None) -> list[str]:
        """The search terms of ``text`` (the first ``max_terms`` only, when given)."""
        words = self.words(text)
        return self.stem(list(words if max_terms is None else islice(words, max(max_terms, 0))))

    def term_ids(self, texts: Iterable[str], vocab: dict[str, int]) -> list[list[int]]:
        """The vocabulary ids of each text's terms, adding new terms to ``vocab``.

        The same terms as :meth:`terms`, faster for a corpus: each distinct word is stemmed once.
        """
        cache: dict[str, int] = {}
        stop, findall = self.stop_words, self._regex.findall  # type: ignore[attr-defined]
        docs: list[list[int]] = []
        for text in texts:
            ids = []
            for word in findall(text.lower()):
                column = cache.get(word)
                if column is None:
                    column = -1
                    if word not in stop:
                        column = vocab.setdefault(self.stem([word])[0], len(vocab))
                    cache[word] = column
                if column >= 0:
                    ids.append(column)
            docs.append(ids)
        return docs

    def query_ids(
        self, query: str, vocab: Mapping[str, int], max_terms: int | None = None
    ) -> dict[int, int]:
        """Term id -> count in ``query`` (terms outside ``vocab`` are ignored)."""
        counts: dict[int, int] = {}
        for term in self.terms(query, max_terms):
            column = vocab.get(term)
            if column is not None:
                counts[column] = counts.get(column, 0) + 1
        return counts


class BM25Index:
    """Lucene BM25 scores of ``num_docs`` documents as a CSC matrix (term columns).

    Build with :meth:`build`; ``save``/``load`` keep the three arrays as ``.npy`` files (``load``
    memory-maps them by default, so processes that load one index share its pages).

    Attributes: ``num_docs``, ``num_terms``, ``k1``, ``b``, ``nbytes`` (bytes of the arrays).
    """

    def __init__(
        self,
        data: np.ndarray,
        indices: np.ndarray,
        indptr: np.ndarray,
        num_docs: int,
        *,
        k1: float,
        b: float,
    ) -> None:
        self._data, self._indices, self._indptr = data, indices, indptr
        self.num_docs, self.num_terms = int(num_docs), len(indptr) - 1
        self.k1, self.b = float(k1), float(b)

    @classmethod
    def build(
        cls,
        doc_term_ids: Sequence[Sequence[int]],
        vocab: Mapping[str, int],
        *,
        k1: float = 0.9,
        b: float = 0.4,
    ) -> BM25Index:
        """Index documents given as term ids (``vocab``: term -> id, ids ``0..len(vocab)-1``)."""
        num_docs = len(doc_term_ids)
        if not vocab:
            empty = np.zeros(0, dtype=np.float32)
            return cls(empty, empty.astype(np.int32), np.zeros(1, np.int64), num_docs, k1=k1, b=b)
        import bm25s

        retriever = bm25s.BM25(k1=k1, b=b, method="lucene")
        retriever.index(
            bm25s.tokenization.Tokenized(ids=doc_term_ids, vocab=dict(vocab)),
            create_empty_token=False,
            show_progress=False,
        )
        matrix = retriever.scores
        index_type = np.int32 if num_docs < 2**31 else np.int64
        return cls(
            np.asarray(matrix["data"], dtype=np.float32),
            np.asarray(matrix["indices"], dtype=index_type),
            np.asarray(matrix["indptr"], dtype=np.int64),
            num_docs,
            k1=k1,
            b=b,
        )

    @property
    def nbytes(self) -> int:
        return int(self._data.nbytes + self._indices.nbytes + self._indptr.nbytes)

    def scores(self, term_counts: Mapping[int, int]) -> np.ndarray:
        """Every document's score (float32, document order) for term id -> count in the query."""
        out = np.zeros(self.num_docs, dtype=np.float32)
        data, indices, indptr = self._data, self._indices, self._indptr
        for column, count in term_counts.items():
            start, end = indptr[column], indptr[column + 1]
            # A column holds each document at most once, so a fancy-indexed add is exact.
            if count == 1:
                out[indices[start:end]] += data[start:end]
            else:
                out[indices[start:end]] += data[start:end] * np.float32(count)
        return out

    @staticmethod
    def top(scores: np.ndarray, k: int) -> np.ndarray:
        """Indices of the (at most ``k``) best positive ``scores``, best first, ties in index order.

        >>> BM25Index.top(np.array([0.5, 0.0, 2.0, 0.5], dtype=np.float32), 2).tolist()
        [2, 0]
        """
        hits = np.flatnonzero(scores > 0)
        if k <= 0 or hits.size == 0:
            return hits[:0]
        hit_scores = scores[hits]
        if hits.size > k:
            # The k-th best score; keep everything above it and the first equal ones.
            kth = np.partition(hit_scores, hits.size - k)[hits.size - k]
            above = hit_scores > kth
            equal = np.flatnonzero(hit_scores == kth)[: k - int(above.sum())]
            keep = np.sort(np.concatenate([np.flatnonzero(above), equal]))
            hits, hit_scores = hits[keep], hit_scores[keep]
        return hits[np.argsort(-hit_scores, kind="stable")]

    def save(self, directory: str | Path) -> None:
        """Write the index to ``directory`` (created): three ``.npy`` arrays and ``params.json``."""
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        for name in _FILES:
            np.save(path / f"{name}.npy", getattr(self, f"_{name}"))
        params = {"num_docs": self.num_docs, "k1": self.k1, "b": self.b}
        (path / "params.json").write_text(json.dumps(params))

    @classmethod
    def load(cls, directory: str | Path, *, mmap: bool = True) -> BM25Index:
        """Read an index written by :meth:`save` (memory-mapped unless ``mmap=False``)."""
        path = Path(directory)
        params = json.loads((path / "params.json").read_text())
        arrays = [np.load(path / f"{n}.npy", mmap_mode="r" if mmap else None) for n in _FILES]
        data, indices, indptr = arrays
        return cls(data, indices, indptr, params["num_docs"], k1=params["k1"], b=params["b"])
