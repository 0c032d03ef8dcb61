"""The base class of agentenvs' text environments.

This module holds :class:`TextAgentEnv` (parse, penalise, count, keep the ``info`` contract).

A subclass implements the game through six hooks: ``_load_task``, ``_observation``, ``_to_command``,
``_apply``, ``_state_key`` and ``_admissible_actions`` (plus ``_extra_info`` if it has more to say,
and ``_progress`` for its privileged task progress).
The base class does the rest the same way for every env:

* ``reset(seed=..., options={"task_id": ...})`` picks the task: an explicit ``task_id`` wins, then
  the task stream (``task_stream_seed``, which group-vector envs set so a block of sub-envs walks the
  same task sequence), then the env's seeded ``np_random`` over the configured split.
* ``step(text)`` parses ``text`` (``action_format="tagged"``: the ``<think>/<action>`` convention of
  :func:`~agentenvs.core.parsing.parse_action`; ``"plain"``: the whole text is the command). An
  invalid action never raises: it earns ``-invalid_action_penalty``, leaves the state unchanged, counts
  toward ``max_steps`` (so every episode ends) and the next observation says why.
* ``verl_fallback_chars`` (``None``, or the count an env in ``compat="verl-agent"`` sets): parse with
  the reference stack's projection instead (:func:`~agentenvs.core.parsing.parse_action_verl`):
  without action tags the last ``verl_fallback_chars`` characters are executed anyway; a response
  whose format is wrong still runs, but is charged the penalty and reported ``action_valid=False``.
* ``terminated`` means won (an env whose episodes can end otherwise, e.g. WebShop's purchase,
  overrides ``_terminated``); ``truncated`` means ``max_steps`` reached without terminating. Stepping a
  finished episode raises :class:`gymnasium.error.ResetNeeded`.
* Every ``info`` has ``won``, ``action_valid``, ``invalid_reason``, ``state_key``, ``action_key``
  (the parsed command of a valid action, the signature credit methods match actions by; ``None``
  at reset and for an invalid action), ``task_id``, ``admissible_actions`` and ``step`` (steps
  taken so far), and ``progress`` where the env's
  ``_progress`` hook gives one: how far the current state is toward completing the task, a float
  in ``[0, 1]`` computed from privileged state, 1.0 exactly when won (docs/credit.md, section 11).

The agent-facing hook: ``agent_prompt(style="reference", history_length=None)`` returns the env's
:class:`~agentenvs.core.prompting.AgentPrompt`, everything an LLM learner needs to play the env:
the user message of each step (instructions, action syntax, how the observation and the history
are shown), example turns, the assistant's response prefix, the suggested response budget and stop
strings, and the projection of a response that the episode memory stores. ``style`` is one of
:data:`~agentenvs.core.prompting.PROMPT_STYLES` (``"reference"``: the reference stack's text;
``"compact"``: a short prompt for small models); any other value raises ``ValueError``.
``history_length=None`` means the env's default. This is the contract a new env implements to be
trainable by the LLM learner; the base implementation returns the generic prompts
(:func:`~agentenvs.core.prompting.generic_prompt`), and an env without the method (one not built on
this class) gets them from the learner. Through ``gym.make``'s wrappers, call it as
``env.get_wrapper_attr("agent_prompt")("compact")`` or
:func:`~agentenvs.core.prompting.agent_prompt_for`.

>>> from agentenvs.sokoban.env import SokobanEnv
>>> type(SokobanEnv().agent_prompt("compact")).__name__
'CompactSokobanPrompt'
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Generic, TypeVar

import gymnasium as gym
import numpy as np
from gymnasium.error import ResetNeeded

from agentenvs.core.parsing import ParsedAction, parse_action, parse_action_verl
from agentenvs.core.progress import check_progress
from agentenvs.core.prompting import AgentPrompt, generic_prompt
from agentenvs.core.tasks import TaskPanel

__all__ = ["TextAgentEnv"]

ObsType = TypeVar("ObsType")


class TextAgentEnv(gym.Env[ObsType, str], Generic[ObsType]):
    """Base class: a text-action env with task panels, a format rule and the info contract.

    Args:
        tasks: the env's task panel.
        max_steps: episode budget; every step, valid or not, counts.
        split: the panel split that ``reset`` draws from when no task id is given.
        invalid_action_penalty: reward of an invalid action is ``-invalid_action_penalty``.
        action_format: ``"tagged"`` (``<think>..</think><action>..</action>``) or ``"plain"``.
        require_think: with ``"tagged"``, demand the think block.
        render_mode: ``None`` or ``"ansi"`` (subclasses may add more).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}
    _action_key: str | None = None  # the last valid action's parsed command (info["action_key"])
    #: The reference stack's projection (see the module doc); ``None`` = agentenvs' own rule.
    verl_fallback_chars: int | None = None
    #: What the env is about, in a sentence or two: the generic prompts show it (an env with its
    #: own prompt may ignore it); ``info["task"]`` (optional) adds the current task's goal.
    description: str = ""

    def __init__(
        self,
        *,
        tasks: TaskPanel,
        max_steps: int,
        split: str = "train",
        invalid_action_penalty: float = 0.1,
        action_format: str = "tagged",
        require_think: bool = True,
        render_mode: str | None = None,
    ) -> None:
        if action_format not in ("tagged", "plain"):
            raise ValueError(f"action_format must be 'tagged' or 'plain', got {action_format!r}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}"
            )
        if not isinstance(tasks, TaskPanel):
            raise TypeError(
                f"tasks must be an agentenvs.core.TaskPanel (e.g. TaskPanel({{'train': ids}})), "
                f"got {type(tasks).__name__}"
            )
        tasks.ids(split)  # validates the split name
        self.tasks = tasks
        self.max_steps = max_steps
        self.split = split
        self.invalid_action_penalty = float(invalid_action_penalty)
        self.action_format = action_format
        self.require_think = require_think
        self.render_mode = render_mode
        self.task_id: str | None = None
        self._task_stream: np.random.Generator | None = None
        self._task_stream_seed: int | None = None
        self._steps = 0
        self._done = True
        self._won = False
        self._format_ok, self._format_reason = True, ""

    # -- task selection --------------------------------------------------------------------------
    @property
    def task_stream_seed(self) -> int | None:
        """Seed of the task stream; envs given the same seed draw the same task sequence."""
        return self._task_stream_seed

    @task_stream_seed.setter
    def task_stream_seed(self, seed: int | None) -> None:
        self._task_stream_seed = seed
        self._task_stream = None if seed is None else np.random.default_rng(seed)

    @property
    def rng_state(self) -> dict[str, Any]:
        """Everything random that carries from one episode to the next: the bit-generator states
        of ``np_random`` and of the task stream (plain dicts, picklable). Setting it back makes
        the env draw the same tasks and samples again; a remote worker that replays an episode
        after a crash relies on it (:mod:`agentenvs.workers`)."""
        stream = self._task_stream
        return {
            "np_random": None if self._np_random is None else self._np_random.bit_generator.state,
            "task_stream_seed": self._task_stream_seed,
            "task_stream": None if stream is None else stream.bit_generator.state,
        }

    @rng_state.setter
    def rng_state(self, state: dict[str, Any]) -> None:
        self.task_stream_seed = state["task_stream_seed"]
        if state["task_stream"] is not None:
            assert self._task_stream is not None  # made from task_stream_seed just above
            self._task_stream.bit_generator.state = state["task_stream"]
        if state["np_random"] is not None:
            bit_generator = getattr(np.random, state["np_random"]["bit_generator"])()
            bit_generator.state = state["np_random"]
            self._np_random = np.random.Generator(bit_generator)

    def _choose_task(self, options: dict[str, Any] | None) -> str:
        task_id = (options or {}).get("task_id")
        if task_id is not None:
            if task_id not in self.tasks:
                raise ValueError(f"unknown task id {task_id!r} for {type(self).__name__}")
            return str(task_id)
        ids = self.tasks.ids((options or {}).get("split", self.split))
        if len(ids) == 0:
            raise ValueError(f"split {self.split!r} has no tasks")
        rng = self._task_stream if self._task_stream is not None else self.np_random
        return ids[int(rng.integers(len(ids)))]

    # -- Gymnasium API -----------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        """Start the task from ``options["task_id"]`` (or a drawn one); see the module doc."""
        super().reset(seed=seed)
        self.task_id = self._choose_task(options)
        self._load_task(self.task_id)
        self._steps, self._done, self._won = 0, False, False
        self._action_key = None
        return self._observation(""), self._info(True, "")

    def step(self, action: str) -> tuple[ObsType, float, bool, bool, dict[str, Any]]:
        if self._done:
            raise ResetNeeded("the episode is over; call reset() before step()")
        parsed = self._parse(action)
        command = None
        if parsed.valid:
            assert parsed.command is not None  # a valid action names its command
            command, problem = self._to_command(parsed.command)
            if command is None:
                parsed = ParsedAction(parsed.command, False, problem)
        self._action_key = parsed.command if parsed.valid else None
        if parsed.valid:
            reward, self._won = self._apply(command)
            if not self._format_ok:  # reference projection: it ran, but the format was wrong
                reward -= self.invalid_action_penalty
        else:
            reward = -self.invalid_action_penalty
        self._steps += self._counts(parsed, command)
        terminated = self._terminated()
        truncated = not terminated and self._steps >= self.max_steps
        self._done = terminated or truncated
        feedback = "" if parsed.valid else f"Invalid action: {parsed.reason}."
        return (
            self._observation(feedback),
            float(reward),
            terminated,
            truncated,
            self._info(parsed.valid, parsed.reason),
        )

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._render_text()
        return None

    # -- agent-facing hook -------------------------------------------------------------------------
    def agent_prompt(
        self, style: str = "reference", history_length: int | None = None
    ) -> AgentPrompt:
        """The env's prompt for an LLM agent in ``style`` (see the module doc); generic here,
        showing :attr:`description` and ``info["task"]``.

        ``history_length=None`` keeps the env's default; an unknown ``style`` raises ``ValueError``.
        """
        return generic_prompt(style, history_length, self.description)

    # -- shared helpers ----------------------------------------------------------------------------
    def _parse(self, action: object) -> ParsedAction:
        self._format_ok, self._format_reason = True, ""
        if self.verl_fallback_chars is not None:
            parsed = parse_action_verl(action, fallback_chars=self.verl_fallback_chars)
            self._format_ok, self._format_reason = parsed.valid, parsed.reason
            return parsed if parsed.command is None else ParsedAction(parsed.command, True)
        if self.action_format == "plain":
            if not isinstance(action, str):
                return ParsedAction(
                    None, False, f"the action must be text, got {type(action).__name__}"
                )
            command = action.strip()
            return (
                ParsedAction(command, True)
                if command
                else ParsedAction(None, False, "empty action")
            )
        return parse_action(action, require_think=self.require_think)

    def _counts(self, parsed: ParsedAction, command: Any) -> int:
        """Steps this action consumes from the budget: 1 (a compat mode may waive some)."""
        return 1

    def _info(self, action_valid: bool, reason: str) -> dict[str, Any]:
        if not self._format_ok:
            action_valid, reason = False, self._format_reason
        info = {
            "won": bool(self._won),
            "action_valid": bool(action_valid),
            "invalid_reason": reason,
            "state_key": self._state_key(),
            "action_key": self._action_key if action_valid else None,
            "task_id": self.task_id,
            "admissible_actions": self._admissible_actions(),
            "step": self._steps,
        }
        progress = self._progress()
        if progress is not None:
            info["progress"] = check_progress(progress)
        info.update(self._extra_info())
        return info

    # -- hooks for subclasses ----------------------------------------------------------------------
    def _load_task(self, task_id: str) -> None:
        """Build the initial state of ``task_id``; deterministic in ``task_id`` alone."""
        raise NotImplementedError

    def _observation(self, feedback: str) -> ObsType:
        """The observation of the current state; ``feedback`` (may be empty) explains an invalid action."""
        raise NotImplementedError

    def _to_command(self, text: str) -> tuple[Any, str]:
        """Map parsed action text to an engine command: ``(command, "")`` or ``(None, reason)``."""
        return text, ""

    def _apply(self, command: Any) -> tuple[float, bool]:
        """Execute a valid command; return ``(reward, won)``."""
        raise NotImplementedError

    def _terminated(self) -> bool:
        """Whether the episode has ended by itself (default: the agent won)."""
        return self._won

    def _state_key(self) -> Hashable:
        """Hashable, history-free identity of the current state."""
        raise NotImplementedError

    def _admissible_actions(self) -> list[str]:
        """Commands that are admissible now (may be empty when the env has no such list)."""
        return []

    def _progress(self) -> float | None:
        """Privileged progress of the current state in ``[0, 1]`` (1.0 exactly when won), or
        ``None`` (the default) to leave ``info["progress"]`` out."""
        return None

    def _extra_info(self) -> dict[str, Any]:
        """Env-specific ``info`` entries."""
        return {}

    def _render_text(self) -> str:
        """Text rendering for ``render_mode="ansi"``."""
        obs = self._observation("")
        return obs if isinstance(obs, str) else str(obs)
