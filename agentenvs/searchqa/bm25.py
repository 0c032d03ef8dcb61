"""SearchQA's default retriever: BM25 in-process over the corpus (bm25s), cached on disk, memory-mapped.

This module holds :data:`ANALYZER` (bm25s's default English analysis: lower-case, words of two or
more word characters, the 33 English stop words, Snowball's English stemmer when PyStemmer is
installed) and :class:`BM25Retriever`.

The index is Lucene's BM25 with ``k1 = 0.9``, ``b = 0.4`` (see :mod:`agentenvs.core.bm25`): a
query's passages are those sharing at least one term with it, best score first, equal scores in
corpus order. It is built once per corpus (keyed by the corpus checksum, the parameters and
whether words are stemmed), saved under :func:`~agentenvs.searchqa.retrieval.cache_root`, and
loaded memory-mapped, so many env workers on one machine share one copy of its pages.

>>> from agentenvs.searchqa.corpus import Corpus
>>> corpus = Corpus(("0", "1", "2"), ('"Tea"\\nA hot drink.', '"Mug"\\nA cup for tea.', '"Sea"\\nSalt water.'))
>>> retriever = BM25Retriever(corpus, cache_dir=None)
>>> [[hit.id for hit in hits] for hits in retriever.retrieve(["tea", "water drinks"], topk=2)]
[['0', '1'], ['0', '2']]
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from agentenvs.core.bm25 import Analyzer, BM25Index
from agentenvs.searchqa.corpus import Corpus
from agentenvs.searchqa.retrieval import Hit, cache_root, cached_build

__all__ = ["ANALYZER", "BM25Retriever"]

#: bm25s's ``tokenize(..., stopwords="en", stemmer=Stemmer("english"))``.
ANALYZER = Analyzer(
    r"(?u)\b\w\w+\b",
    stop_words=frozenset(
        "a an and are as at be but by for if in into is it no not of on or such that the their "
        "then there these they this to was will with".split()
    ),
    stemmer="english",
)
_DEFAULT = object()


class BM25Retriever:
    """BM25 over ``corpus`` (a :class:`~agentenvs.searchqa.retrieval.Retriever`).

    Args:
        corpus: the passages.
        k1, b: BM25 parameters (Anserini's defaults).
        cache_dir: where the index is cached (default :func:`~agentenvs.searchqa.retrieval.cache_root`);
            ``None`` builds it in memory and caches nothing.

    Attributes: ``corpus``, ``index`` (:class:`~agentenvs.core.bm25.BM25Index`), ``vocab``
    (term -> column), ``path`` (the cache directory, or ``None``).
    """

    def __init__(
        self,
        corpus: Corpus,
        *,
        k1: float = 0.9,
        b: float = 0.4,
        cache_dir: str | Path | None | object = _DEFAULT,
    ) -> None:
        self.corpus = corpus
        self.path: Path | None = None
        if cache_dir is None:
            self.vocab: dict[str, int] = {}
            self.index = BM25Index.build(
                ANALYZER.term_ids(corpus.contents, self.vocab), self.vocab, k1=k1, b=b
            )
            return
        root = cache_root() if cache_dir is _DEFAULT else Path(cache_dir)  # type: ignore[arg-type]
        stem = "stem" if ANALYZER.stemming else "nostem"
        key = f"bm25-{corpus.sha256[:16]}-k{k1:g}-b{b:g}-{stem}"
        self.path = cached_build(root, key, lambda d: _build(corpus, d, k1, b))
        self.vocab = json.loads((self.path / "vocab.json").read_text(encoding="utf-8"))
        self.index = BM25Index.load(self.path)

    def __repr__(self) -> str:
        return f"BM25Retriever({self.corpus!r}, {len(self.vocab)} terms)"

    def search(self, query: str, topk: int) -> list[int]:
        """Corpus positions of the ``topk`` best passages for ``query``, best first."""
        if topk <= 0 or not self.vocab:
            return []
        return self.index.top(
            self.index.scores(ANALYZER.query_ids(query, self.vocab)), topk
        ).tolist()

    def retrieve(self, queries: Sequence[str], topk: int) -> list[list[Hit]]:
        """The ``topk`` best passages of each query (fewer when fewer share a term with it)."""
        corpus, results = self.corpus, []
        for query in queries:
            scores = self.index.scores(ANALYZER.query_ids(query, self.vocab))
            best: Iterable[int] = self.index.top(scores, topk) if self.vocab else []
            results.append([Hit(corpus.ids[i], corpus.contents[i], float(scores[i])) for i in best])
        return results


def _build(corpus: Corpus, directory: Path, k1: float, b: float) -> None:
    vocab: dict[str, int] = {}
    BM25Index.build(ANALYZER.term_ids(corpus.contents, vocab), vocab, k1=k1, b=b).save(directory)
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
