"""Tests of agentenvs.webshop.search: the analyzer, BM25 ranking, agreement with bm25s, limits."""

from __future__ import annotations

import importlib.util
import random
import threading

import numpy as np
import pytest

pytest.importorskip("bm25s")

import bm25s  # noqa: E402

from agentenvs.core import bm25 as bm25_mod  # noqa: E402
from agentenvs.webshop import search as search_mod  # noqa: E402
from agentenvs.webshop.search import (  # noqa: E402
    MAX_QUERY_TOKENS,
    STEMMER_NAME,
    STOP_WORDS,
    BM25Search,
    tokenize,
)

HAS_STEMMER = importlib.util.find_spec("Stemmer") is not None
needs_stemmer = pytest.mark.skipif(not HAS_STEMMER, reason="PyStemmer is not installed")

LUCENE_STOP_WORDS = (
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with"
).split()


# --- tokenizer -------------------------------------------------------------------------------


def test_stop_words_are_lucenes_33():
    assert len(LUCENE_STOP_WORDS) == 33
    assert STOP_WORDS == frozenset(LUCENE_STOP_WORDS)
    assert tokenize(" ".join(LUCENE_STOP_WORDS).upper()) == []
    assert tokenize("the mug is red") == ["mug", "red"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("women's", ["women"]),
        ("MEN'S shoes", ["men", "shoe"]),
        ("men\u2019s", ["men"]),  # typographic apostrophe
        ("kid\uff07s", ["kid"]),  # full-width apostrophe
        ("it's", []),  # "it" is a stop word once the possessive is gone
        ("o'sullivan", ["o", "sullivan"]),  # 's not at the token end
        ("'s", ["s"]),  # no apostrophe left of the s: a word "s" (Lucene too)
        ("dad's-hat", ["dad", "hat"]),
        ("boss's", ["boss"]),
    ],
)
@needs_stemmer
def test_possessive_removal(text, expected):
    assert tokenize(text) == expected


@needs_stemmer
def test_porter_stemming():
    assert STEMMER_NAME == "porter" and BM25Search.stemmer_name == "porter"
    assert tokenize("dresses running ponies Caresses") == ["dress", "run", "poni", "caress"]
    # one- and two-character words are not stemmed (Lucene's PorterStemmer; snowball: "", "u")
    assert tokenize("s us ms xs") == ["s", "us", "ms", "xs"]
    assert "" not in tokenize("s " * 10 + "'s s's ss sss")
    # documents and queries meet on the stem
    engine = BM25Search(["d"], ["A red dress"])
    assert engine.search("dresses") == ["d"]


def test_no_stemming_without_pystemmer(monkeypatch):
    monkeypatch.setattr(bm25_mod, "HAVE_STEMMER", False)
    assert tokenize("Red Dresses, women's") == ["red", "dresses", "women"]


def test_tokens_and_unicode():
    assert tokenize("") == [] and tokenize("!!! ... ---") == []
    # only [a-z0-9] runs are tokens, whatever the script
    assert tokenize("Size-10 (3.5 oz) 東京 😀 naïve") == ["size", "10", "3", "5", "oz", "na", "ve"]
    assert tokenize("東京 😀 \u0000 \ud800") == []
    assert tokenize("a b c d e", max_tokens=3) == ["b", "c", "d"]
    assert tokenize("b c", max_tokens=0) == []


def test_catalogue_terms_match_tokenize():
    rng = random.Random(3)
    pieces = [
        "Women's",
        "DRESSES",
        "the",
        "mug",
        "3.5oz",
        "café",
        "it's",
        "Running",
        "o'neil",
        "and",
    ]
    texts = [" ".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(200)]
    vocab: dict[str, int] = {}
    ids = search_mod.ANALYZER.term_ids(texts, vocab)
    words = {v: k for k, v in vocab.items()}
    assert [[words[i] for i in doc] for doc in ids] == [tokenize(t) for t in texts]


# --- ranking ---------------------------------------------------------------------------------


def test_documents_with_the_query_words_rank_first():
    engine = BM25Search(
        ["plate", "mug", "cup"], ["white dinner plate", "red coffee mug", "blue tea cup"]
    )
    assert engine.search("coffee mug") == ["mug"]
    assert set(engine.search("red mug or blue cup")) == {"mug", "cup"}
    assert engine.search("plate") == ["plate"]
    assert engine.search("teapot") == []


