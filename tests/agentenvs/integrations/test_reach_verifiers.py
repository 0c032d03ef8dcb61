"""Sokoban as a ``verifiers`` ``MultiTurnEnv`` (``agentenvs.integrations.verifiers_env``), played
through verifiers' own rollout loop (``Environment.generate`` / ``MultiTurnEnv.rollout``) by a
scripted policy: a ``vf.Client`` subclass (verifiers' model-client interface) that answers from a
fixed script per task instead of calling a model. Run in its venv by scripts/test_reach.sh."""

from __future__ import annotations

import asyncio
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytestmark = pytest.mark.reach
vf = pytest.importorskip("verifiers")
if not hasattr(vf, "MultiTurnEnv"):  # verifiers >= 0.4 ships only its v1 stack
    pytest.skip(f"verifiers {vf.__version__} has no MultiTurnEnv", allow_module_level=True)

import agentenvs  # noqa: E402,F401  (registers the envs)
from agentenvs.core import EpisodeMemory  # noqa: E402
from agentenvs.integrations.verifiers_env import AgentEnv, load_environment  # noqa: E402
from agentenvs.sokoban.solver import solve  # noqa: E402

ENV = "agentenvs/Sokoban-v0"
COLUMNS = ["trajectory", "episode_return", "won", "invalid_actions"]
# Texts the env must reject: no tags, an unknown move, an empty message, no content at all.
INVALID = ["garbage", "<think>hm</think><action>fly</action>", "", None]


def tagged(move: str) -> str:
    return f"<think>plan</think><action>{move}</action>"


class ScriptedClient(vf.Client):
    """verifiers' client interface answering ``scripts[task_id][turn]`` (the turn is the number
    of steps the rollout has taken); it records every prompt it was sent, per task."""

    def __init__(self, scripts: dict[str, list[str | None]], delay: float = 0.0) -> None:
        super().__init__(None)
        self.scripts, self.delay = scripts, delay
        self.prompts: dict[str, list[Any]] = {task: [] for task in scripts}

    def setup_client(self, config: Any) -> None:
        return None

    async def to_native_tool(self, tool: Any) -> Any:
        return tool

    async def to_native_prompt(self, messages: Any) -> tuple[Any, dict]:
        return messages, {}

    async def get_native_response(self, prompt, model, sampling_args, tools=None, **kwargs):
        state = kwargs["state"]
        task = state["info"]["task_id"]
        self.prompts[task].append(prompt)
        await asyncio.sleep(self.delay)
        return self.scripts[task][len(state["trajectory"])]

    async def raise_from_native_response(self, response: Any) -> None:
        return None

    async def from_native_response(self, text: str | None) -> Any:
        message = vf.ResponseMessage(content=text, finish_reason="stop", is_truncated=False)
        return vf.Response(id="scripted", created=0, model="scripted", message=message)

    async def close(self) -> None:
        return None


def script_for(task_id: str, rng: np.random.Generator, max_steps: int) -> list[str | None]:
    """Even seeds: the solver's moves with an invalid text after the first (the episode is won);
    odd seeds: random moves and invalid texts until the step budget runs out."""
    env = gym.make(ENV)
    env.reset(options={"task_id": task_id})
    room = env.unwrapped._room
    env.close()
    if int(task_id.split("-")[1]) % 2 == 0:
        moves = solve(room.fixed, room.state, max_depth=max_steps - 1)
        assert moves is not None
        return [tagged(moves[0]), INVALID[len(moves) % 4]] + [tagged(m) for m in moves[1:]]
    choices = [tagged(m) for m in ("up", "down", "left", "right")] + INVALID
    return [choices[i] for i in rng.integers(len(choices), size=max_steps)]


