"""Agent prompts owned by the envs: the ``agent_prompt`` hook, the prompt texts and projections."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import gymnasium as gym
import pytest

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs import make_group_vec_env
from agentenvs.alfworld.prompts import ALFWorldPrompt, CompactALFWorldPrompt
from agentenvs.core import (
    PROMPT_STYLES,
    AgentPrompt,
    CompactGenericPrompt,
    EpisodeMemory,
    GenericPrompt,
    SeedTaskIds,
    TaskPanel,
    TextAgentEnv,
    agent_prompt_for,
    generic_prompt,
)
from agentenvs.sokoban.env import SokobanEnv
from agentenvs.sokoban.prompts import (
    CompactSokobanPrompt,
    CompactVisualSokobanPrompt,
    SokobanPrompt,
    VisualSokobanPrompt,
    project_sokoban_action,
)

HAS_ALFWORLD = all(importlib.util.find_spec(m) for m in ("alfworld", "textworld"))


class Echo(TextAgentEnv):
    """The smallest text env: no prompt of its own, so the base hook's generic prompts."""

    def __init__(self):
        super().__init__(tasks=TaskPanel({"train": SeedTaskIds(0, 3)}), max_steps=2)

    def _load_task(self, task_id):
        self._last = task_id

    def _observation(self, feedback):
        return feedback or f"You are in {self._last}."

    def _apply(self, command):
        self._last = command
        return 0.0, command == "win"

    def _state_key(self):
        return self._last

    def _admissible_actions(self):
        return ["win", "wait"]


# -- Sokoban: verl-agent's text and projection -------------------------------------------------------
def test_sokoban_reference_prompt_text():
    obs = " # \t P \t X \t O \t # \t"
    first = SokobanPrompt().render(EpisodeMemory(), obs, {})
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
    later = SokobanPrompt(history_length=2).render(memory, obs, {})
    assert (
        "Prior to this step, you have already taken 3 step(s). Below are the most recent 2 "
        "observations and the corresponding actions you took: [Observation 2: 'grid1', Action 2: "
        "'Left']\n[Observation 3: 'grid2', Action 3: 'Left']\nYou are now at step 4 and your "
        f"current observation is:\n{obs}\n" in later
    )
    assert later.endswith("present it within <action> </action> tags.\n")


def test_sokoban_projection_matches_reference():
    p = SokobanPrompt()
    assert p.project("<action>right then up</action>") == "Up"  # first key in dict order
    assert p.project("<action>stay still</action>") == "Still"
    assert p.project("no tags up") == "Still"
    assert p.project("<action>STILL</action>") == "Still"
    assert p.project(None) == "Still"  # type: ignore[arg-type]


TRICKY = [
    "<think>t</think><action>up</action>",
    "<think>t</think><action>Left</action>",
    "<THINK>t</THINK><ACTION>DOWN</ACTION>",
    "<think>t</think><action>right then up</action>",
    "<think>t</think><action>upward</action>",
    "<think>t</think><action>stillness then right</action>",
    "<think>t</think><action>still</action>",
    "<think>t</think><action></action>",
    "<think>t</think><action>jump</action>",
    "<think>t</think></action>up<action>",
    "<think>t</think><action>up",
    "<think>t</think>up</action>",
    "<think>t</think><action>left</action><action>right</action>",
    "<think>t</think><action><action>down</action></action>",
    "<action>left</action>",
    "<think>t<action>left</action>",
    "<think>\u4e0a</think><action>left</action>",
    "<think>t</think><action>\u00fcp right</action>",
    "<think>t</think><action>rIgHt</action> trailing down",
    "right",
    "",
]


@pytest.mark.parametrize("text", TRICKY)
def test_sokoban_env_compat_parse_and_prompt_projection_agree(text):
    env = SokobanEnv(compat="verl-agent")
    word = project_sokoban_action(text)
    parsed = env._parse(text)
    assert parsed.command == word
    assert SokobanPrompt().project(text) == (word or "still").capitalize()
    assert CompactSokobanPrompt().project(text) == SokobanPrompt().project(text)
    if word is None:
        assert not parsed.valid


def test_sokoban_compat_step_uses_the_projection():
    env = SokobanEnv(compat="verl-agent")
    env.reset(options={"task_id": "seed-42"})  # player left of the box, a wall to its left
    # the reference searches words in the order up, down, left, right: "left" wins here
    assert project_sokoban_action("<action>RIGHT, not left</action>") == "left"
    _, reward, *_, info = env.step("<think>t</think><action>RIGHT, not left</action>")
    assert info["action_valid"] and not info["action_is_effective"]
    _, reward, *_, info = env.step("<think>t</think><action>go RIGHT</action>")
    assert info["action_valid"] and info["action_is_effective"] and reward == pytest.approx(-0.1)


