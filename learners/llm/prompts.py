"""Per-environment prompts in the reference stack's (verl-agent) format, with a short action memory.

This module holds:

* :class:`EpisodeMemory` - the last observation/action pairs of one episode (verl-agent's
  ``SimpleMemory``), rendered as ``[Observation k: '<obs>', Action k: '<act>']`` lines.
* :class:`PromptBuilder` - the protocol: ``prompt(memory, observation, info) -> str``,
  ``project(response) -> str`` (the action name the memory stores), ``examples`` (chat turns put
  before the prompt) and ``response_prefix`` (text the assistant turn starts with, e.g. ``<think>``;
  it is part of the prompt tokens and of the text sent to the env).
* :class:`SokobanPrompt`, :class:`ALFWorldPrompt` and :class:`GenericPrompt` (reference formats),
  :class:`CompactSokobanPrompt` (a short one-shot prompt for small CPU models) and
  :func:`prompt_for` (env id and style -> builder).

The Sokoban texts are verl-agent's ``prompts/sokoban.py`` verbatim (env-sokoban.md Appendix A);
ALFWorld follows ``prompts/alfworld.py`` (compat.md section 3.2): task text, history block,
admissible actions rendered ``'a',\\n 'b'`` without ``help``, and the think/action instruction.

>>> memory = EpisodeMemory()
>>> p = SokobanPrompt()
>>> p.prompt(memory, "#P_O#", {}).splitlines()[21]
'Your current observation is:'
>>> memory.record("#P_O#", p.project("<think>..</think><action>Right</action>"))
>>> print(p.prompt(memory, "#_PO#", {}).splitlines()[21])
Prior to this step, you have already taken 1 step(s). Below are the most recent 1 observations and the corresponding actions you took: [Observation 1: '#P_O#', Action 1: 'Right']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from agentenvs.core.parsing import parse_action_verl

__all__ = [
    "EpisodeMemory",
    "PromptBuilder",
    "SokobanPrompt",
    "ALFWorldPrompt",
    "GenericPrompt",
    "CompactSokobanPrompt",
    "prompt_for",
]

_THINK_ACTION = (
    "You should first reason step-by-step about the current situation. This reasoning process "
    "MUST be enclosed within <think> </think> tags. \n"
    "Once you've finished your reasoning, you should choose an admissible action for current step "
    "and present it within <action> </action> tags."
)

_SOKOBAN_HEAD = """
You are an expert agent operating in the Sokoban environment.

# Symbols and Their Meaning
- Walls (`#`): These block movement. You can't move through or push anything into walls.
- Floor (`_`): Open spaces where you can walk and move boxes.
- Targets (`O`): The spots where boxes need to go.
- Boxes (`X`): These are what you need to push onto the targets.
- Player (`P`): That's you! You'll move around the grid to push boxes.
- Box on Target (`\u221a`): A box successfully placed on a target.
- Player on Target (`S`): You standing on a target.

# Your Goal
Your goal is to push all the boxes (`X`) onto the target spots (`O`). Once all boxes are on the targets, you win!

# Rules
You can only push boxes. You can't pull them, so plan ahead to avoid getting stuck.
You can't walk through or push boxes into walls (`#`).
To avoid traps, do not push boxes into corners or against walls where they can't be moved again.

