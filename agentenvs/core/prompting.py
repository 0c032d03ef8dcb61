"""Agent prompts: how an env asks an LLM agent for its next action (the ``agent_prompt`` hook).

This module holds:

* :class:`EpisodeMemory` - the observation/action pairs of one episode (verl-agent's
  ``SimpleMemory``), rendered as ``[Observation k: '<obs>', Action k: '<act>']`` lines.
* :class:`AgentPrompt` - the protocol an env's prompt follows (a dataclass base class):
  ``render(memory, observation, info) -> str`` (the user message of the current step),
  ``project(response) -> str`` (what the memory stores for an action), ``examples`` (chat turns put
  before the user turn), ``response_prefix`` (text the assistant turn starts with, e.g.
  ``<think>``; it is part of the prompt tokens and of the text sent to the env),
  ``max_new_tokens`` (the env's suggested response budget per step) and ``stop`` (strings after
  which generation may stop; the stop string belongs to the response); ``answer(command)`` is the
  generated text (after the response prefix) that the env reads as ``command``;
  ``images(memory, observation, info)`` (the step's images, one per :data:`IMAGE_PLACEHOLDER` in
  the rendered chat, in order; none for a text env).
* :class:`GenericPrompt` (the reference style for any text env) and :class:`CompactGenericPrompt`
  (a short one for small models), which :meth:`~agentenvs.core.TextAgentEnv.agent_prompt` returns
  for an env that has no prompt of its own; :func:`generic_prompt`, :func:`agent_prompt_for` (the
  prompt of any env, wrapped or not) and :data:`PROMPT_STYLES`.

A learner drives a prompt like this, one memory per episode::

    prompt = env.agent_prompt("reference")        # or agent_prompt_for(env, "reference")
    memory = EpisodeMemory()
    observation, info = env.reset()
    while True:
        messages = [*prompt.examples, {"role": "user", "content": prompt.render(memory, observation, info)}]
        response = prompt.response_prefix + generate(messages, prompt.response_prefix,
                                                     prompt.max_new_tokens, prompt.stop)
        memory.record(observation, prompt.project(response))
        observation, reward, terminated, truncated, info = env.step(response)
        if terminated or truncated:
            break

The prompts assume the env's default ``action_format="tagged"`` (``<think>..</think><action>..
</action>``). Nothing here imports a model library: prompts are plain text.

>>> memory = EpisodeMemory()
>>> p = GenericPrompt()
>>> text = p.render(memory, "You see a door.", {"admissible_actions": ["open door", "look"]})
>>> print(text.splitlines()[2])
You see a door.
>>> text.splitlines()[3:5]
["Your admissible actions are: ['open door',", " 'look',]."]
>>> memory.record("You see a door.", p.project("<think>..</think><action>Open Door</action>"))
>>> memory.fetch(2)
("[Observation 1: 'You see a door.', Action 1: 'open door']", 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentenvs.core.parsing import parse_action_verl

__all__ = [
    "PROMPT_STYLES",
    "IMAGE_PLACEHOLDER",
    "THINK_ACTION",
    "EpisodeMemory",
    "AgentPrompt",
    "GenericPrompt",
    "CompactGenericPrompt",
    "check_prompt_style",
    "generic_prompt",
    "agent_prompt_for",
    "task_lines",
    "format_admissible",
    "recent_moves",
]

#: The prompt styles every env's ``agent_prompt`` accepts: ``"reference"`` (the reference stack's
#: text, for large models) and ``"compact"`` (short prompts a small model on CPU can follow).
PROMPT_STYLES = ("reference", "compact")

#: Where an image goes in a prompt's text (verl-agent's visual templates use the same mark). A
#: vision-language learner replaces each one with its model's image tokens, in order, for the
#: images of :meth:`AgentPrompt.images`.
IMAGE_PLACEHOLDER = "<image>"

#: The reference stack's think/action instruction (verl-agent's prompts end with it).
THINK_ACTION = (
    "You should first reason step-by-step about the current situation. This reasoning process "
    "MUST be enclosed within <think> </think> tags. \n"
    "Once you've finished your reasoning, you should choose an admissible action for current step "
    "and present it within <action> </action> tags."
)


@dataclass
class EpisodeMemory:
    """Observation/action pairs of one episode, oldest first (verl-agent's ``SimpleMemory``).

    >>> m = EpisodeMemory()
    >>> m.record("room", "up"); m.record("room 2", "left")
    >>> len(m), m.fetch(1)
    (2, ("[Observation 2: 'room 2', Action 2: 'left']", 1))
    """

    records: list[tuple[str, str]] = field(default_factory=list)

    def record(self, observation: Any, action: str) -> None:
        """Store the observation an action was taken in and the action's projected name (of a
        visual observation ``{"text": ..., "image": ...}``, its text: history is text)."""
        if isinstance(observation, dict) and "text" in observation:
            observation = observation["text"]
        self.records.append((str(observation), action))

    def __len__(self) -> int:
        return len(self.records)

    def fetch(self, history_length: int) -> tuple[str, int]:
        """The last ``history_length`` pairs as text lines, and how many there are."""
        if history_length <= 0:
            return "", 0
        start = max(0, len(self.records) - history_length)
        lines = [
            f"[Observation {start + j + 1}: '{obs}', Action {start + j + 1}: '{act}']"
            for j, (obs, act) in enumerate(self.records[start:])
        ]
        return "\n".join(lines), len(lines)


@dataclass
class AgentPrompt:
    """Base class and protocol of an env's prompt (what ``agent_prompt`` returns).

    Attributes:
        history_length: how many past observation/action pairs ``render`` shows.
        examples: chat turns (``{"role": ..., "content": ...}``) put before the user turn.
        response_prefix: text the assistant turn starts with; part of the prompt tokens and of
            the text sent to the env (so the env sees ``response_prefix + generated``).
        max_new_tokens: the env's suggested response budget per step, in tokens (verl-agent: 512).
        stop: strings after which generation may stop (the stop string stays in the response).

    A subclass implements :meth:`render`; :meth:`project` defaults to the reference stack's
    projection of a tagged response (the lower-cased ``<action>`` content) and :meth:`answer` to
    the tagged format with an empty thought.
    """

    history_length: int = 2
    examples: tuple[dict[str, str], ...] = ()
    response_prefix: str = ""
    max_new_tokens: int = 512
    stop: tuple[str, ...] = ()

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        """The user message for the current step (``info`` is the env's latest ``info``)."""
        raise NotImplementedError

    def project(self, response: str) -> str:
        """What the memory stores for ``response`` (the env's own projection of the action).

        >>> AgentPrompt().project("<think>.</think><action>Open Door</action>")
        'open door'
        """
        return parse_action_verl(response, fallback_chars=30).command or ""

    def answer(self, command: str) -> str:
        """The text to generate after :attr:`response_prefix` so that the env reads ``command``
        (the action syntax, for format-only supervised warm starts and tests).

        >>> CompactGenericPrompt().answer("open door")  # its response prefix is "<think>"
        '</think><action>open door</action>'
        """
        text = f"<think></think><action>{command}</action>"
        return text.removeprefix(self.response_prefix)

    def messages(
        self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]
    ) -> list[dict[str, str]]:
        """The chat for the current step: :attr:`examples`, then the rendered user turn."""
        return [*self.examples, {"role": "user", "content": self.render(memory, observation, info)}]

    def images(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> list[Any]:
        """The current step's images, uint8 ``(H, W, 3)`` arrays, one per :data:`IMAGE_PLACEHOLDER`
        of :meth:`messages` in order; ``[]`` (the default) for a text prompt.

        >>> AgentPrompt().images(EpisodeMemory(), "a door", {})
        []
        """
        return []


def format_admissible(info: dict[str, Any]) -> str:
    """``info["admissible_actions"]`` without ``help``, in the reference layout ``'a',\\n 'b',``.

    >>> format_admissible({"admissible_actions": ["look", "help", "go north"]})
    "'look',\\n 'go north',"
    """
    actions = [a for a in info.get("admissible_actions") or [] if a != "help"]
    return "\n ".join(f"'{a}'," for a in actions)


def task_lines(description: str, info: dict[str, Any]) -> list[str]:
    """The task part of a generic prompt: the env's ``description`` and the current task's goal
    ``info["task"]`` (each where given and not empty).

    >>> task_lines("Push every box onto a target.", {"task": "Level 3."})
    ['Push every box onto a target.', 'Your task: Level 3.']
    """
    lines = [description.strip()] if description and description.strip() else []
    goal = info.get("task")
    if isinstance(goal, str) and goal.strip():
        lines.append(f"Your task: {goal.strip()}")
    return lines


@dataclass
class GenericPrompt(AgentPrompt):
    """Any text env, reference style: the task, observation, history, admissible actions, the
    instruction. ``description``: the env's task description (its ``description`` attribute,
    docs/custom-env.md); ``info["task"]``, where the env reports it, adds the current goal."""

    stop: tuple[str, ...] = ("</action>",)
    description: str = ""

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        history, shown = memory.fetch(self.history_length)
        parts = ["You are an expert agent operating in a text environment."]
        parts += task_lines(self.description, info)
        if shown:
            parts.append(
                f"Prior to this step, you have already taken {len(memory)} step(s). Below are the "
                f"most recent {shown} observations and the corresponding actions you took: {history}"
            )
        parts.append(f"Your current observation is:\n{observation}")
        if info.get("admissible_actions"):
            parts.append(f"Your admissible actions are: [{format_admissible(info)}].")
        parts.append(f"\nNow it's your turn to take an action.\n{THINK_ACTION}\n")
        return "\n".join(parts)


@dataclass
class CompactGenericPrompt(AgentPrompt):
    """Any text env, compact style: the task (as :class:`GenericPrompt`), observation, admissible
    actions, last moves, answer format.

    >>> p = CompactGenericPrompt()
    >>> m = EpisodeMemory(); m.record("start", "look")
    >>> print(p.render(m, "A door.", {"admissible_actions": ["open door", "look"]}))
    Observation: A door.
    Your last moves: look.
    Actions: open door | look
    Answer with <think>a short reason</think><action>one action</action>.
    >>> p.response_prefix, p.stop
    ('<think>', ('</action>',))
    """

    history_length: int = 3
    response_prefix: str = "<think>"
    max_new_tokens: int = 64
    stop: tuple[str, ...] = ("</action>",)
    description: str = ""

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        lines = [*task_lines(self.description, info), f"Observation: {str(observation).strip()}"]
        moves = recent_moves(memory, self.history_length)
        if moves:
            lines.append(f"Your last moves: {moves}.")
        actions = [a for a in info.get("admissible_actions") or [] if a != "help"]
        if actions:
            lines.append(f"Actions: {' | '.join(actions)}")
        lines.append("Answer with <think>a short reason</think><action>one action</action>.")
        return "\n".join(lines)


def recent_moves(memory: EpisodeMemory, history_length: int) -> str:
    """The last ``history_length`` stored actions, comma-separated (empty when none)."""
    if history_length <= 0:
        return ""
    return ", ".join(act for _, act in memory.records[-history_length:])


def check_prompt_style(style: str) -> str:
    """``style`` if it is one of :data:`PROMPT_STYLES`, else ``ValueError`` naming the choices."""
    if style not in PROMPT_STYLES:
        raise ValueError(f"prompt style must be one of {PROMPT_STYLES}, got {style!r}")
    return style


def generic_prompt(
    style: str = "reference", history_length: int | None = None, description: str = ""
) -> AgentPrompt:
    """:class:`GenericPrompt` or :class:`CompactGenericPrompt` with the env's task
    ``description``; ``history_length=None`` keeps their default history.

    >>> type(generic_prompt("compact")).__name__, generic_prompt(history_length=5).history_length
    ('CompactGenericPrompt', 5)
    """
    cls = GenericPrompt if check_prompt_style(style) == "reference" else CompactGenericPrompt
    prompt = cls(description=description)
    if history_length is not None:
        prompt.history_length = history_length
    return prompt


def agent_prompt_for(
    env: Any, style: str = "reference", history_length: int | None = None
) -> AgentPrompt:
    """The prompt of ``env`` through its ``agent_prompt`` hook, seen through any wrappers.

    ``env`` may be a Gymnasium env, a wrapper or a vector env (its first sub-env's prompt). An env
    without the hook gets :func:`generic_prompt` (with its ``description`` attribute), except under an async vector env, whose sub-envs
    are asked through ``call`` and must have it (every agentenvs env does).

    >>> class Plain:  # no hook: the generic prompt
    ...     pass
    >>> type(agent_prompt_for(Plain(), "compact")).__name__
    'CompactGenericPrompt'
    """
    check_prompt_style(style)
    vector = getattr(env, "unwrapped", env)
    if hasattr(vector, "num_envs"):  # a vector env: sync holds its sub-envs, async is asked
        if getattr(vector, "envs", None):
            return agent_prompt_for(vector.envs[0], style, history_length)
        return vector.call("agent_prompt", style, history_length)[0]
    hook = None
    get = getattr(env, "get_wrapper_attr", None)
    if get is not None:
        try:
            hook = get("agent_prompt")
        except AttributeError:
            hook = None
    if hook is None:
        hook = getattr(env, "agent_prompt", None)
    if hook is None:
        description = getattr(getattr(env, "unwrapped", env), "description", None)
        return generic_prompt(style, history_length, str(description or ""))
    return hook(style, history_length)