def test_sokoban_compact_prompt():
    p = CompactSokobanPrompt()
    assert (p.response_prefix, p.max_new_tokens, p.stop) == ("<think>", 40, ("</action>",))
    assert [turn["role"] for turn in p.examples] == ["user", "assistant"]
    assert p.examples[1]["content"].startswith(p.response_prefix)
    assert p.examples[1]["content"].endswith(p.stop[0])
    memory = EpisodeMemory()
    memory.record("g", "Right")
    memory.record("g", "Up")
    text = p.render(memory, " # \t P \t X \t O \t # \t", {})
    assert "\n#PXO#\n" in text and "Your last moves: right, up.\n" in text
    messages = p.messages(memory, "#", {})
    assert messages[:2] == list(p.examples) and messages[2]["role"] == "user"


# -- ALFWorld (the classes need no engine) -------------------------------------------------------------
def test_alfworld_prompt_structure():
    info = {"admissible_actions": ["go to desk 1", "help", "look"]}
    first_obs = "-= Welcome =-\n\nYou are in a room.\n\nYour task is to: put a mug in desk."
    p = ALFWorldPrompt()
    start = p.render(EpisodeMemory(), first_obs, info)
    assert start.startswith(
        "\nYou are an expert agent operating in the ALFRED Embodied Environment.\n"
        f"Your current observation is: {first_obs}\n"
    )
    assert (
        "Your admissible actions of the current situation are: ['go to desk 1',\n 'look',]."
        in start
    )
    memory = EpisodeMemory()
    memory.record(first_obs, p.project("<think>x</think><action>Go To Desk 1</action>"))
    later = p.render(memory, "You arrive at desk 1.", info)
    assert "Your task is to: put a mug in desk.\n" in later
    assert "Action 1: 'go to desk 1']" in later
    assert "You are now at step 2 and your current observation is: You arrive at desk 1.\n" in later
    assert p.project("I will look around now") == "I will look around now"[-30:].lower()
    with_task = p.render(memory, "You arrive at desk 1.", {**info, "task": "put a mug in desk"})
    assert "Your task is to: put a mug in desk\n" in with_task  # info["task"] wins
    assert (p.max_new_tokens, p.stop, p.response_prefix) == (512, ("</action>",), "")


def test_compact_alfworld_prompt_renders_task_actions_and_moves():
    p = CompactALFWorldPrompt()
    assert (p.response_prefix, p.stop, p.examples) == ("<think>", ("</action>",), ())
    assert 32 <= p.max_new_tokens <= 64 and p.history_length == 3
    first = (
        "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly "
        "around you, you see a desk 1, and a shelf 1.\n\nYour task is to: put a mug in desk."
    )
    info = {
        "task": "put a mug in desk",
        "admissible_actions": ["go to desk 1", "go to shelf 1", "help", "look"],
    }
    start = p.render(EpisodeMemory(), first, info)
    assert start.splitlines() == [
        "Task: put a mug in desk.",
        "Now: You are in the middle of a room. Looking quickly around you, you see a desk 1, "
        "and a shelf 1.",
        "Actions: go to desk 1, go to shelf 1, look",
        "Answer as <think>one short sentence</think><action>one action from Actions</action>.",
    ]
    memory = EpisodeMemory()
    for command in ("look", "go to shelf 1", "take mug 1 from shelf 1", "go to desk 1"):
        memory.record("obs", p.project(f"<think>x</think><action>{command.upper()}</action>"))
    later = p.render(
        memory, "You arrive at desk 1.", {"admissible_actions": ["move mug 1 to desk 1"]}
    )
    assert "Your last moves: go to shelf 1, take mug 1 from shelf 1, go to desk 1.\n" in later
    assert "Now: You arrive at desk 1.\nActions: move mug 1 to desk 1\n" in later
    # without info["task"], the task comes from the episode's first observation
    memory.records[0] = (first, "look")
    assert p.render(memory, "x", {}).startswith("Task: put a mug in desk.\n")
    reference = ALFWorldPrompt().render(memory, "You arrive at desk 1.", info)
    assert len(later) < len(reference) / 2


# -- the hook ------------------------------------------------------------------------------------------
def test_sokoban_hook_styles_and_history():
    env = SokobanEnv()
    assert type(env.agent_prompt()) is SokobanPrompt
    assert type(env.agent_prompt("reference")) is SokobanPrompt
    assert type(env.agent_prompt("compact")) is CompactSokobanPrompt
    assert env.agent_prompt().history_length == 2
    assert env.agent_prompt("compact", history_length=5).history_length == 5
    assert env.agent_prompt(history_length=0).history_length == 0
    reference = env.agent_prompt()
    assert (reference.max_new_tokens, reference.stop) == (512, ("</action>",))
    assert isinstance(reference, AgentPrompt)


@pytest.mark.parametrize("style", ["fancy", "Reference", "", None])
def test_unknown_style_raises_naming_the_choices(style):
    for env in (SokobanEnv(), Echo()):
        with pytest.raises(ValueError, match="reference.*compact"):
            env.agent_prompt(style)
    with pytest.raises(ValueError, match="reference.*compact"):
        agent_prompt_for(object(), style)


