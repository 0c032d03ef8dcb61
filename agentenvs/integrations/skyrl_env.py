"""Any registered text env as a SkyRL-gym text env (extra ``skyrl``; tested with skyrl-gym 0.4.0).

:class:`SkyRLTextEnv` is a ``skyrl_gym.envs.base_text_env.BaseTextEnv`` running one
``gymnasium.make(env_id)``, or one env served by ``agentenvs serve`` (``env_config["url"]``);
:func:`register` adds every ``agentenvs/*`` text id (:func:`text_env_ids`) to SkyRL-gym's
registry, so ``skyrl_gym.make("agentenvs/Sokoban-v0", env_config=..., extras=...)`` (what
SkyRL's generator calls, with the dataset row's fields as ``extras``) gives one.

SkyRL-gym's contract, as this class fills it:

* ``init(prompt)`` resets the env and returns ``(prompt + the env's agent prompt, {"info":
  info})``: the env's ``agent_prompt(style)`` chat (its example turns, then the user turn rendered
  from the first observation), what a local learner shows; ``prompt=None`` in ``env_config``: the
  bare observation as one user message. ``extras`` may name the task (``task_id``), the reset
  seed (``seed``) and ``gym.make`` keyword arguments (``env_kwargs``).
* ``step(response)`` sends the response text to ``env.step`` and returns a
  ``BaseTextEnvStepOutput``: ``observations`` (the next user turn, rendered by the prompt, as one
  user message; empty once done), ``reward`` (the env's, per turn), ``done`` (terminated or
  truncated) and ``metadata``: ``info`` (the env's ``info``: ``state_key``, ``won``,
  ``action_valid``, ..., what our credit methods need per turn), ``terminated``, ``truncated``.
* ``max_turns`` is the env's ``max_steps`` where it has one (the env truncates there itself).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator
from skyrl_gym.envs import registration
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType

from agentenvs.core import AgentPrompt, EpisodeMemory, TextAgentEnv, agent_prompt_for

__all__ = ["SkyRLTextEnv", "register", "text_env_ids"]


class SkyRLTextEnv(BaseTextEnv):
    """One agentenvs env behind SkyRL-gym's ``BaseTextEnv`` (see the module docstring).

    Args:
        env_config: SkyRL's per-env config; read: ``env_kwargs`` (a dict of ``gym.make``
            kwargs), ``prompt`` (the prompt style, default ``"reference"``; ``None``: bare
            observations), ``history_length`` (past steps a turn shows, default 0: the chat
            holds them), ``url`` and ``token`` (play the env ``agentenvs serve --prompt STYLE``
            serves there instead of a local one; its kwargs are the server's).
        extras: the dataset row's fields: ``task_id``, ``seed``, ``env_kwargs`` (all optional).
        env_id: the registered id (:func:`register` sets it per SkyRL id).
    """

    def __init__(
        self, env_config: Any = None, extras: dict[str, Any] | None = None, env_id: str = ""
    ) -> None:
        super().__init__()
        if not env_id:
            raise ValueError("SkyRLTextEnv needs env_id (skyrl_gym.make an agentenvs/* id)")
        config, extras = dict(env_config or {}), dict(extras or {})
        kwargs = {**dict(config.get("env_kwargs", {})), **extras.get("env_kwargs", {})}
        if config.get("url"):
            if kwargs:
                raise ValueError(f"env_kwargs {kwargs} with a url: the server sets them")
            from agentenvs.serve import make_remote

            self.env: gym.Env = make_remote(config["url"], token=config.get("token"))
        else:
            self.env = gym.make(env_id, **kwargs)
        style = config.get("prompt", "reference")
        self.prompt: AgentPrompt | None = (
            None
            if style is None
            else agent_prompt_for(self.env, style, config.get("history_length", 0))
        )
        self.task_id = extras.get("task_id")
        self.seed = extras.get("seed")
        self.max_turns = int(getattr(self.env.unwrapped, "max_steps", 0) or 1 << 30)

    def _turn(self, observation: Any, info: dict[str, Any]) -> str:
        if self.prompt is None:
            return str(observation)
        return self.prompt.render(self.memory, observation, info)

    def init(self, prompt: ConversationType) -> tuple[ConversationType, dict[str, Any]]:
        """Reset (``extras``' task and seed); the env's prompt follows ``prompt``."""
        options = None if self.task_id is None else {"task_id": self.task_id}
        obs, info = self.env.reset(seed=self.seed, options=options)
        self.turns, self.memory, self.observation = 0, EpisodeMemory(), obs
        examples = [] if self.prompt is None else list(self.prompt.examples)
        return [*(prompt or []), *examples, {"role": "user", "content": self._turn(obs, info)}], {
            "info": info
        }

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """One turn: ``env.step(action)``; see the module docstring for the fields."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.turns += 1
        if self.prompt is not None:
            self.memory.record(self.observation, self.prompt.project(action))
        self.observation = obs
        done = bool(terminated or truncated)
        return BaseTextEnvStepOutput(
            observations=[] if done else [{"role": "user", "content": self._turn(obs, info)}],
            reward=float(reward),
            done=done,
            metadata={"info": info, "terminated": bool(terminated), "truncated": bool(truncated)},
        )

    def close(self) -> None:
        self.env.close()


def text_env_ids() -> list[str]:
    """The ``agentenvs/*`` ids with text observations and text actions: their entry point is a
    :class:`~agentenvs.core.TextAgentEnv` and their registered kwargs add no image (``visual``).
    ``SokobanDiscrete-v0`` (``Discrete(4)`` actions) and ``SokobanVisual-v0`` are not."""
    import agentenvs.registration

    ids = []
    for env_id in agentenvs.registration.ENV_IDS:
        spec = gym.spec(env_id)
        creator = load_env_creator(spec.entry_point) if isinstance(spec.entry_point, str) else None
        text = isinstance(creator, type) and issubclass(creator, TextAgentEnv)
        if text and not spec.kwargs.get("visual"):
            ids.append(env_id)
    return ids


def register() -> list[str]:
    """Add every text id (:func:`text_env_ids`) to SkyRL-gym's registry (idempotent); returns
    them."""
    ids = text_env_ids()
    for env_id in ids:
        if env_id not in registration.registry:
            registration.register(
                id=env_id, entry_point=f"{__name__}:SkyRLTextEnv", kwargs={"env_id": env_id}
            )
    return ids