def play_in_process(task_id: str, script: list[str | None]) -> dict[str, Any]:
    """The same task and texts in a plain in-process env, rendered by its own prompt."""
    env = gym.make(ENV)
    prompt = env.unwrapped.agent_prompt("reference", 0)
    memory = EpisodeMemory()
    observation, info = env.reset(options={"task_id": task_id})
    turns, rewards, infos = [prompt.render(memory, observation, info)], [], []
    for text in script:
        before = observation
        observation, reward, terminated, truncated, info = env.step(text or "")
        memory.record(before, prompt.project(text or ""))
        turns.append(prompt.render(memory, observation, info))
        rewards.append(float(reward))
        infos.append(info)
        if terminated or truncated:
            break
    env.close()
    return {"turns": turns, "rewards": rewards, "infos": infos, "won": bool(info["won"])}


def contents(messages: list[Any]) -> list[tuple[str, Any]]:
    return [(m["role"], m["content"]) for m in messages]


def test_generate_plays_sokoban_like_the_in_process_env():
    """verifiers' ``generate`` over 12 tasks: each rollout's prompt, user turns, step rewards,
    infos and outcome equal the in-process env's on the same task ids and texts; the model saw
    exactly those turns; the rubric's reward is the episode return."""
    env = load_environment(ENV, num_examples=12, num_eval_examples=2)
    assert isinstance(env, AgentEnv) and isinstance(env, vf.MultiTurnEnv)
    dataset = env.get_dataset()
    tasks = [row["task_id"] for row in dataset["info"]]
    assert tasks == [f"seed-{i}" for i in range(12)]
    assert [row["task_id"] for row in env.get_eval_dataset()["info"]] == [
        "seed-65536",
        "seed-65537",
    ]
    max_steps = gym.make(ENV).unwrapped.max_steps
    rng = np.random.default_rng(0)
    scripts = {task: script_for(task, rng, max_steps) for task in tasks}
    client = ScriptedClient(scripts)
    results = asyncio.run(env.generate(dataset, client, "scripted", state_columns=COLUMNS))
    outputs = {out["info"]["task_id"]: out for out in results["outputs"]}
    assert sorted(outputs) == sorted(tasks)
    invalid = 0
    for task, out in outputs.items():
        ref = play_in_process(task, scripts[task])
        steps = len(ref["rewards"])
        assert out["error"] is None and out["is_completed"]
        assert out["stop_condition"] == "has_final_env_response"
        assert contents(out["prompt"]) == [("user", ref["turns"][0])]
        expected = []
        for text, turn in zip(scripts[task][:steps], ref["turns"][1:], strict=True):
            expected += [("assistant", text or ""), ("user", turn)]
        got = [(role, content or "") for role, content in contents(out["completion"])]
        assert got == expected
        assert [step["reward"] for step in out["trajectory"]] == ref["rewards"]
        assert [step["extras"]["info"] for step in out["trajectory"]] == ref["infos"]
        # what the policy was sent at turn k: the first prompt, then turns and answers so far
        assert len(client.prompts[task]) == steps
        last = contents(client.prompts[task][-1])
        assert last[-1] == ("user", ref["turns"][steps - 1])
        assert out["reward"] == pytest.approx(sum(ref["rewards"]))
        assert out["episode_return"] == pytest.approx(sum(ref["rewards"]))
        assert out["won"] is ref["won"] and out["metrics"]["won"] == float(ref["won"])
        n_invalid = sum(not info["action_valid"] for info in ref["infos"])
        assert out["invalid_actions"] == n_invalid == out["metrics"]["invalid_actions"]
        if int(task.split("-")[1]) % 2 == 0:
            assert out["won"]  # the solver's script
        invalid += n_invalid
    assert invalid >= 12  # every script sends invalid texts