def test_hook_through_gym_make_wrappers():
    env = gym.make("agentenvs/Sokoban-v0")
    assert type(env.get_wrapper_attr("agent_prompt")("compact")) is CompactSokobanPrompt
    assert type(agent_prompt_for(env, "compact")) is CompactSokobanPrompt
    assert type(agent_prompt_for(env)) is SokobanPrompt
    visual = gym.make("agentenvs/SokobanVisual-v0")  # its prompts show the image
    assert type(visual.get_wrapper_attr("agent_prompt")()) is VisualSokobanPrompt
    assert type(agent_prompt_for(visual, "compact")) is CompactVisualSokobanPrompt


def test_base_hook_gives_generic_prompts():
    env = Echo()
    assert PROMPT_STYLES == ("reference", "compact")
    assert type(env.agent_prompt()) is GenericPrompt
    assert type(env.agent_prompt("compact")) is CompactGenericPrompt
    assert env.agent_prompt(history_length=4).history_length == 4
    obs, info = env.reset(seed=0)
    text = env.agent_prompt().render(EpisodeMemory(), obs, info)
    assert f"Your current observation is:\n{obs}\n" in text
    assert "Your admissible actions are: ['win',\n 'wait',]." in text
    compact = env.agent_prompt("compact")
    assert "Actions: win | wait\n" in compact.render(EpisodeMemory(), obs, info)
    assert compact.project("<think>.</think><action>WIN</action>") == "win"
    _, _, terminated, _, _ = env.step(compact.response_prefix + ".</think><action>win</action>")
    assert terminated


def test_hook_through_vector_envs():
    sync = make_group_vec_env("agentenvs/Sokoban-v0", num_groups=2, group_size=2)
    assert type(agent_prompt_for(sync, "compact")) is CompactSokobanPrompt
    cartpoles = gym.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync")
    assert type(agent_prompt_for(cartpoles)) is GenericPrompt
    async_envs = gym.make_vec("agentenvs/Sokoban-v0", num_envs=2, vectorization_mode="async")
    try:
        prompt = agent_prompt_for(async_envs, "compact", history_length=4)
        assert type(prompt) is CompactSokobanPrompt and prompt.history_length == 4
    finally:
        async_envs.close()


def test_env_without_the_hook_gets_the_generic_prompt():
    class Bare(gym.Env):
        pass

    assert type(agent_prompt_for(Bare())) is GenericPrompt
    assert type(agent_prompt_for(gym.wrappers.RecordEpisodeStatistics(Echo()))) is GenericPrompt
    assert type(generic_prompt("compact")) is CompactGenericPrompt


def test_generic_history_block():
    p = GenericPrompt(history_length=1)
    memory = EpisodeMemory()
    memory.record("a", "go")
    memory.record("b", "stop")
    text = p.render(memory, "c", {})
    assert (
        "you have already taken 2 step(s). Below are the most recent 1 observations and the "
        "corresponding actions you took: [Observation 2: 'b', Action 2: 'stop']" in text
    )
    assert "admissible" not in text.split("Your current observation")[1].split("\n")[1]


@pytest.mark.skipif(not HAS_ALFWORLD, reason="needs the alfworld engine")
def test_alfworld_hook_styles():
    from agentenvs.alfworld.env import ALFWorldEnv

    env = ALFWorldEnv(data_path="embedded")
    try:
        assert type(env.agent_prompt()) is ALFWorldPrompt
        assert type(env.agent_prompt("compact")) is CompactALFWorldPrompt
        assert env.agent_prompt("compact", history_length=1).history_length == 1
        with pytest.raises(ValueError, match="reference.*compact"):
            env.agent_prompt("fancy")
        obs, info = env.reset(options={"task_id": env.tasks.ids("train")[0]})
        compact = env.agent_prompt("compact").render(EpisodeMemory(), obs, info)
        assert compact.startswith(f"Task: {info['task']}.\nNow: You are in the middle of a room.")
        assert f"Actions: {', '.join(info['admissible_actions'])}\n" in compact
    finally:
        env.close()
    wrapped = gym.make("agentenvs/ALFWorld-v0", data_path="embedded")
    try:
        assert type(wrapped.get_wrapper_attr("agent_prompt")("compact")) is CompactALFWorldPrompt
    finally:
        wrapped.close()


def test_prompt_modules_do_not_import_model_libraries():
    code = (
        "import sys, agentenvs, agentenvs.core.prompting, agentenvs.sokoban.prompts, "
        "agentenvs.alfworld.prompts, agentenvs.sokoban.env\n"
        "bad = [m for m in ('torch', 'transformers') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("style", ["reference", "compact"])
def test_a_prompts_answer_is_the_action_the_env_reads(style):
    answered, written = SokobanEnv(), SokobanEnv()
    prompt = answered.agent_prompt(style)
    for env in (answered, written):
        env.reset(options={"task_id": "seed-3"})
    for move in ("left", "up", "right"):
        got = answered.step(prompt.response_prefix + prompt.answer(move))
        want = written.step(f"<think>go</think><action>{move}</action>")
        assert got[4]["action_valid"] and got[:3] == want[:3]
        if got[2]:  # won
            break
