"""Any agentenvs env as a ``verifiers`` ``MultiTurnEnv`` (extra ``verifiers``; tested with
verifiers 0.3.1, the last release with the ``MultiTurnEnv`` API: 0.4.0 keeps only ``verifiers.v1``).

verifiers (Prime Intellect's environment library, what prime-rl trains on) loads an environment
module through its ``load_environment(**kwargs)``: ``vf.load_environment(
"agentenvs.integrations.verifiers_env", gym_id="agentenvs/Sokoban-v0")`` or, in Python,
:func:`load_environment` here, which returns an :class:`AgentEnv`:

* **Dataset.** One row per task id of ``split`` (``env.unwrapped.tasks.ids(split)``, the first
  ``num_examples``: :func:`load_environment` takes 1,024 by default, -1 for all): ``info =
  {"task_id": ...}`` and ``question`` the task id, the row's placeholder prompt (an env's first
  observation exists only after its reset). The eval dataset is ``eval_split`` the same way
  (``num_eval_examples``, 64 by default), where the env has that split.
* **One env per rollout.** ``setup_state`` makes a fresh ``gymnasium.make(gym_id, **env_kwargs)``
  (or, with ``url``, a session of the env ``agentenvs serve --prompt STYLE`` serves there),
  resets it on the row's task and replaces the rollout's prompt by the env's own
  (``agent_prompt(style)``; over the network the server's, the same chat): its example turns,
  then the user turn rendered from the first observation. A cleanup handler closes the env when
  the rollout ends, however it ends.
* **Turns.** ``env_response`` sends the text of the model's last message to ``env.step`` unchanged
  (the env parses ``<think>..</think><action>..</action>``; anything else gets the env's
  invalid-action observation) and answers with the next rendered user turn. An empty model reply
  (verifiers' clients raise ``EmptyModelResponseError`` for it) is sent as ``""``: an invalid
  action with the env's usual penalty, the rollout goes on. The step's reward goes
  to the trajectory step's ``reward``, its ``info`` to ``extras["info"]``. When the env terminates
  or truncates, that turn is the rollout's ``final_env_response`` and the rollout stops. Env calls
  run in a worker thread (``asyncio.to_thread``), so concurrent rollouts do not block each other.
* **Rubric.** :class:`EpisodeRubric`: reward = the episode return (sum of the env's step rewards),
  or ``info["won"]`` as 1.0 / 0.0 with ``reward="won"``; metrics ``won`` and ``invalid_actions``.
  The state keeps them as ``episode_return``, ``won`` and ``invalid_actions`` (JSON values, so
  ``state_columns`` can ask for them).

The chat of a rollout already holds every earlier turn, so the rendered user turn shows no
history by default (``history_length=0``). This module holds :func:`load_environment`,
:class:`AgentEnv`, :class:`EpisodeRubric` (its scores :func:`episode_return`, :func:`won`,
:func:`invalid_actions`) and :func:`message_text`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import gymnasium as gym
import verifiers as vf
from datasets import Dataset
from verifiers.utils.message_utils import normalize_messages

from agentenvs.core import AgentPrompt, EpisodeMemory, agent_prompt_for

__all__ = [
    "load_environment",
    "AgentEnv",
    "EpisodeRubric",
    "episode_return",
    "won",
    "invalid_actions",
    "message_text",
]

_EPISODE = "agentenvs_episode"  # state key of the rollout's live env (removed at cleanup)


@dataclass
class _Episode:
    """A rollout's env, its prompt and memory, and the observation/info it last gave."""

    env: gym.Env
    prompt: AgentPrompt
    observation: Any = None
    info: dict[str, Any] = field(default_factory=dict)
    memory: EpisodeMemory = field(default_factory=EpisodeMemory)


def message_text(message: Any) -> str:
    """The text of a chat message (a ``vf`` message or a dict): its ``content`` string, or its
    text parts joined; ``""`` for none (the env then answers with its invalid-action observation).

    >>> message_text({"role": "assistant", "content": [{"type": "text", "text": "<action>up"},
    ...                                                 {"type": "text", "text": "</action>"}]})
    '<action>up</action>'
    >>> message_text({"role": "assistant", "content": None}), message_text(None)
    ('', '')
    """
    content = None if message is None else message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text") or "" for part in content if part.get("type") == "text")


