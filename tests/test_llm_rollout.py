"""Prompts and the rollout engine (scripted generator, real Sokoban env, grouped vector env)."""

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import agentenvs  # noqa: E402,F401
from agentenvs import make_group_vec_env  # noqa: E402
from learners.llm.generation import Sample  # noqa: E402
from learners.llm.policy import Policy  # noqa: E402
from learners.llm.prompts import (  # noqa: E402
    ALFWorldPrompt,
    CompactSokobanPrompt,
    EpisodeMemory,
    SokobanPrompt,
    prompt_for,
)
from learners.llm.rollout import collect_groups, run_episodes, sub_envs  # noqa: E402
from learners.llm.tiny import build_tiny_tokenizer  # noqa: E402


class Scripted:
    """First prompt of every batch answers ``first``, the others ``rest``; records batch sizes."""

    def __init__(self, first="<think>go</think><action>right</action>", rest="hmm"):
        self.first, self.rest, self.sizes = first, rest, []

    def generate(self, prompts, *, greedy=False):
        self.sizes.append(len(prompts))
        texts = [self.first] + [self.rest] * (len(prompts) - 1)
        return [Sample([3, 4, 2], [-0.5, -0.25, -0.125], t) for t in texts]


@pytest.fixture(scope="module")
def policy():
    return Policy(None, build_tiny_tokenizer())


def test_sokoban_reference_prompt_text():
    obs = " # \t P \t X \t O \t # \t"
    first = SokobanPrompt().prompt(EpisodeMemory(), obs, {})
    assert first.startswith(
        "\nYou are an expert agent operating in the Sokoban environment.\n\n# Symbols"
    )
    assert f"# Current Step\nYour current observation is:\n{obs}\n" in first
    assert 'Your admissible actions are ["up", "down", "left", "right"].\n\n' in first
    assert "MUST be enclosed within <think> </think> tags. \nOnce you've finished" in first
    memory = EpisodeMemory()
    for k in range(3):
        memory.record(
            f"grid{k}", SokobanPrompt().project("<think>a</think><action>go Left</action>")
        )
    later = SokobanPrompt(history_length=2).prompt(memory, obs, {})
    assert (
        "Prior to this step, you have already taken 3 step(s). Below are the most recent 2 "
        "observations and the corresponding actions you took: [Observation 2: 'grid1', Action 2: "
        "'Left']\n[Observation 3: 'grid2', Action 3: 'Left']\nYou are now at step 4 and your "
        f"current observation is:\n{obs}\n" in later
    )


def test_sokoban_projection_matches_reference():
    p = SokobanPrompt()
    assert p.project("<action>right then up</action>") == "Up"  # first key in dict order
    assert p.project("<action>stay still</action>") == "Still"
    assert p.project("no tags up") == "Still"


def test_alfworld_prompt_structure():
    info = {"admissible_actions": ["go to desk 1", "help", "look"]}
    first_obs = "-= Welcome =-\n\nYou are in a room.\n\nYour task is to: put a mug in desk."
    p = ALFWorldPrompt()
    start = p.prompt(EpisodeMemory(), first_obs, info)
    assert (
        "Your admissible actions of the current situation are: ['go to desk 1',\n 'look',]."
        in start
    )
    memory = EpisodeMemory()
    memory.record(first_obs, p.project("<think>x</think><action>Go To Desk 1</action>"))
    later = p.prompt(memory, "You arrive at desk 1.", info)
    assert "Your task is to: put a mug in desk.\n" in later
    assert "Action 1: 'go to desk 1']" in later
    assert p.project("I will look around now") == "I will look around now"[-30:].lower()


def test_prompt_for_styles():
    assert isinstance(prompt_for("agentenvs/Sokoban-v0"), SokobanPrompt)
    assert isinstance(prompt_for("agentenvs/Sokoban-v0", style="compact"), CompactSokobanPrompt)
    assert isinstance(prompt_for("agentenvs/ALFWorld-v0"), ALFWorldPrompt)
    with pytest.raises(ValueError):
        prompt_for("agentenvs/Sokoban-v0", style="fancy")


def test_finished_envs_are_not_generated_for(policy):
    envs = make_group_vec_env("agentenvs/Sokoban-v0", num_groups=2, group_size=2, max_steps=4)
    gen = Scripted()
    groups, stats = collect_groups(
        envs, ["seed-42", "seed-42"], policy, gen, SokobanPrompt(), group_tag="it0-"
    )
    # env0 solves seed-42 with right, right; env1 then gets the first slot and solves in steps 3-4
    assert gen.sizes == [4, 4, 3, 3]
    assert [[t.success for t in g] for g in groups] == [[True, True], [False, False]]
    assert [len(t) for g in groups for t in g] == [2, 4, 4, 4]
    assert [g[0].group_id for g in groups] == ["it0-0", "it0-1"]
    assert {t.task_id for g in groups for t in g} == {"seed-42"}
    step = groups[0][0].steps[0]
    assert step.action_valid and step.reward == pytest.approx(-0.1)
    assert step.state_key != step.next_state_key == groups[0][0].steps[1].state_key
    assert step.extras["response_ids"].tolist() == [3, 4, 2]
    assert step.extras["logprobs"].dtype == np.float32
    assert step.extras["prompt_ids"].tolist() == policy.chat_ids(
        SokobanPrompt().prompt(EpisodeMemory(), step.observation, {})
    )
    assert not groups[1][0].steps[0].action_valid
    assert stats.steps == 14 and stats.valid_steps == 4 and stats.tokens == 42
    envs.close()


def test_response_prefix_is_prompt_and_action(policy):
    envs = make_group_vec_env("agentenvs/Sokoban-v0", num_groups=1, group_size=1)
    gen = Scripted(first="go</think><action>right</action>")
    (traj,), _ = run_episodes(sub_envs(envs), ["seed-42"], policy, gen, CompactSokobanPrompt())
    assert traj.success and len(traj) == 2
    assert traj.steps[0].action == "<think>go</think><action>right</action>"
    ids = traj.steps[0].extras["prompt_ids"].tolist()
    prefix = policy.tokenizer.encode("<think>", add_special_tokens=False)
    assert ids[-len(prefix) :] == prefix
    envs.close()


def test_async_vector_env_is_refused():
    envs = gym.make_vec("agentenvs/Sokoban-v0", num_envs=1, vectorization_mode="async")
    try:
        with pytest.raises(TypeError, match="sync"):
            sub_envs(envs)
    finally:
        envs.close()
