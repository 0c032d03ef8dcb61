"""The rollout engine with a scripted generator on real Sokoban envs under the credit wrappers."""

import pickle

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from agentenvs.learners.llm.generation import Sample  # noqa: E402
from agentenvs.learners.llm.policy import Policy  # noqa: E402
from agentenvs.learners.llm.rollout import (  # noqa: E402
    Response,
    Sampler,
    collect_parallel,
    collect_sequential,
    play_episodes,
    prompts_of,
)
from agentenvs.learners.llm.tiny import build_tiny_tokenizer  # noqa: E402
from agentenvs.wrappers import GraphCreditWrapper, VectorCreditWrapper  # noqa: E402
from lost_worker import LostWorker  # noqa: E402

import agentenvs  # noqa: E402,F401
from agentenvs import make_group_vec_env  # noqa: E402
from agentenvs.core import EpisodeMemory, GenericPrompt  # noqa: E402

RIGHT = "<think>go</think><action>right</action>"


class Scripted:
    """The first prompt of every batch answers ``first``, the others ``rest``; records batch sizes."""

    def __init__(self, first=RIGHT, rest="hmm"):
        self.first, self.rest, self.sizes = first, rest, []

    def generate(self, prompts, *, greedy=False, stop=()):
        self.sizes.append(len(prompts))
        texts = [self.first] + [self.rest] * (len(prompts) - 1)
        return [Sample([3, 4, 2], [-0.5, -0.25, -0.125], t) for t in texts]


@pytest.fixture(scope="module")
def policy():
    return Policy(None, build_tiny_tokenizer())


def _sokoban(max_steps=4):
    return gym.make("agentenvs/Sokoban-v0", max_steps=max_steps)


def test_sequential_groups_come_from_the_wrappers(policy):
    envs = [GraphCreditWrapper(_sokoban(), group_size=2) for _ in range(2)]
    prompts = [p for e in envs for p in prompts_of(e, "reference")]
    gen = Scripted()
    sample = Sampler(policy, gen)
    groups = collect_sequential(envs, ["seed-42", "seed-42"], prompts, sample)
    # env 0 answers first in every batch: it wins both episodes in 2 steps each (turns 1-4) while
    # env 1's answers are invalid until its first episode is cut at 4 steps; then env 1 plays alone,
    # answers first, and wins its second episode in 2 steps
    assert gen.sizes == [2, 2, 2, 2, 1, 1]
    assert [[(t.success, len(t)) for t in g] for g in groups] == [
        [(True, 2), (True, 2)],
        [(False, 4), (True, 2)],
    ]
    step = groups[0][0].steps[0]
    assert type(step.action) is str and step.action == RIGHT
    assert step.advantage is not None
    assert step.extras["response_ids"].tolist() == [3, 4, 2]
    assert step.extras["logprobs"].dtype == np.float32
    assert step.extras["prompt_ids"].tolist() == policy.chat_ids(
        prompts[0].messages(EpisodeMemory(), step.observation, {})
    )
    assert {t.task_id for g in groups for t in g} == {"seed-42"}
    assert all(e.pop_groups() == [] for e in envs)  # the learner drained the outboxes
    assert sample.stats.steps == sum(len(t) for g in groups for t in g)
    for e in envs:
        e.close()


def test_parallel_groups_come_from_the_vector_wrapper(policy):
    envs = VectorCreditWrapper(
        make_group_vec_env("agentenvs/Sokoban-v0", num_groups=2, group_size=2, max_steps=4),
        "graph",
    )
    gen = Scripted()
    prompts = prompts_of(envs, "reference")
    groups, dropped = collect_parallel(envs, ["seed-42", "seed-1"], prompts, Sampler(policy, gen))
    # sub-env 0 wins in two turns and then sits out: no tokens are generated for it
    assert gen.sizes == [4, 4, 3, 3]
    assert dropped == 0 and [len(g) for g in groups] == [2, 2]
    # block 0 (seed-42): sub-env 0 wins in 2 steps, sub-env 1 after 2 invalid answers in 4
    assert [[(t.task_id, t.success, len(t)) for t in g] for g in groups] == [
        [("seed-42", True, 2), ("seed-42", True, 4)],
        [("seed-1", False, 4), ("seed-1", False, 4)],
    ]
    assert all(
        s.advantage is not None and "response_ids" in s.extras
        for g in groups
        for t in g
        for s in t.steps
    )
    # the next call starts fresh groups from new tasks (no state crosses an iteration)
    groups, dropped = collect_parallel(
        envs, ["seed-3", "seed-3"], prompts, Sampler(policy, Scripted())
    )
    assert dropped == 0 and {t.task_id for g in groups for t in g} == {"seed-3"}
    envs.close()


def test_parallel_counts_the_groups_the_wrapper_dropped(policy):
    """The wrapper marks a dropped group in the info of the sub-env that completed it."""
    fns = [lambda: LostWorker(_sokoban()), _sokoban, _sokoban, _sokoban]
    envs = VectorCreditWrapper(agentenvs.GroupedVectorEnv(gym.vector.SyncVectorEnv(fns), 2))
    prompts = prompts_of(envs, "reference")
    groups, dropped = collect_parallel(
        envs, ["seed-42", "seed-1"], prompts, Sampler(policy, Scripted())
    )
    assert dropped == 1 and envs.dropped_groups == 1
    assert [[t.task_id for t in g] for g in groups] == [["seed-1", "seed-1"]]
    envs.close()


def test_an_env_without_credit_is_refused(policy):
    env = _sokoban(max_steps=1)
    sample = Sampler(policy, Scripted(rest=RIGHT))
    with pytest.raises(ValueError, match="has no group size: wrap the env in a credit wrapper"):
        collect_sequential([env], ["seed-1"], prompts_of(env, "compact"), sample)


def test_response_prefix_is_prompt_and_action(policy):
    env = _sokoban()
    prompts = prompts_of(env, "compact")
    assert prompts[0].response_prefix == "<think>"
    (traj,) = play_episodes(
        [env],
        ["seed-42"],
        prompts,
        Sampler(policy, Scripted(first="go</think><action>right</action>")),
    )
    assert traj.success and len(traj) == 2
    assert traj.steps[0].action == RIGHT


def test_env_without_the_hook_gets_the_generic_prompt():
    env = gym.make("CartPole-v1")
    (prompt,) = prompts_of(env, "reference")
    assert isinstance(prompt, GenericPrompt)
    env.close()


def test_response_survives_pickling():
    r = Response("text", [1, 2], [3], [-0.5])
    back = pickle.loads(pickle.dumps(r))
    assert back == "text" and back.response_ids.tolist() == [3] and back.logprobs.tolist() == [-0.5]
