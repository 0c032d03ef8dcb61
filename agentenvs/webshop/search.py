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

The index is :class:`~agentenvs.core.bm25.BM25Index` (bm25s's precomputed score matrix, one
vectorised add per distinct query word, then a partial sort); the analyzer is a
:class:`~agentenvs.core.bm25.Analyzer`. A search does not change the index, so concurrent searches
(Flask threads) need no lock.

>>> engine = BM25Search(["m1", "m2", "d1"], ["red ceramic mug", "blue mug", "women's red dress"])
>>> engine.search("red mugs")
['m1', 'm2', 'd1']
>>> engine.search("Women's dresses"), engine.search("the and of")
(['d1'], [])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agentenvs.core.bm25 import HAVE_STEMMER, Analyzer, BM25Index

__all__ = [
    "ANALYZER",
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
STEMMER_NAME: str | None = "porter" if HAVE_STEMMER else None

#: Query tokens scored (after stop-word removal): the rest of a longer query is ignored.
MAX_QUERY_TOKENS = 1000

#: The analyzer: a token is an ``[a-z0-9]`` run, an English possessive (``'s``, ``’s``, ``＇s`` at
#: the token's end) consumed but not kept; words of one or two characters are not stemmed, as in
#: Lucene's ``PorterStemmer`` (Snowball's porter would turn ``"s"`` into ``""``, ``"us"`` into ``"u"``).
ANALYZER = Analyzer(
    r"([a-z0-9]+)(?:['\u2019\uff07]s(?![a-z0-9]))?",
    stop_words=STOP_WORDS,
    stemmer="porter",
    min_stem_length=3,
)


def tokenize(text: str, max_tokens: int | None = None) -> list[str]:
    """The search terms of ``text``: lower-case, ``[a-z0-9]+`` runs, no possessive, no stop word,
    Porter-stemmed (when PyStemmer is importable, see :data:`STEMMER_NAME`).

    ``max_tokens`` keeps only the first that many terms (``None``: all).

    >>> tokenize("The Women's RED dresses, size 3.5!")
    ['women', 'red', 'dress', 'size', '3', '5']
    >>> tokenize("it is what it is"), tokenize("a b c d", max_tokens=2)
    (['what'], ['b', 'c'])
    """
    return ANALYZER.terms(text, max_tokens)


class BM25Search:
    """A BM25 index over one text per product; :meth:`search` returns product ids, best first.

    ``ids`` and ``contents`` are aligned (the catalogue order, which also breaks ties); ``k1`` and
    ``b`` are the BM25 parameters (Anserini's defaults). The index is read-only after
    construction, so any number of threads may search at once. An empty catalogue (or one without
    a single term) is allowed: every search returns ``[]``.

    Attributes: ``ids`` (the ids, catalogue order), ``k1``, ``b``, ``vocab`` (term -> column of
    the score matrix), ``stemmer_name`` (:data:`STEMMER_NAME`) and ``index`` (the
    :class:`~agentenvs.core.bm25.BM25Index`).

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
        try:
            self.index = BM25Index.build(
                ANALYZER.term_ids(contents, self.vocab), self.vocab, k1=self.k1, b=self.b
            )
        except ImportError as err:  # pragma: no cover - bm25s is in agentenvs[webshop]
            raise ImportError(
                "WebShop search needs bm25s: pip install 'agentenvs[webshop]'"
            ) from err

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
        return self.index.scores(ANALYZER.query_ids(query, self.vocab, MAX_QUERY_TOKENS))

    def search(self, query: str, k: int = 50) -> list[str]:
        """The ids of the (at most ``k``) best products for ``query``, best first.

        Only products with a positive score (at least one query word) are returned; equal scores
        keep the catalogue order. A query without a catalogue word (empty, punctuation, only stop
        words) returns ``[]``.

        >>> engine = BM25Search(["x", "y", "z"], ["tea cup", "coffee cup", "tea pot"])
        >>> engine.search("cup"), engine.search("tea cup", k=1), engine.search("?!")
        (['x', 'y'], ['x'], [])
        """
        if k <= 0 or not self.vocab:
            return []
        ids = self.ids
        return [ids[i] for i in BM25Index.top(self.scores(query), k).tolist()]