def test_bm25_term_frequency_and_length():
    # more occurrences in documents of the same length rank higher
    engine = BM25Search(["once", "twice"], ["mug aaa bbb ccc", "mug mug bbb ccc"])
    assert engine.search("mug") == ["twice", "once"]
    # a shorter document with the same count ranks higher
    engine = BM25Search(["long", "short"], ["mug aaa bbb ccc ddd eee", "mug aaa"])
    assert engine.search("mug") == ["short", "long"]
    # a rarer query word weighs more
    engine = BM25Search(["x", "y", "z"], ["common rare", "common other", "common thing"])
    assert engine.search("common rare")[0] == "x"


def test_ties_keep_catalogue_order():
    docs = ["red mug", "red mug", "blue mug", "red mug"]
    assert BM25Search(["a", "b", "c", "d"], docs).search("red mug") == ["a", "b", "d", "c"]
    assert BM25Search(["d", "c", "b", "a"], docs[::-1]).search("red mug") == ["d", "b", "a", "c"]
    many = BM25Search([f"p{i}" for i in range(120)], ["mug"] * 120)
    assert many.search("mug") == [f"p{i}" for i in range(50)]


def test_repeated_query_words_count_twice():
    engine = BM25Search(["r", "m"], ["red shirt", "mug cup"])
    assert engine.search("red mug") == ["r", "m"]  # a tie: catalogue order
    assert engine.search("mug red mug") == ["m", "r"]
    np.testing.assert_allclose(
        engine.scores("mug red mug"), 2 * engine.scores("mug") + engine.scores("red"), rtol=1e-6
    )


def test_lucene_bm25_formula():
    engine = BM25Search(["a", "b", "c"], ["red mug", "blue mug mug", "red red red hat"], k1=0.9)
    n, avgdl = 3, 3.0
    idf = np.log(1 + (n - 2 + 0.5) / (2 + 0.5))  # "red" is in 2 documents

    def tfn(tf, dl):
        return tf / (tf + 0.9 * (1 - 0.4 + 0.4 * dl / avgdl))

    expected = [idf * tfn(1, 2), 0.0, idf * tfn(3, 4)]
    np.testing.assert_allclose(engine.scores("red"), expected, rtol=1e-6)
    assert engine.search("red") == ["c", "a"]


# --- agreement with bm25s --------------------------------------------------------------------


def _random_corpus(rng: random.Random, n_docs: int, n_words: int) -> tuple[list[str], list[str]]:
    words = [f"w{i}x" for i in range(n_words)]
    docs = [
        " ".join(rng.choice(words[: rng.randint(3, n_words)]) for _ in range(rng.randint(0, 15)))
        for _ in range(n_docs)
    ]
    return words, docs


def _bm25s_retriever(docs: list[str]):
    """bm25s itself, indexing the same terms as BM25Search (Lucene BM25, k1 0.9, b 0.4)."""
    vocab: dict[str, int] = {}
    doc_ids = search_mod.ANALYZER.term_ids(docs, vocab)
    retriever = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    tokens = bm25s.tokenization.Tokenized(ids=doc_ids, vocab=vocab)
    retriever.index(tokens, create_empty_token=False, show_progress=False)
    return retriever


def test_scores_equal_bm25s_retrieve():
    rng = random.Random(7)
    words, docs = _random_corpus(rng, 300, 60)
    ids = [f"id{i}" for i in range(len(docs))]
    engine = BM25Search(ids, docs)
    retriever = _bm25s_retriever(docs)
    checked = 0
    for _ in range(200):
        query_words = rng.sample(words + ["unknownword", "the"], rng.randint(1, 5))
        query = " ".join(query_words)
        terms = [t for t in tokenize(query) if t in engine.vocab]
        ours = engine.scores(query)
        if not terms:
            assert engine.search(query) == [] and not ours.any()
            continue
        checked += 1
        # distinct query words: the very same float32 scores as bm25s
        np.testing.assert_array_equal(ours, retriever.get_scores(terms))
        k = min(50, len(docs))
        result = retriever.retrieve([terms], k=k, show_progress=False)
        their_scores = result.scores[0]
        hits = engine.search(query)
        assert len(hits) == min(50, int((ours > 0).sum()))
        hit_scores = ours[[ids.index(h) for h in hits]]
        np.testing.assert_array_equal(hit_scores, their_scores[their_scores > 0][: len(hits)])
        # best first, ties in catalogue order, only positive scores
        reference = sorted(
            (i for i in range(len(docs)) if ours[i] > 0), key=lambda i: (-ours[i], i)
        )
        assert hits == [ids[i] for i in reference[:50]]
    assert checked > 100