def test_invalid_texts_get_the_env_invalid_action_observation():
    """Texts the env rejects (no tags, unknown move, empty, no content) reach ``env.step`` as the
    env's own invalid actions: its invalid-action observation, penalty and ``action_valid``
    false, and the rollout goes on to the step budget."""
    env = load_environment(ENV, num_examples=1, eval_split=None, reward="won")
    script = INVALID * 8
    client = ScriptedClient({"seed-0": script})
    row = env.get_dataset()[0]
    state = asyncio.run(env.rollout(row, client, "scripted"))
    ref = play_in_process("seed-0", script)
    assert state["error"] is None
    assert len(state["trajectory"]) == len(ref["rewards"]) == gym.make(ENV).unwrapped.max_steps
    infos = [step["extras"]["info"] for step in state["trajectory"]]
    assert infos == ref["infos"] and not any(info["action_valid"] for info in infos)
    assert [m["content"] for m in state["completion"] if m["role"] == "user"] == ref["turns"][1:]
    assert "Invalid action" in ref["turns"][1]
    assert state["invalid_actions"] == len(infos)
    assert "agentenvs_episode" not in state  # the rollout's env was closed and dropped


def test_a_timed_out_rollout_closes_its_env():
    """verifiers' ``timeout_seconds`` cuts a rollout whose model is slow: the rollout ends timed
    out, after the steps it took, and its env is closed and dropped all the same."""
    env = load_environment(ENV, num_examples=1, eval_split=None, timeout_seconds=0.5)
    client = ScriptedClient({"seed-0": [tagged("up")] * 20}, delay=0.2)
    state = asyncio.run(env.rollout(env.get_dataset()[0], client, "scripted"))
    assert state["timed_out"] and state["stop_condition"] == "timeout_reached"
    assert 0 < len(state["trajectory"]) < gym.make(ENV).unwrapped.max_steps
    assert "agentenvs_episode" not in state


def test_load_environment_through_verifiers_loader_and_bad_arguments():
    """``vf.load_environment`` finds our module's entry point and its arguments (``reward="won"``
    scores a won episode 1.0, not its return); a bad reward or split is an error naming it, and
    an unknown task id fails the rollout with the env's own error."""
    env = vf.load_environment(
        "agentenvs.integrations.verifiers_env",
        gym_id=ENV,
        num_examples=3,
        num_eval_examples=1,
        reward="won",
    )
    assert isinstance(env, AgentEnv) and len(env.get_dataset()) == 3
    script = script_for("seed-0", np.random.default_rng(0), gym.make(ENV).unwrapped.max_steps)
    row = env.get_dataset()[0]
    out = asyncio.run(env.run_rollout(row, ScriptedClient({"seed-0": script}), "scripted", {}))
    ref = play_in_process("seed-0", script)
    assert ref["won"] and sum(ref["rewards"]) != 1.0
    assert out["reward"] == 1.0 and out["metrics"]["invalid_actions"] == 1.0
    with pytest.raises(ValueError, match="reward must be one of"):
        AgentEnv(ENV, reward="steps")
    with pytest.raises(KeyError, match="unknown split"):
        AgentEnv(ENV, split="nope")
    bad = {**row, "info": {"task_id": "not-a-task"}}
    with pytest.raises(Exception, match="not-a-task"):
        asyncio.run(env.rollout(bad, ScriptedClient({"not-a-task": []}), "scripted"))


class ChatCompletionsScript(vf.OpenAIChatCompletionsClient):
    """verifiers' real OpenAI Chat Completions client (its response checks and parsing), fed
    OpenAI ``ChatCompletion`` objects from a script instead of an API: ``None`` is a reply with
    empty content, which the client refuses with ``EmptyModelResponseError``."""

    def __init__(self, script: list[str | None]) -> None:
        super().__init__(None)
        self.script = script

    async def get_native_response(self, prompt, model, sampling_args, tools=None, **kwargs):
        from openai.types.chat import ChatCompletion

        text = self.script[len(kwargs["state"]["trajectory"])]
        choice = {"index": 0, "finish_reason": "stop",
                  "message": {"role": "assistant", "content": text or ""}}  # fmt: skip
        return ChatCompletion.model_validate(
            {
                "id": "s",
                "created": 0,
                "model": model,
                "object": "chat.completion",
                "choices": [choice],
            }  # fmt: skip
        )

    async def close(self) -> None:
        return None


