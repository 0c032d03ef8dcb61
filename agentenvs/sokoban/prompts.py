"""Sokoban's agent prompts and its reference action projection.

This module holds :func:`project_sokoban_action` (the reference stack's Sokoban projection, the one
rule that both :class:`SokobanPrompt` and ``SokobanEnv(compat="verl-agent")`` use),
:class:`SokobanPrompt` (the reference prompt: verl-agent's ``SOKOBAN_TEMPLATE`` /
``SOKOBAN_TEMPLATE_NO_HIS`` text word for word) and :class:`CompactSokobanPrompt` (a short one-shot
prompt for small models on CPU), :class:`OffsetsSokobanPrompt` (the compact prompt for the
``observation="offsets"`` text, docs/sokoban.md, *Observations*), and the visual mode's two:
:class:`VisualSokobanPrompt` (verl-agent's ``SOKOBAN_VISUAL_TEMPLATE``) and
:class:`CompactVisualSokobanPrompt` (the last moves and the board image). The visual prompts show
the current image only, at the :data:`~agentenvs.core.prompting.IMAGE_PLACEHOLDER`; past steps
appear as the moves taken (the memory holds the text grid, which they do not show). :meth:`SokobanEnv.agent_prompt
<agentenvs.sokoban.env.SokobanEnv.agent_prompt>` returns them.

>>> from agentenvs.core.prompting import EpisodeMemory
>>> memory = EpisodeMemory()
>>> p = SokobanPrompt()
>>> p.render(memory, "#P_O#", {}).splitlines()[21]
'Your current observation is:'
>>> memory.record("#P_O#", p.project("<think>..</think><action>Right</action>"))
>>> print(p.render(memory, "#_PO#", {}).splitlines()[21])
Prior to this step, you have already taken 1 step(s). Below are the most recent 1 observations and the corresponding actions you took: [Observation 1: '#P_O#', Action 1: 'Right']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentenvs.core.prompting import IMAGE_PLACEHOLDER, AgentPrompt, EpisodeMemory

__all__ = [
    "SOKOBAN_WORDS",
    "project_sokoban_action",
    "SokobanPrompt",
    "CompactSokobanPrompt",
    "OffsetsSokobanPrompt",
    "VisualSokobanPrompt",
    "CompactVisualSokobanPrompt",
]

#: The reference projection's words, in its search order (``still`` is the no-op).
SOKOBAN_WORDS = ("up", "down", "left", "right", "still")

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


def project_sokoban_action(response: object) -> str | None:
    """The reference Sokoban projection: the first of up, down, left, right, still (in that order)
    found as a substring between the first ``<action>`` and the first ``</action>``, lower-cased.

    ``None`` when the response is not text, lacks either tag, or names no action word. The format
    checks of the reference stack (think tags, CJK) are the env's business, not the projection's.

    >>> project_sokoban_action("<think>.</think><action>Push RIGHT, then up</action>")
    'up'
    >>> project_sokoban_action("<action>stay</action>") is None, project_sokoban_action("up") is None
    (True, True)
    """
    if not isinstance(response, str):
        return None
    lower = response.lower()
    start, end = lower.find("<action>"), lower.find("</action>")
    if start < 0 or end < 0:
        return None
    inner = lower[start + len("<action>") : end]
    return next((word for word in SOKOBAN_WORDS if word in inner), None)


@dataclass
class SokobanPrompt(AgentPrompt):
    """verl-agent's text Sokoban prompt (``SOKOBAN_TEMPLATE`` / ``_NO_HIS``); history of 2 by default.

    The memory stores the projected action capitalised (``Up`` ... ``Still``), as verl-agent does.
    """

    max_new_tokens: int = 512
    stop: tuple[str, ...] = ("</action>",)

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
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
        """:func:`project_sokoban_action` capitalised; ``Still`` when it finds nothing.

        >>> SokobanPrompt().project("<action>right then up</action>"), SokobanPrompt().project("up")
        ('Up', 'Still')
        """
        return (project_sokoban_action(response) or "still").capitalize()


def _compact_grid(observation: Any) -> str:
    lines = str(observation).splitlines()
    return "\n".join(
        line.replace(" ", "").replace("\t", "") if "\t" in line else line for line in lines
    )


def _last_moves(memory: EpisodeMemory, history_length: int) -> str:
    """``Your last moves: up, left.`` and a newline (the last ``history_length``), or ``""``."""
    recent = [act for _, act in memory.records[-history_length:]] if history_length else []
    return f"Your last moves: {', '.join(a.lower() for a in recent)}.\n" if recent else ""


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
    response prefix: ~230 SmolLM2 tokens (example turn included) instead of ~530, and a format a
    135M model can follow.

    >>> p = CompactSokobanPrompt()
    >>> from agentenvs.core.prompting import EpisodeMemory
    >>> print(p.render(EpisodeMemory([("g", "Right")]), " # \\t P \\t X \\t O \\t # \\t", {}))
    Sokoban grid (# wall, _ floor, O target, X box, P you):
    #PXO#
    Your last moves: right.
    Push the box onto the target. Reason in <think> </think>, then give one move (up, down, left or right) in <action> </action>.
    """

    examples: tuple[dict[str, str], ...] = _COMPACT_EXAMPLE
    response_prefix: str = "<think>"
    max_new_tokens: int = 40

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        return _compact_question(
            _compact_grid(observation), _last_moves(memory, self.history_length)
        )


