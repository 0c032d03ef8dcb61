"""The embedded game panel: generated ALFWorld games shipped as one gzipped JSON-lines file.

This module holds :data:`PANEL_PATH` (the shipped file), :func:`game_record` (the panel line of a
verified game), :func:`write_panel` / :func:`read_panel` (byte-stable gzip JSON lines),
:func:`record_to_game` (a record as the ``game.tw-pddl`` object the engine loads, domain and
grammar taken from the installed alfworld) and :func:`export_official_layout` (write records as
ALFWorld's ``json_2.1.1/<split>/<task dir>/<trial>/`` tree) and :func:`panel_stats`.

A record is a dict with ``id`` (``<task_type>-<Obj>-None-<Parent|Toggle>-<scene>/trial_G<k>``),
``split`` (``train``, ``test_seen`` or ``test_unseen``), ``seed``, ``k``, ``attempt``,
``task_type``, ``task`` (the sentence), ``traj_data``, ``pddl_problem`` and ``walkthrough`` (the
planner's plan). Reading needs no alfworld.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Iterable
from functools import lru_cache

from agentenvs.alfworld.generate import GameSpec, game_files

__all__ = [
    "PANEL_PATH",
    "game_record",
    "encode_record",
    "write_panel",
    "read_panel",
    "default_panel",
    "record_to_game",
    "export_official_layout",
    "panel_stats",
]

#: The shipped panel (train 600 / test_seen 140 / test_unseen 60 games, the build's defaults).
PANEL_PATH = os.path.join(os.path.dirname(__file__), "data", "panel.jsonl.gz")


def game_record(spec: GameSpec, *, split: str, seed: int, k: int, attempt: int) -> dict:
    """The panel record of a verified game (``spec.walkthrough`` filled)."""
    return {
        "id": spec.game_id,
        "split": split,
        "seed": seed,
        "k": k,
        "attempt": attempt,
        "task_type": spec.task_type,
        "task": spec.task,
        "traj_data": spec.traj_data(),
        "pddl_problem": spec.problem,
        "walkthrough": list(spec.walkthrough),
    }


def encode_record(record: dict) -> bytes:
    """One canonical JSON line (sorted keys, no spaces, trailing newline)."""
    return (json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n").encode()


def write_panel(records: Iterable[dict], path: str) -> None:
    """Write records as gzip JSON lines, byte-stable (no timestamp or file name in the header)."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        for record in records:
            gz.write(encode_record(record))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(buf.getvalue())


def read_panel(path: str = PANEL_PATH) -> list[dict]:
    """The records of a panel file, in file order."""
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


@lru_cache(maxsize=1)
def default_panel() -> tuple[dict, ...]:
    """The shipped panel's records (cached; ``FileNotFoundError`` if the package lacks it)."""
    return tuple(read_panel(PANEL_PATH))


def record_to_game(record: dict) -> dict:
    """The ``game.tw-pddl`` object of ``record`` (needs alfworld for the domain and grammar)."""
    return game_files(record["task"], record["pddl_problem"], list(record["walkthrough"]))


def export_official_layout(
    records: Iterable[dict], root: str, split_dirs: dict[str, str] | None = None
) -> list[str]:
    """Write records as ``<root>/<split dir>/<id>/{game.tw-pddl,traj_data.json,initial_state.pddl}``.

    ``split_dirs`` maps a record split to a directory name (default: the split name itself).
    Returns the written ``game.tw-pddl`` paths.
    """
    paths = []
    for record in records:
        split_dir = (split_dirs or {}).get(record["split"], record["split"])
        game_dir = os.path.join(root, split_dir, record["id"])
        os.makedirs(game_dir, exist_ok=True)
        with open(os.path.join(game_dir, "game.tw-pddl"), "w") as f:
            json.dump(record_to_game(record), f)
        with open(os.path.join(game_dir, "traj_data.json"), "w") as f:
            json.dump(record["traj_data"], f, indent=2, sort_keys=True)
        with open(os.path.join(game_dir, "initial_state.pddl"), "w") as f:
            f.write(record["pddl_problem"])
        paths.append(os.path.join(game_dir, "game.tw-pddl"))
    return paths


def panel_stats(records: Iterable[dict]) -> dict[str, dict[str, float]]:
    """Per task type (and ``"all"``): games per split, mean walkthrough length, mean receptacles,
    openable (closed at start) receptacles and objects per room, read from the PDDL problems.

    >>> panel_stats([{"split": "train", "task_type": "t", "walkthrough": ["a", "b"],
    ...               "pddl_problem": "x - receptacle\\n(openable x)\\ny - object"}])["all"]["receptacles"]
    1.0
    """
    rows: dict[str, list[dict]] = {}
    for r in records:
        problem = r["pddl_problem"]
        row = {
            "split": r["split"],
            "walkthrough": len(r["walkthrough"]),
            "receptacles": problem.count(" - receptacle"),
            "openable": problem.count("(openable "),
            "objects": problem.count(" - object"),
        }
        rows.setdefault(r["task_type"], []).append(row)
        rows.setdefault("all", []).append(row)
    out = {}
    for key, rs in rows.items():
        stats: dict[str, float] = {}
        for split in sorted({x["split"] for x in rs}):
            stats[f"games_{split}"] = sum(x["split"] == split for x in rs)
        for field in ("walkthrough", "receptacles", "openable", "objects"):
            stats[field] = sum(x[field] for x in rs) / len(rs)
        out[key] = stats
    return out