def test_an_empty_model_reply_is_an_invalid_action_not_an_abort():
    """An empty reply, which verifiers' own chat client raises ``EmptyModelResponseError`` for,
    is sent to the env as ``""``: its invalid-action observation and penalty, and the rollout
    goes on to win with the solver's moves; the reward is the in-process return."""
    with pytest.raises(vf.EmptyModelResponseError):  # what verifiers' client does with it
        asyncio.run(ChatCompletionsScript([None]).get_response(
            [vf.UserMessage(content="hi")], "m", {}, state={"trajectory": []}))  # fmt: skip
    env = load_environment(ENV, num_examples=1, eval_split=None)
    row = env.get_dataset()[0]
    script = script_for("seed-0", np.random.default_rng(0), gym.make(ENV).unwrapped.max_steps)
    script[1] = None  # the reply after the first move is empty
    state = asyncio.run(env.rollout(row, ChatCompletionsScript(script), "scripted"))
    ref = play_in_process("seed-0", script)
    assert state["error"] is None and state["won"] and ref["won"]
    infos = [step["extras"]["info"] for step in state["trajectory"]]
    assert infos == ref["infos"] and not infos[1]["action_valid"]
    assert [step["reward"] for step in state["trajectory"]] == ref["rewards"]
    assert ref["rewards"][1] < 0  # the usual invalid-action penalty
    assert state["episode_return"] == pytest.approx(sum(ref["rewards"]))


def test_load_environment_takes_a_task_count():
    """``load_environment`` lists 1,024 train and 64 test tasks by default (not all 65,535 of
    each split), ``num_examples`` and ``num_eval_examples`` set them, -1 is the whole split."""
    import time

    start = time.perf_counter()
    env = load_environment(ENV)
    assert time.perf_counter() - start < 3.0
    assert len(env.get_dataset()) == 1024 and len(env.get_eval_dataset()) == 64
    env = load_environment(ENV, num_examples=5, num_eval_examples=2)
    assert len(env.get_dataset()) == 5 and len(env.get_eval_dataset()) == 2


def test_over_the_network_the_prompt_and_turns_equal_in_process():
    """``url=``: each rollout plays a session of ``agentenvs serve --prompt reference
    --prompt-history 0``; verifiers' prompt, every user turn and every step equal the
    in-process env's (the server sends its prompt, so the remote policy sees the local chat)."""
    pytest.importorskip("openenv")
    from agentenvs.serve.openenv import serve_in_subprocess

    tasks = ["seed-0", "seed-1", "seed-2"]
    max_steps = gym.make(ENV).unwrapped.max_steps
    rng = np.random.default_rng(1)
    scripts = {task: script_for(task, rng, max_steps) for task in tasks}
    with serve_in_subprocess(ENV, timeout=60, prompt="reference", prompt_history_length=0) as (
        url,
        _,
    ):
        env = load_environment(ENV, num_examples=3, eval_split=None, url=url)
        results = asyncio.run(
            env.generate(
                env.get_dataset(), ScriptedClient(scripts), "scripted", state_columns=COLUMNS
            )
        )
    for out in results["outputs"]:
        task = out["info"]["task_id"]
        ref = play_in_process(task, scripts[task])
        assert out["error"] is None
        assert contents(out["prompt"]) == [("user", ref["turns"][0])]
        users = [m["content"] for m in out["completion"] if m["role"] == "user"]
        assert users == ref["turns"][1:]
        assert [step["extras"]["info"] for step in out["trajectory"]] == [
            {k: v for k, v in info.items() if k != "progress"} for info in ref["infos"]
        ]
        assert out["reward"] == pytest.approx(sum(ref["rewards"]))