def episode_return(state: vf.State) -> float:
    """The sum of the env's step rewards (a reward function of verifiers' ``Rubric``)."""
    return float(state.get("episode_return", 0.0))


def won(state: vf.State) -> float:
    """1.0 when the env's last ``info["won"]`` is true, else 0.0."""
    return float(state.get("won", False))


def invalid_actions(state: vf.State) -> float:
    """How many steps the env reported ``info["action_valid"]`` false."""
    return float(state.get("invalid_actions", 0))


class EpisodeRubric(vf.Rubric):
    """The env's own outcome as the rollout's reward: ``reward="return"`` (default) scores the
    episode return, ``"won"`` scores ``info["won"]`` (1.0 or 0.0); ``won`` and
    ``invalid_actions`` are logged as metrics (weight 0)."""

    def __init__(self, reward: str = "return", **kwargs: Any) -> None:
        scores = {"return": episode_return, "won": won}
        if reward not in scores:
            raise ValueError(f"reward must be one of {sorted(scores)}, got {reward!r}")
        super().__init__(funcs=[scores[reward]], weights=[1.0], **kwargs)
        if reward != "won":
            self.add_metric(won)
        self.add_metric(invalid_actions)


class AgentEnv(vf.MultiTurnEnv):
    """A ``vf.MultiTurnEnv`` playing ``gym_id`` (see the module doc).

    Args:
        gym_id: a registered env id, e.g. ``"agentenvs/Sokoban-v0"``.
        env_kwargs: keyword arguments of ``gymnasium.make`` (each rollout's env and the probe).
        split, eval_split: the task splits of the dataset and the eval dataset (an
            ``eval_split`` the env lacks gives no eval dataset; a ``split`` it lacks is an error).
        num_examples, num_eval_examples: the first this many task ids of each split (-1: all).
        style, history_length: the env's prompt (``agent_prompt(style, history_length)``).
        reward: ``"return"`` or ``"won"`` (:class:`EpisodeRubric`).
        url, token: play each rollout on the env ``agentenvs serve`` serves at ``url`` (its
            ``--prompt`` and ``--prompt-history`` must be ``style`` and ``history_length``; its
            kwargs are the server's: ``env_kwargs`` only reach the local env listing the tasks).
        **kwargs: ``vf.MultiTurnEnv``'s own (``max_turns``, ``timeout_seconds``, ...).
    """

    def __init__(
        self,
        gym_id: str,
        *,
        env_kwargs: dict[str, Any] | None = None,
        split: str = "train",
        eval_split: str | None = "test",
        num_examples: int = -1,
        num_eval_examples: int = -1,
        style: str = "reference",
        history_length: int | None = 0,
        reward: str = "return",
        url: str | None = None,
        token: str | None = None,
        **kwargs: Any,
    ) -> None:
        self.gym_id, self.url, self.token = gym_id, url, token
        self.env_kwargs = dict(env_kwargs or {})
        self.style, self.history_length = style, history_length
        rubric = kwargs.pop("rubric", None) or EpisodeRubric(reward)  # a bad reward fails first
        probe = gym.make(gym_id, **self.env_kwargs)
        try:
            tasks = probe.unwrapped.tasks  # type: ignore[attr-defined]  # our text envs' task panel
            dataset = _task_dataset(tasks.ids(split), num_examples)
            eval_dataset = None
            if eval_split is not None and _has_split(tasks, eval_split):
                eval_dataset = _task_dataset(tasks.ids(eval_split), num_eval_examples)
        finally:
            probe.close()
        super().__init__(
            dataset=dataset,
            eval_dataset=eval_dataset,
            rubric=rubric,
            **kwargs,
        )

    def _make_env(self) -> gym.Env:
        if self.url is None:
            return gym.make(self.gym_id, **self.env_kwargs)
        from agentenvs.serve import make_remote

        return make_remote(self.url, token=self.token)

    async def setup_state(self, state: vf.State) -> vf.State:
        """Make and reset this rollout's env on the row's task; set the prompt to the env's."""
        env = await asyncio.to_thread(self._make_env)
        prompt = agent_prompt_for(env, self.style, self.history_length)
        episode = _Episode(env, prompt)
        state[_EPISODE] = episode  # before the reset, so cleanup closes it if the reset fails
        task_id = state["info"]["task_id"]
        episode.observation, episode.info = await asyncio.to_thread(
            env.reset, options={"task_id": task_id}
        )
        state.update(episode_return=0.0, won=bool(episode.info.get("won")), invalid_actions=0)
        state["prompt"] = normalize_messages(
            prompt.messages(episode.memory, episode.observation, episode.info)
        )
        return state

    async def get_model_response(
        self, state: vf.State, prompt: vf.Messages, *args: Any, **kwargs: Any
    ) -> vf.Response:
        """verifiers' model call; an empty reply (``EmptyModelResponseError``) becomes an empty
        assistant message, which the env then scores as an invalid action."""
        try:
            return await super().get_model_response(state, prompt, *args, **kwargs)
        except vf.EmptyModelResponseError:
            message = vf.ResponseMessage(content="", finish_reason="stop", is_truncated=False)
            return vf.Response(
                id="agentenvs-empty",
                created=int(time.time()),
                model=state["model"],
                message=message,
            )

    async def env_response(
        self, messages: vf.Messages, state: vf.State, **kwargs: Any
    ) -> vf.Messages:
        """Step the env with the model's last message; the next user turn (or the final one)."""
        episode: _Episode = state[_EPISODE]
        completion = state["trajectory"][-1]["completion"]
        action = message_text(completion[-1] if completion else None)
        before = episode.observation
        observation, reward, terminated, truncated, info = await asyncio.to_thread(
            episode.env.step, action
        )
        episode.memory.record(before, episode.prompt.project(action))
        episode.observation, episode.info = observation, info
        step = state["trajectory"][-1]
        step["reward"] = float(reward)
        step["extras"]["info"] = info
        state["episode_return"] += float(reward)
        state["won"] = bool(info.get("won"))
        state["invalid_actions"] += int(not info.get("action_valid", True))
        turn = [vf.UserMessage(content=episode.prompt.render(episode.memory, observation, info))]
        if terminated or truncated:
            state["final_env_response"] = turn
        return turn

    @vf.cleanup
    async def close_env(self, state: vf.State) -> None:
        """Close the rollout's env (runs however the rollout ended)."""
        episode = state.pop(_EPISODE, None)
        if episode is not None:
            await asyncio.to_thread(episode.env.close)


def _has_split(tasks: Any, split: str) -> bool:
    try:
        tasks.resolve(split)
    except KeyError:
        return False
    return True


def _task_dataset(ids: Any, n: int) -> Dataset:
    """Rows ``{"question": id, "info": {"task_id": id}}`` for the first ``n`` ids (-1: all)."""
    ids = list(ids if n < 0 else islice(ids, n))
    return Dataset.from_dict({"question": ids, "info": [{"task_id": i} for i in ids]})


def load_environment(
    gym_id: str = "agentenvs/Sokoban-v0",
    num_examples: int = 1024,
    num_eval_examples: int = 64,
    **kwargs: Any,
) -> AgentEnv:
    """verifiers' entry point: :class:`AgentEnv` ``(gym_id, num_examples=..., **kwargs)``, on
    the first ``num_examples`` train and ``num_eval_examples`` test tasks (-1: every task of the
    split; Sokoban's hold 65,535, which verifiers formats in seconds).

    (The argument is ``gym_id``, not ``env_id``: ``vf.load_environment`` takes ``env_id`` for
    the module's name.)
    """
    return AgentEnv(
        gym_id, num_examples=num_examples, num_eval_examples=num_eval_examples, **kwargs
    )
