"""The WebShop product search engine: BM25 over one search text per product (bm25s, no Java).

This module holds :func:`tokenize` (the analyzer shared by documents and queries),
:class:`BM25Search` (the index: ``search(query, k)`` returns product ids, best first),
:data:`STOP_WORDS` (Lucene's 33 English stop words), :data:`STEMMER_NAME` (the active stemmer)
and :data:`MAX_QUERY_TOKENS` (how many query tokens are scored).

WebShop searched with pyserini/Lucene (Anserini's BM25 defaults ``k1=0.9``, ``b=0.4``, Lucene's
``EnglishAnalyzer``) and kept the top 50 hits. This is an approximation of that ranking, not a
bit-identical copy:

* Analyzer: lower-case; a token is a run of ``[a-z0-9]`` (Lucene's standard tokenizer keeps
  non-ASCII letters and ``3.5`` as one token, here ``café`` gives ``caf`` and ``3.5`` gives ``3``
  and ``5``, the same way for documents and queries); an English possessive (``'s``, ``’s``
  or ``＇s`` at the end of a token) is dropped; Lucene's 33 stop words are removed; then the
  Porter stemmer of PyStemmer (Snowball's ``porter``, the original algorithm that Lucene's
  ``PorterStemFilter`` also implements; words of one or two characters are left alone, as
  Lucene does) when PyStemmer is importable, else no stemming.
* Scoring: bm25s ``method="lucene"``, that is Lucene's BM25 since Lucene 8:
  ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` times ``tf / (tf + k1 * (1 - b + b * dl / avgdl))``
  with float32 scores. Lucene stores document lengths lossily in one byte and sums clause scores
  in its own order, so scores differ from Lucene's in the last digits and near-ties may flip.
* Queries: a word repeated in the query counts once per occurrence (Anserini's bag-of-words query
  boosts a term by its count: the term's score is multiplied by the count); words absent from the
  catalogue are ignored; only the first :data:`MAX_QUERY_TOKENS` tokens (after stop-word removal)
  are scored; a query without a known word returns no hit.
* Hits: only documents with a positive score (at least one query word), best first, equal scores
  in catalogue order (Lucene's order of equal scores is its document order, here the catalogue's).

Scoring reads bm25s's precomputed sparse (CSC) score matrix directly: one vectorised add per
distinct query word, then a partial sort. A search does not change the index, so concurrent
searches (Flask threads) need no lock; the stemmer is one per thread.

>>> engine = BM25Search(["m1", "m2", "d1"], ["red ceramic mug", "blue mug", "women's red dress"])
>>> engine.search("red mugs")
['m1', 'm2', 'd1']
>>> engine.search("Women's dresses"), engine.search("the and of")
(['d1'], [])
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any

import numpy as np

try:
    import Stemmer as _PyStemmer
except ImportError:  # pragma: no cover - PyStemmer is a dependency of agentenvs[webshop]
    _PyStemmer = None

__all__ = [
    "BM25Search",
    "MAX_QUERY_TOKENS",
    "STEMMER_NAME",
    "STOP_WORDS",
    "tokenize",
]

#: Lucene's English stop words (``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``), removed before stemming.
STOP_WORDS: frozenset[str] = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split()
)

#: The stemmer :func:`tokenize` applies: ``"porter"`` (PyStemmer) or ``None`` (no stemming).
STEMMER_NAME: str | None = "porter" if _PyStemmer is not None else None

#: Query tokens scored (after stop-word removal): the rest of a longer query is ignored.
MAX_QUERY_TOKENS = 1000

# A token, with an English possessive ('s, ’s, ＇s at the token's end) consumed but not kept.
_TOKEN = re.compile(r"([a-z0-9]+)(?:['\u2019\uff07]s(?![a-z0-9]))?")
_local = threading.local()


def _stem(words: list[str]) -> list[str]:
    """Porter stems of ``words`` (unchanged without PyStemmer); one stemmer per thread.

    Words of one or two characters are kept as they are, as in Lucene's ``PorterStemmer`` (and
    Porter's original code): Snowball's porter would turn ``"s"`` into ``""`` and ``"us"`` into
    ``"u"``.
    """
    if _PyStemmer is None:
        return words
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = _PyStemmer.Stemmer("porter")
    stems = stemmer.stemWords(words)
    return [w if len(w) <= 2 else s for w, s in zip(words, stems, strict=True)]


def _words(text: str) -> Iterator[str]:
    """The lower-cased words of ``text``, possessives dropped, stop words removed (not stemmed)."""
    stop = STOP_WORDS
    for match in _TOKEN.finditer(text.lower()):
        word = match.group(1)
        if word not in stop:
            yield word


def tokenize(text: str, max_tokens: int | None = None) -> list[str]:
    """The search terms of ``text``: lower-case, ``[a-z0-9]+`` runs, no possessive, no stop word,
    Porter-stemmed (when PyStemmer is importable, see :data:`STEMMER_NAME`).

    ``max_tokens`` keeps only the first that many terms (``None``: all).

    >>> tokenize("The Women's RED dresses, size 3.5!")
    ['women', 'red', 'dress', 'size', '3', '5']
    >>> tokenize("it is what it is"), tokenize("a b c d", max_tokens=2)
    (['what'], ['b', 'c'])
    """
    words = _words(text)
    return _stem(list(words if max_tokens is None else islice(words, max(max_tokens, 0))))


class _TermIds(dict):
    """Raw word -> vocabulary id of its stem (``-1`` for a stop word), filled on first sight."""

    def __init__(self, vocab: dict[str, int]) -> None:
        super().__init__()
        self.vocab = vocab

    def __missing__(self, word: str) -> int:
        if word in STOP_WORDS:
            column = -1
        else:
            term = _stem([word])[0]
            column = self.vocab.setdefault(term, len(self.vocab))
        self[word] = column
        return column


def _index_terms(contents: Sequence[str], vocab: dict[str, int]) -> list[list[int]]:
    """The vocabulary ids of :func:`tokenize` of each text, adding new terms to ``vocab``.

    Same terms as :func:`tokenize`, faster for a catalogue: each distinct word is stemmed once.
    """
    term_ids = _TermIds(vocab)
    lookup = term_ids.__getitem__
    is_term = (-1).__ne__
    docs: list[list[int]] = []
    for text in contents:
        ids = list(map(lookup, _TOKEN.findall(text.lower())))
        docs.append(list(filter(is_term, ids)) if -1 in ids else ids)
    return docs


class BM25Search:
    """A BM25 index over one text per product; :meth:`search` returns product ids, best first.

    ``ids`` and ``contents`` are aligned (the catalogue order, which also breaks ties); ``k1`` and
    ``b`` are the BM25 parameters (Anserini's defaults). The index is read-only after
    construction, so any number of threads may search at once. An empty catalogue (or one without
    a single term) is allowed: every search returns ``[]``.

    Attributes: ``ids`` (the ids, catalogue order), ``k1``, ``b``, ``vocab`` (term -> column of
    the score matrix), ``stemmer_name`` (:data:`STEMMER_NAME`) and ``retriever`` (the underlying
    ``bm25s.BM25``, ``None`` without terms).

    >>> engine = BM25Search(["a", "b", "c"], ["wool socks", "cotton socks socks", "wool hat"])
    >>> len(engine), engine.search("socks"), engine.search("wool socks", k=2)
    (3, ['b', 'a'], ['a', 'b'])
    """

    stemmer_name: str | None = STEMMER_NAME

    def __init__(
        self,
        ids: Sequence[str],
        contents: Sequence[str],
        *,
        k1: float = 0.9,
        b: float = 0.4,
    ) -> None:
        if len(ids) != len(contents):
            raise ValueError(f"{len(ids)} ids but {len(contents)} contents")
        self.ids: tuple[str, ...] = tuple(ids)
        self.k1, self.b = float(k1), float(b)
        self.vocab: dict[str, int] = {}
        self.retriever: Any = None
        vocab = self.vocab
        doc_ids = _index_terms(contents, vocab)
        if vocab:
            try:
                import bm25s
            except ImportError as err:  # pragma: no cover - bm25s is in agentenvs[webshop]
                raise ImportError(
                    "WebShop search needs bm25s: pip install 'agentenvs[webshop]'"
                ) from err
            retriever = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
            retriever.index(
                bm25s.tokenization.Tokenized(ids=doc_ids, vocab=vocab),
                create_empty_token=False,
                show_progress=False,
            )
            self.retriever = retriever
            matrix = retriever.scores
            self._data = np.asarray(matrix["data"], dtype=np.float32)
            self._indices = np.asarray(matrix["indices"], dtype=np.int64)
            self._indptr = np.asarray(matrix["indptr"], dtype=np.int64)

    def __len__(self) -> int:
        """The number of products in the catalogue."""
        return len(self.ids)

    def __repr__(self) -> str:
        return (
            f"BM25Search({len(self.ids)} docs, {len(self.vocab)} terms, k1={self.k1}, b={self.b})"
        )

    def scores(self, query: str) -> np.ndarray:
        """The BM25 score of every product for ``query`` (float32, catalogue order; 0 without a
        query word). Only the first :data:`MAX_QUERY_TOKENS` query terms count; a repeated term
        counts once per occurrence; terms outside the catalogue are ignored.

        >>> scores = BM25Search(["a", "b"], ["red mug", "blue mug"]).scores("red red")
        >>> [round(float(s), 4) for s in scores]  # ln(2) * 1 / (1 + 0.9), twice
        [0.7296, 0.0]
        """
        out = np.zeros(len(self.ids), dtype=np.float32)
        if self.retriever is None:
            return out
        counts: dict[int, int] = {}
        vocab = self.vocab
        for term in tokenize(query, MAX_QUERY_TOKENS):
            column = vocab.get(term)
            if column is not None:
                counts[column] = counts.get(column, 0) + 1
        data, indices, indptr = self._data, self._indices, self._indptr
        for column, count in counts.items():
            start, end = indptr[column], indptr[column + 1]
            # A column holds each document at most once, so a fancy-indexed add is exact.
            if count == 1:
                out[indices[start:end]] += data[start:end]
            else:
                out[indices[start:end]] += data[start:end] * np.float32(count)
        return out

    def search(self, query: str, k: int = 50) -> list[str]:
        """The ids of the (at most ``k``) best products for ``query``, best first.

        Only products with a positive score (at least one query word) are returned; equal scores
        keep the catalogue order. A query without a catalogue word (empty, punctuation, only stop
        words) returns ``[]``.

        >>> engine = BM25Search(["x", "y", "z"], ["tea cup", "coffee cup", "tea pot"])
        >>> engine.search("cup"), engine.search("tea cup", k=1), engine.search("?!")
        (['x', 'y'], ['x'], [])
        """
        if k <= 0 or self.retriever is None:
            return []
        scores = self.scores(query)
        hits = np.flatnonzero(scores > 0)  # catalogue order
        if hits.size == 0:
            return []
        hit_scores = scores[hits]
        if hits.size > k:
            # The k-th best score; keep everything above it and the first equal ones.
            kth = np.partition(hit_scores, hits.size - k)[hits.size - k]
            above = hit_scores > kth
            equal = np.flatnonzero(hit_scores == kth)[: k - int(above.sum())]
            keep = np.sort(np.concatenate([np.flatnonzero(above), equal]))
            hits, hit_scores = hits[keep], hit_scores[keep]
        order = np.argsort(-hit_scores, kind="stable")
        ids = self.ids
        return [ids[i] for i in hits[order].tolist()]
