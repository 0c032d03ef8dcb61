"""``agentenvs/Sokoban-v0``: Sokoban for text agents, with the reference stack's defaults.

This module holds :class:`SokobanEnv`, :func:`room_for_task` (the cached room of a task id) and
:func:`curriculum_task_ids` (the easy rooms of a split, for the ``max_solution_steps`` option).

Defaults follow the reference stack (verl-agent's Sokoban settings): a 6x6 room with one box, 15 steps,
rewards -0.1 per step, +1 / -1 for a box onto / off a target and +10 for solving. The agent answers
``<think>...</think><action>up</action>`` (or, with ``action_format="plain"``, just ``up``); the
observation is the reference text grid (``" # \\t _ \\t ..."``), and with ``visual=True`` a dict that
adds the RGB image (``agentenvs/SokobanVisual-v0``).

Task ids are ``seed-<n>``: ``train`` holds seeds ``0 .. 2**16 - 2`` and ``test`` seeds
``2**16 .. 2**17 - 1`` (the reference draws train seeds below ``2**16 - 1`` and validation seeds
above ``2**16``). A task id always gives the same room, in any process, on any machine.

Curriculum: ``SokobanEnv(max_solution_steps=k)`` (also ``gym.make("agentenvs/Sokoban-v0",
max_solution_steps=k)``) restricts both splits to rooms whose shortest solution takes at most ``k``
moves (and, with ``min_solution_steps=m``, at least ``m``): the first ``curriculum_size`` such rooms
of each split in seed order (default 256 train, 64 test), found with :func:`~agentenvs.sokoban.solver.solve` once per process and configuration.

The agent-facing prompts come from :meth:`SokobanEnv.agent_prompt` (:mod:`agentenvs.sokoban.prompts`).

The env in full (generator, dynamics, observations, actions, compat mode, info keys): docs/sokoban.md.

>>> env = SokobanEnv(action_format="plain")
>>> obs, info = env.reset(options={"task_id": "seed-42"})
>>> print(obs.replace("\\t", "").replace(" ", ""))
######
#PX_O#
#____#
######
######
######
>>> env.step("right")[1:4], env.step("right")[1:4]
((-0.1, False, False), (10.9, True, False))

With ``observation="offsets"`` the same room reads as offsets (``info["state_key"]`` is the grid):

>>> env = SokobanEnv(action_format="plain", observation="offsets")
>>> obs, info = env.reset(options={"task_id": "seed-42"})
>>> obs, env.step("right")[0]
('box 0 1 target 0 2', 'box 0 1 target 0 1')
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np

from agentenvs.core import ParsedAction, SeedTaskIds, TaskPanel, TextAgentEnv, text_space
from agentenvs.core.parsing import CJK_CHARS
from agentenvs.core.prompting import AgentPrompt, check_prompt_style
from agentenvs.sokoban.game import CELL_TEXT, SokobanGame
from agentenvs.sokoban.generator import Room, generate_room_with_retries
from agentenvs.sokoban.prompts import (
    CompactSokobanPrompt,
    CompactVisualSokobanPrompt,
    OffsetsSokobanPrompt,
    SokobanPrompt,
    VisualSokobanPrompt,
    project_sokoban_action,
)
from agentenvs.sokoban.render import TILE, render_rgb
from agentenvs.sokoban.solver import solve

__all__ = ["SokobanEnv", "room_for_task", "curriculum_task_ids", "ACTIONS", "CURRICULUM_SIZE"]

#: Text actions and their gym-sokoban push-or-move ids.
ACTIONS = {"up": 1, "down": 2, "left": 3, "right": 4}
_STILL = 0
_TRAIN = SeedTaskIds(0, 2**16 - 1)
_TEST = SeedTaskIds(2**16, 2**17)
#: Default ``curriculum_size``: rooms per split (train, test) under ``max_solution_steps``.
CURRICULUM_SIZE = (256, 64)


@functools.lru_cache(maxsize=4096)
def room_for_task(
    task_id: str, dim_room: tuple[int, int] = (6, 6), num_boxes: int = 1, search_depth: int = 30
) -> Room:
    """The room of ``task_id`` (``seed-<n>``) under a generator configuration; cached."""
    seed = SeedTaskIds.seed_of(task_id)
    if seed is None:
        raise ValueError(f"Sokoban task ids look like 'seed-<n>', got {task_id!r}")
    return generate_room_with_retries(
        seed, dim=dim_room, num_boxes=num_boxes, search_depth=search_depth
    )


@functools.lru_cache(maxsize=64)
def curriculum_task_ids(
    split: str,
    max_solution_steps: int,
    count: int,
    dim_room: tuple[int, int] = (6, 6),
    num_boxes: int = 1,
    search_depth: int = 30,
    min_solution_steps: int = 1,
) -> tuple[str, ...]:
    """The first ``count`` task ids of ``split`` (seed order) whose shortest solution takes
    ``min_solution_steps`` to ``max_solution_steps`` moves.

    Deterministic and cached per process and configuration. Scanning costs ~2 ms per room; with a
    bound of 1 about one room in twelve qualifies, so the default 256 + 64 rooms take ~5-10 s once
    per process (a bound of 2 qualifies one room in three). Fewer than ``count`` ids only if the
    whole split holds fewer.

    >>> curriculum_task_ids("train", 2, 3)
    ('seed-1', 'seed-3', 'seed-4')
    >>> curriculum_task_ids("train", 4, 3, min_solution_steps=3)
    ('seed-7', 'seed-8', 'seed-9')
    """
    if not 1 <= min_solution_steps <= max_solution_steps:
        raise ValueError(
            f"need 1 <= min_solution_steps <= max_solution_steps, got {min_solution_steps} and "
            f"{max_solution_steps}"
        )
    if count < 1:
        raise ValueError(f"the curriculum needs at least one room per split, got {count}")
    ids = {"train": _TRAIN, "test": _TEST}[split]
    out: list[str] = []
    for task_id in ids:
        room = room_for_task(task_id, tuple(dim_room), num_boxes, search_depth)
        solution = solve(room.fixed, room.state, max_depth=max_solution_steps)
        if solution is not None and len(solution) >= min_solution_steps:
            out.append(task_id)
            if len(out) == count:
                break
    return tuple(out)


class SokobanEnv(TextAgentEnv):
    """Sokoban with text actions.

    Args:
        dim_room: ``(rows, cols)`` of generated rooms.
        num_boxes: boxes (= targets) per room.
        max_steps: episode budget (every action counts, also invalid ones and bumps into walls).
        search_depth: reverse-play depth of the generator (larger = harder rooms possible).
        visual: observations are ``{"text": grid, "image": RGB uint8 (rows*16, cols*16, 3)}``.
        compat: ``None`` or ``"verl-agent"``: the reference projection (the first of up, down, left,
            right, still found as a substring inside the action tags; ``still`` is a valid no-op) and
            its budget rule (invalid actions and ``still`` cost -0.1 but no step).
        max_solution_steps: ``None`` (all rooms) or a curriculum bound ``k >= 1``: the ``train``
            and ``test`` splits hold only rooms whose shortest solution takes ``<= k`` moves (see
            :func:`curriculum_task_ids`); ``reset`` draws from them and other task ids are unknown.
        min_solution_steps: with ``max_solution_steps``, also leave out rooms solved in fewer
            moves (default 1: none left out), e.g. 2 for rooms that need 2-4 moves.
        curriculum_size: rooms per split under ``max_solution_steps``: one int for both splits or
            ``(train, test)``; default :data:`CURRICULUM_SIZE` ``(256, 64)``. Ignored without a bound.
        observation: ``"grid"`` (default, the reference text grid) or ``"offsets"``
            (``box R C target R C``: the box's row/column minus the player's, then the target's
            minus the box's; one box only, not with ``visual``; docs/sokoban.md, *Observations*).
            ``info["state_key"]`` stays the grid either way.
        validation_size: with ``max_solution_steps``, a ``validation`` split of this many rooms:
            the next train-range rooms of the curriculum after the ``train`` ones (disjoint from
            both splits; for choosing recipes without reading ``test``). Default 0: none.
        **kwargs: :class:`~agentenvs.core.TextAgentEnv` options (``split``,
            ``invalid_action_penalty``, ``action_format``, ``require_think``, ``render_mode``).

    ``info`` adds ``boxes_on_target``, ``action_is_effective`` (the player moved), ``room_seed``
    (the generator seed actually used, which differs from the task seed only after a retry) and
    ``progress`` (:meth:`~agentenvs.sokoban.game.SokobanGame.progress`, docs/sokoban.md, *Progress*).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        dim_room: tuple[int, int] = (6, 6),
        num_boxes: int = 1,
        max_steps: int = 15,
        search_depth: int = 30,
        visual: bool = False,
        compat: str | None = None,
        max_solution_steps: int | None = None,
        min_solution_steps: int = 1,
        curriculum_size: int | tuple[int, int] = CURRICULUM_SIZE,
        validation_size: int = 0,
        observation: str = "grid",
        **kwargs: Any,
    ) -> None:
        if compat not in (None, "verl-agent"):
            raise ValueError(f"compat must be None or 'verl-agent', got {compat!r}")
        if observation not in ("grid", "offsets"):
            raise ValueError(f"observation must be 'grid' or 'offsets', got {observation!r}")
        if observation == "offsets" and (int(num_boxes) != 1 or visual):
            raise ValueError(
                "observation='offsets' describes one box in text: it needs num_boxes=1 and "
                f"visual=False, got num_boxes={num_boxes}, visual={visual}"
            )
        self.observation = observation
        self.dim_room = (int(dim_room[0]), int(dim_room[1]))
        self.num_boxes = int(num_boxes)
        self.search_depth = int(search_depth)
        self.max_solution_steps = max_solution_steps
        self.min_solution_steps = min_solution_steps
        splits: dict[str, Any] = {"train": _TRAIN, "test": _TEST}
        if max_solution_steps is not None:
            sizes = (
                (curriculum_size, curriculum_size)
                if isinstance(curriculum_size, (int, np.integer))
                else tuple(curriculum_size)
            )
            if len(sizes) != 2:
                raise ValueError(f"curriculum_size must be an int or (train, test), got {sizes}")
            bound = int(max_solution_steps)
            config = (self.dim_room, self.num_boxes, self.search_depth, int(min_solution_steps))
            train = int(sizes[0])
            seen = curriculum_task_ids("train", bound, train + int(validation_size), *config)
            splits = {
                "train": seen[:train],
                "test": curriculum_task_ids("test", bound, int(sizes[1]), *config),
            }
            if validation_size:
                splits["validation"] = seen[train:]
        self.curriculum_size = curriculum_size
        super().__init__(tasks=TaskPanel(splits), max_steps=max_steps, **kwargs)
        self.visual = visual
        self.compat = compat
        rows, cols = self.dim_room
        text = text_space(max_length=rows * (cols * len(CELL_TEXT[0]) + 1) + 512, extra_chars="√")
        if visual:
            image = gym.spaces.Box(0, 255, (rows * TILE, cols * TILE, 3), np.uint8)
            self.observation_space = gym.spaces.Dict({"text": text, "image": image})
        else:
            self.observation_space = text
        self.action_space = text_space(max_length=1 << 20)
        self.game: SokobanGame | None = None
        self._room: Room | None = None
        self._moved = False

    # -- agent-facing hook -------------------------------------------------------------------------
    def agent_prompt(
        self, style: str = "reference", history_length: int | None = None
    ) -> AgentPrompt:
        """:class:`~agentenvs.sokoban.prompts.SokobanPrompt` (``"reference"``, verl-agent's text) or
        :class:`~agentenvs.sokoban.prompts.CompactSokobanPrompt` (``"compact"``); history 2 by default.

        With ``observation="offsets"`` the compact style is
        :class:`~agentenvs.sokoban.prompts.OffsetsSokobanPrompt` (it explains the offsets). The
        visual mode's are :class:`~agentenvs.sokoban.prompts.VisualSokobanPrompt` and
        :class:`~agentenvs.sokoban.prompts.CompactVisualSokobanPrompt` (they show the image).

        >>> SokobanEnv().agent_prompt("compact", history_length=3)
        ... # doctest: +ELLIPSIS
        CompactSokobanPrompt(history_length=3, ...)
        """
        reference = check_prompt_style(style) == "reference"
        cls: type[SokobanPrompt]
        if self.visual:
            cls = VisualSokobanPrompt if reference else CompactVisualSokobanPrompt
        elif reference:
            cls = SokobanPrompt
        else:
            cls = OffsetsSokobanPrompt if self.observation == "offsets" else CompactSokobanPrompt
        return cls() if history_length is None else cls(history_length=history_length)

    def expert_action(self) -> str | None:
        """The expert's next move from the current state (the ``expert_action`` hook of
        docs/custom-env.md): the first move of a shortest solution
        (:func:`~agentenvs.sokoban.solver.solve`, 50 moves deep), so it also holds after a
        detour; ``None`` before a reset, once solved, or where no solution is left (a box in a
        corner).

        >>> env = SokobanEnv()
        >>> _ = env.reset(options={"task_id": "seed-42"})
        >>> env.expert_action(), env.step("<think></think><action>left</action>")[1:3]
        ('right', (-0.1, False))
        >>> env.expert_action()
        'right'
        """
        if self.game is None or self.game.solved:
            return None
        assert self._room is not None  # set by reset()
        state = np.reshape(self.game.cells, (self.game.rows, self.game.cols))
        plan = solve(self._room.fixed, state)
        return plan[0] if plan else None

    # -- TextAgentEnv hooks ------------------------------------------------------------------------
    def _load_task(self, task_id: str) -> None:
        self._room = room_for_task(task_id, self.dim_room, self.num_boxes, self.search_depth)
        self.game = SokobanGame(self._room.fixed, self._room.state)
        self._moved = False

    def _observation(self, feedback: str) -> Any:
        assert self.game is not None  # set by reset()
        if self.observation == "offsets":
            text = "box {} {} target {} {}".format(*self.game.offsets())
        else:
            text = self.game.text()
        if feedback:
            text = f"{text}\n{feedback}"
        if self.visual:
            return {"text": text, "image": render_rgb(self.game.codes())}
        return text

    def _parse(self, action: object) -> ParsedAction:
        if self.compat != "verl-agent":
            return super()._parse(action)
        if not isinstance(action, str):
            return ParsedAction(
                None, False, f"the action must be text, got {type(action).__name__}"
            )
        lower = action.lower()
        word = project_sokoban_action(action)
        if word is None:
            if "<action>" not in lower or "</action>" not in lower:
                return ParsedAction(None, False, "no <action>...</action> block")
            return ParsedAction(None, False, "no action word in the <action> block")
        if "<think>" not in lower or "</think>" not in lower:
            return ParsedAction(word, False, "missing <think> or </think>")
        if CJK_CHARS.search(action):
            return ParsedAction(word, False, "CJK characters are not allowed")
        return ParsedAction(word, True)

    def _to_command(self, text: str) -> tuple[Any, str]:
        word = text.strip().lower()
        if word in ACTIONS:
            return ACTIONS[word], ""
        if word == "still" and self.compat == "verl-agent":
            return _STILL, ""
        return None, f"unknown action {ascii(text[:40])}; choose one of up, down, left, right"

    def _apply(self, command: int) -> tuple[float, bool]:
        if command == _STILL:
            self._moved = False
            return -self.invalid_action_penalty, False
        assert self.game is not None  # set by reset()
        reward, solved, self._moved = self.game.step(command)
        return reward, solved

    def _counts(self, parsed: ParsedAction, command: Any) -> int:
        if self.compat == "verl-agent" and (not parsed.valid or command == _STILL):
            return 0
        return 1

    def _state_key(self) -> str:
        return self.game.text() if self.game is not None else ""

    def _admissible_actions(self) -> list[str]:
        return list(ACTIONS)

    def _progress(self) -> float:
        assert self.game is not None  # set by reset()
        return self.game.progress()

    def _extra_info(self) -> dict[str, Any]:
        assert self.game is not None and self._room is not None  # set by reset()
        return {
            "boxes_on_target": self.game.boxes_on_target,
            "action_is_effective": self._moved,
            "room_seed": self._room.seed,
        }

    def step(self, action: str) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self._moved = False
        return super().step(action)

    def render(self) -> Any:
        if self.render_mode == "rgb_array":
            assert self.game is not None  # set by reset()
            return render_rgb(self.game.codes())
        if self.render_mode == "ansi" and self.visual:  # the text of {"text", "image"}
            return self._observation("")["text"]
        return super().render()