# Current Step
"""

_SOKOBAN_TAIL = (
    '\nYour admissible actions are ["up", "down", "left", "right"].\n\n'
    "Now it's your turn to make a move (choose ONE action only for the current step).\n"
    "You should first reason step-by-step about the current situation \u2014 observe the positions "
    "of boxes and targets, plan a path to push a box toward a target, and avoid traps like corners "
    "or walls. This reasoning process MUST be enclosed within <think> </think> tags. \n"
    "Once you've finished your reasoning, you should choose an admissible action for current step "
    "and present it within <action> </action> tags.\n"
)


@dataclass
class EpisodeMemory:
    """Observation/action pairs of one episode, oldest first (verl-agent's ``SimpleMemory``)."""

    records: list[tuple[str, str]] = field(default_factory=list)

    def record(self, observation: Any, action: str) -> None:
        """Store the observation an action was taken in and the action's projected name."""
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


class PromptBuilder(Protocol):
    """Turns the current observation and the episode memory into the user message."""

    history_length: int
    examples: tuple[dict[str, str], ...]
    response_prefix: str

    def prompt(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str: ...

    def project(self, response: str) -> str: ...


@dataclass
class SokobanPrompt:
    """verl-agent's text Sokoban prompt (``SOKOBAN_TEMPLATE`` / ``_NO_HIS``); history of 2 by default."""

    history_length: int = 2
    examples: tuple[dict[str, str], ...] = ()
    response_prefix: str = ""

    def prompt(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        history, shown = memory.fetch(self.history_length)
        if shown == 0:
            current = f"Your current observation is:\n{observation}"
        else:
            current = (
                f"Prior to this step, you have already taken {len(memory)} step(s). Below are the "
                f"most recent {shown} observations and the corresponding actions you took: {history}\n"
                f"You are now at step {len(memory) + 1} and your current observation is:\n{observation}"
            )
        return _SOKOBAN_HEAD + current + _SOKOBAN_TAIL

    def project(self, response: str) -> str:
        """verl-agent's memory name: the first of up/down/left/right/still inside the tags, else Still."""
        lower = response.lower() if isinstance(response, str) else ""
        start, end = lower.find("<action>"), lower.find("</action>")
        inner = lower[start + len("<action>") : end] if 0 <= start < end else ""
        for name in ("up", "down", "left", "right", "still"):
            if name in inner:
                return name.capitalize()
        return "Still"


def _admissible(info: dict[str, Any]) -> str:
    actions = [a for a in info.get("admissible_actions") or [] if a != "help"]
    return "\n ".join(f"'{a}'," for a in actions)


@dataclass
class ALFWorldPrompt:
    """verl-agent's ALFWorld prompt structure (``ALFWORLD_TEMPLATE`` / ``_NO_HIS``), history of 2."""

    history_length: int = 2
    examples: tuple[dict[str, str], ...] = ()
    response_prefix: str = ""

    def prompt(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        head = "\nYou are an expert agent operating in the ALFRED Embodied Environment."
        tail = (
            f"Your admissible actions of the current situation are: [{_admissible(info)}].\n\n"
            f"Now it's your turn to take an action.\n{_THINK_ACTION}\n"
        )
        history, shown = memory.fetch(self.history_length)
        if shown == 0:
            return f"{head}\nYour current observation is: {observation}\n{tail}"
        return (
            f"{head} Your task is to: {_task_text(memory.records[0][0], info)}\n"
            f"Prior to this step, you have already taken {len(memory)} step(s). Below are the most "
            f"recent {shown} observations and the corresponding actions you took: {history}\n"
            f"You are now at step {len(memory) + 1} and your current observation is: {observation}\n"
            f"{tail}"
        )

    def project(self, response: str) -> str:
        """The projected command (lower-cased tag content, or the last 30 characters)."""
        return parse_action_verl(response, fallback_chars=30).command or ""


def _task_text(first_observation: str, info: dict[str, Any]) -> str:
    if info.get("task"):
        return str(info["task"])
    marker = "Your task is to: "
    pos = first_observation.find(marker)
    return first_observation[pos + len(marker) :].strip() if pos >= 0 else ""


@dataclass
class GenericPrompt:
    """Any text env: observation, history, admissible actions if the env lists them, the instruction."""

    history_length: int = 2
    examples: tuple[dict[str, str], ...] = ()
    response_prefix: str = ""

    def prompt(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        history, shown = memory.fetch(self.history_length)
        parts = ["You are an expert agent operating in a text environment."]
        if shown:
            parts.append(
                f"Prior to this step, you have already taken {len(memory)} step(s). Below are the "
                f"most recent {shown} observations and the corresponding actions you took: {history}"
            )
        parts.append(f"Your current observation is:\n{observation}")
        if info.get("admissible_actions"):
            parts.append(f"Your admissible actions are: [{_admissible(info)}].")
        parts.append(f"\nNow it's your turn to take an action.\n{_THINK_ACTION}\n")
        return "\n".join(parts)

    def project(self, response: str) -> str:
        return parse_action_verl(response, fallback_chars=30).command or ""


def _compact_grid(observation: Any) -> str:
    lines = str(observation).splitlines()
    return "\n".join(
        line.replace(" ", "").replace("\t", "") if "\t" in line else line for line in lines
    )


def _compact_question(grid: str, moves: str) -> str:
    return (
        f"Sokoban grid (# wall, _ floor, O target, X box, P you):\n{grid}\n{moves}"
        "Push the box onto the target. Reason in <think> </think>, then give one move "
        "(up, down, left or right) in <action> </action>."
    )


_COMPACT_EXAMPLE = (
    {"role": "user", "content": _compact_question("######\n#PXO_#\n#____#\n######", "")},
    {
        "role": "assistant",
        "content": "<think>The box X is right of me and the target O is right of the box. "
        "I push right.</think><action>right</action>",
    },
)


@dataclass
class CompactSokobanPrompt(SokobanPrompt):
    """A short Sokoban prompt for small models on CPU (not the reference text).

    The grid without spaces and tabs, the last moves, one worked example turn and a ``<think>``
    response prefix: ~230 SmolLM2 tokens instead of ~530, and a format a 135M model can follow.
    """

    examples: tuple[dict[str, str], ...] = _COMPACT_EXAMPLE
    response_prefix: str = "<think>"

    def prompt(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        recent = (
            [act for _, act in memory.records[-self.history_length :]]
            if self.history_length
            else []
        )
        moves = f"Your last moves: {', '.join(a.lower() for a in recent)}.\n" if recent else ""
        return _compact_question(_compact_grid(observation), moves)


def prompt_for(env_id: str, history_length: int = 2, style: str = "reference") -> PromptBuilder:
    """The prompt builder of a registered env id (Sokoban, ALFWorld; others get :class:`GenericPrompt`).

    ``style="compact"`` selects :class:`CompactSokobanPrompt` for Sokoban.
    """
    if style not in ("reference", "compact"):
        raise ValueError(f"style must be 'reference' or 'compact', got {style!r}")
    name = env_id.split("/")[-1].lower()
    if name.startswith("sokoban") and style == "compact":
        return CompactSokobanPrompt(history_length)
    if name.startswith("sokoban"):
        return SokobanPrompt(history_length)
    if name.startswith("alfworld"):
        return ALFWorldPrompt(history_length)
    return GenericPrompt(history_length)