def _offsets_question(offsets: str, moves: str) -> str:
    return f"{moves}{offsets}"


@dataclass
class OffsetsSokobanPrompt(CompactSokobanPrompt):
    """:class:`CompactSokobanPrompt` for the offsets observation (``box R C target R C``, the
    box's row and column minus the player's, then the target's minus the box's): the last moves
    and the observation, nothing else (no legend, no instruction, no example turn: ~31 tokens of
    the tiny model in the learner's chat). It is for a model trained from scratch on it: any
    constant text before the observation slows the tiny model's learning (one explanation line
    of 23 tokens: 0.37 held-out move accuracy after 200 supervised steps against 0.69 without;
    docs/learner-capacity.md), so the explanation lives in docs/sokoban.md, not in the prompt.

    >>> p = OffsetsSokobanPrompt(history_length=1)
    >>> print(p.render(EpisodeMemory([("box 0 1 target 0 2", "Right")]), "box 0 1 target 0 1", {}))
    Your last moves: right.
    box 0 1 target 0 1
    """

    examples: tuple[dict[str, str], ...] = ()

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        return _offsets_question(str(observation), _last_moves(memory, self.history_length))


_VISUAL_HEAD = """
You are an expert agent operating in the Sokoban environment. Your goal is to push all the boxes \
onto the target spots. Once all boxes are on the targets, you win!

# Rules
You can only push boxes. You can't pull them, so plan ahead to avoid getting stuck.
You can't walk through or push boxes into walls.
To avoid traps, do not push boxes into corners or against walls where they can't be moved again.

# Visual Elements in the Image:
Character: A small, green alien-like figure with two antennae and black eyes. It represents you.
Box: A yellow crate marked with an orange "X" across its front. It is the box you need to push.
Target: A black tile outlined in red, with a small red diamond shape in the center. It marks the \
destination where a box should be pushed.

# Current Step
Your current observation is shown in the image: """


def _board_image(observation: Any) -> list[Any]:
    """The visual observation's image as the prompt's one image (``[]`` for a text observation)."""
    return [observation["image"]] if isinstance(observation, dict) else []


@dataclass
class VisualSokobanPrompt(SokobanPrompt):
    """verl-agent's visual Sokoban prompt (``SOKOBAN_VISUAL_TEMPLATE``, with or without history):
    the legend of the image, the current image and the reference closing paragraph.

    >>> import numpy as np
    >>> obs = {"text": "#P_O#", "image": np.zeros((16, 80, 3), np.uint8)}
    >>> p = VisualSokobanPrompt()
    >>> p.render(EpisodeMemory(), obs, {}).splitlines()[14]
    'Your current observation is shown in the image: <image>'
    >>> [image.shape for image in p.images(EpisodeMemory(), obs, {})]
    [(16, 80, 3)]
    """

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        return _VISUAL_HEAD + IMAGE_PLACEHOLDER + _SOKOBAN_TAIL

    def images(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> list[Any]:
        return _board_image(observation)


@dataclass
class CompactVisualSokobanPrompt(CompactSokobanPrompt):
    """The visual board for a small model trained from scratch: the last moves, then the image
    (no legend, no instruction, no example turn; the tiny model's recipe, docs/visual-agents.md).

    >>> import numpy as np
    >>> obs = {"text": "#P_O#", "image": np.zeros((16, 80, 3), np.uint8)}
    >>> print(CompactVisualSokobanPrompt().render(EpisodeMemory([("#P_O#", "Right")]), obs, {}))
    Your last moves: right.
    <image>
    """

    examples: tuple[dict[str, str], ...] = ()

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        return _last_moves(memory, self.history_length) + IMAGE_PLACEHOLDER

    def images(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> list[Any]:
        return _board_image(observation)