def test_repeated_query_words_match_bm25s_within_rounding():
    rng = random.Random(11)
    words, docs = _random_corpus(rng, 200, 30)
    engine = BM25Search([str(i) for i in range(len(docs))], docs)
    retriever = _bm25s_retriever(docs)
    for _ in range(50):
        query_words = [rng.choice(words[:10]) for _ in range(6)]
        terms = [t for t in tokenize(" ".join(query_words)) if t in engine.vocab]
        np.testing.assert_allclose(
            engine.scores(" ".join(query_words)), retriever.get_scores(terms), rtol=1e-5
        )


# --- limits and edge cases -------------------------------------------------------------------


def test_top_k():
    engine = BM25Search(
        [f"p{i}" for i in range(80)], [f"mug {'big ' * (i % 7)}" for i in range(80)]
    )
    top = engine.search("mug")
    assert len(top) == 50 and len(set(top)) == 50
    assert engine.search("mug", k=10) == top[:10]
    assert len(engine.search("mug", k=200)) == 80
    assert engine.search("mug", k=0) == [] and engine.search("mug", k=-3) == []
    assert engine.search("big mug", k=5) == ["p6", "p13", "p20", "p27", "p34"]


def test_queries_without_known_words():
    engine = BM25Search(["a", "b"], ["red mug", "blue cup"])
    for query in ["", "   ", "the and of", "!!!", "東京", "teapot", "it's"]:
        assert engine.search(query) == [], query
    assert engine.search("THE RED!!!") == ["a"]


def test_empty_catalogues():
    empty = BM25Search([], [])
    assert len(empty) == 0 and empty.search("mug") == [] and empty.index.num_terms == 0
    no_terms = BM25Search(["a", "b"], ["", "the of and"])
    assert len(no_terms) == 2 and no_terms.search("mug") == [] and no_terms.search("") == []
    some_empty = BM25Search(["a", "b", "c"], ["", "red mug", "!!"])
    assert some_empty.search("mug") == ["b"]
    with pytest.raises(ValueError):
        BM25Search(["a"], ["x", "y"])


def test_long_queries():
    rng = random.Random(5)
    words, docs = _random_corpus(rng, 500, 200)
    engine = BM25Search([str(i) for i in range(len(docs))], docs)
    query = " ".join(rng.choice(words) for _ in range(20_000))[:100_000]
    assert len(query) == 100_000
    hits = engine.search(query)
    assert isinstance(hits, list) and 0 < len(hits) <= 50
    # only the first MAX_QUERY_TOKENS tokens count
    engine = BM25Search(["a"], ["red mug"])
    assert engine.search("zzz " * (MAX_QUERY_TOKENS - 1) + "mug") == ["a"]
    assert engine.search("zzz " * MAX_QUERY_TOKENS + "mug") == []
    assert engine.search("the " * 5000 + "mug") == ["a"]  # stop words are not counted


def test_concurrent_searches_match_serial():
    rng = random.Random(9)
    words, docs = _random_corpus(rng, 2000, 300)
    engine = BM25Search([f"id{i}" for i in range(len(docs))], docs)
    queries = [" ".join(rng.sample(words, 3)) + " women's dresses" for _ in range(200)]
    serial = [engine.search(q) for q in queries]
    assert sum(bool(s) for s in serial) > 150
    results: dict[int, list[list[str]]] = {}
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            barrier.wait()
            order = list(range(len(queries)))
            random.Random(t).shuffle(order)
            out: list[list[str]] = [[] for _ in queries]
            for i in order:
                out[i] = engine.search(queries[i])
            results[t] = out
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(results) == 8 and all(out == serial for out in results.values())
