"""Where ALFWorld games come from: the embedded panel or the official ``json_2.1.1`` data.

This module holds :class:`GameSet` (task panel + a way to get each game's ``game.tw-pddl`` object and
``traj_data``), :func:`embedded_games` (the shipped panel: splits ``train``, ``test_seen`` and
``test_unseen``; ``test`` is an alias of ``test_seen``),
:func:`discover` (ALFWorld's loader filters, but sorted) and :func:`official_games` (splits
``train``, ``valid_seen``, ``valid_unseen``; task id = the game directory relative to its split
directory). :func:`resolve_games` picks the source for the env. The sources, the official layout
and the loader filters: docs/alfworld.md, *Game sources* and *Official data*.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from agentenvs.alfworld.constants import TASK_TYPE_NAMES, TASK_TYPES
from agentenvs.core.tasks import TaskPanel

__all__ = [
    "GameSet",
    "embedded_games",
    "discover",
    "official_games",
    "official_root",
    "resolve_games",
    "normalise_task_types",
    "OFFICIAL_SPLITS",
    "EMBEDDED_SPLITS",
]

#: Our split name -> directory under ``json_2.1.1``.
OFFICIAL_SPLITS = {"train": "train", "valid_seen": "valid_seen", "valid_unseen": "valid_unseen"}
#: The shipped panel's splits (docs/alfworld.md, *Game sources*) and the alias of each.
EMBEDDED_SPLITS = ("train", "test_seen", "test_unseen")
_EMBEDDED_ALIASES = {"test": "test_seen"}


@dataclass(frozen=True)
class GameSet:
    """A task panel and accessors for its games.

    Attributes:
        panel: split -> ordered task ids.
        game: task id -> ``game.tw-pddl`` object or path (what ``PddlEnv.load`` accepts).
        traj_data: task id -> the game's ``traj_data`` dict.
        gamefile: task id -> a stable name for ``info["gamefile"]`` (path or ``embedded:<id>``).
        source: ``"embedded"`` or the official root directory.
    """

    panel: TaskPanel
    game: Callable[[str], object]
    traj_data: Callable[[str], dict]
    gamefile: Callable[[str], str]
    source: str


def normalise_task_types(task_types: Iterable[int | str] | None) -> tuple[str, ...]:
    """Task type names from ALFWorld config ids (1-6) or names; ``None`` means all six."""
    if task_types is None:
        return TASK_TYPE_NAMES
    out = []
    for t in task_types:
        name = TASK_TYPES.get(t) if isinstance(t, int) else t
        if name not in TASK_TYPE_NAMES:
            raise ValueError(
                f"unknown ALFWorld task type {t!r}; use 1-6 or one of {TASK_TYPE_NAMES}"
            )
        out.append(name)
    return tuple(dict.fromkeys(out))


def embedded_games(task_types: Iterable[int | str] | None = None) -> GameSet:
    """The shipped panel (:data:`EMBEDDED_SPLITS`; ``test`` = ``test_seen``), optionally restricted
    to some task types."""
    from agentenvs.alfworld.panel import default_panel, record_to_game

    wanted = set(normalise_task_types(task_types))
    records = {r["id"]: r for r in default_panel() if r["task_type"] in wanted}
    splits: dict[str, list[str]] = {s: [] for s in EMBEDDED_SPLITS}
    for r in records.values():
        splits[r["split"]].append(r["id"])
    panel = TaskPanel({k: sorted(v) for k, v in splits.items()}, aliases=_EMBEDDED_ALIASES)
    return GameSet(
        panel,
        game=lambda tid: record_to_game(records[tid]),
        traj_data=lambda tid: records[tid]["traj_data"],
        gamefile=lambda tid: f"embedded:{tid}",
        source="embedded",
    )


def discover(split_dir: str, task_types: Iterable[int | str] | None = None) -> list[str]:
    """Game directories under ``split_dir`` that ALFWorld's loader keeps, relative and sorted.

    Kept: has ``traj_data.json`` and ``game.tw-pddl``; path has neither ``movable`` nor ``Sliced``;
    task type wanted; the game file has a ``solvable`` key that is true.
    """
    wanted = set(normalise_task_types(task_types))
    found = []
    for root, _dirs, files in os.walk(split_dir):
        if "traj_data.json" not in files or "game.tw-pddl" not in files:
            continue
        if "movable" in root or "Sliced" in root:
            continue
        with open(os.path.join(root, "traj_data.json")) as f:
            if json.load(f).get("task_type") not in wanted:
                continue
        with open(os.path.join(root, "game.tw-pddl")) as f:
            if not json.load(f).get("solvable"):
                continue
        found.append(os.path.relpath(root, split_dir).replace(os.sep, "/"))
    return sorted(found)


def official_root(path: str) -> str | None:
    """The ``json_2.1.1`` directory at or under ``path`` (also ``json_2.1.3``), or None."""
    for candidate in (path, os.path.join(path, "json_2.1.1"), os.path.join(path, "json_2.1.3")):
        if any(os.path.isdir(os.path.join(candidate, d)) for d in OFFICIAL_SPLITS.values()):
            return os.path.abspath(candidate)
    return None


@lru_cache(maxsize=8)
def _official_index(root: str, task_types: tuple[str, ...]) -> dict[str, list[str]]:
    return {
        split: discover(os.path.join(root, d), task_types)
        for split, d in OFFICIAL_SPLITS.items()
        if os.path.isdir(os.path.join(root, d))
    }


def official_games(path: str, task_types: Iterable[int | str] | None = None) -> GameSet:
    """The official data under ``path`` (the ``$ALFWORLD_DATA`` root or ``json_2.1.1`` itself)."""
    root = official_root(path)
    if root is None:
        raise FileNotFoundError(
            f"no ALFWorld json_2.1.1 layout (train/valid_seen/valid_unseen) under {path!r}"
        )
    index = _official_index(root, normalise_task_types(task_types))
    where = {
        tid: os.path.join(root, OFFICIAL_SPLITS[s], tid) for s, ids in index.items() for tid in ids
    }

    def traj_data(tid: str) -> dict:
        with open(os.path.join(where[tid], "traj_data.json")) as f:
            return json.load(f)

    return GameSet(
        TaskPanel(index),
        game=lambda tid: os.path.join(where[tid], "game.tw-pddl"),
        traj_data=traj_data,
        gamefile=lambda tid: os.path.join(where[tid], "game.tw-pddl"),
        source=root,
    )


def resolve_games(data_path: str | None, task_types: Iterable[int | str] | None = None) -> GameSet:
    """The env's game source.

    ``data_path="embedded"``: the shipped panel. A directory: the official data there (error if the
    layout is missing). ``None``: ``$ALFWORLD_DATA`` if it holds the official layout, else the
    shipped panel.
    """
    if data_path == "embedded":
        return embedded_games(task_types)
    if data_path is not None:
        return official_games(data_path, task_types)
    env_path = os.environ.get("ALFWORLD_DATA")
    if env_path and official_root(env_path) is not None:
        return official_games(env_path, task_types)
    return embedded_games(task_types)
