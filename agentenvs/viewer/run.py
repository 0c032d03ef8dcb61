"""Loading a run directory: its stored credited groups and its ``metrics.csv``.

This module holds :class:`RunData`, :func:`load_run`, :func:`read_metrics` and
:class:`NotARunError`.

A run directory is what the LLM learner writes to ``--out``: ``trajectories/`` (the trajectory
store, :mod:`agentenvs.core.store`, one group per credited group, with its iteration and credit
method), ``metrics.csv`` (one row per iteration) and ``config.json``. Either of the first two is
enough; a directory with neither is a :class:`NotARunError`. To view groups a credit wrapper
stored, give it ``TrajectoryStore(run_dir / "trajectories")``. Every run stored under
``trajectories/`` is read (a learner writes one, named after the directory).

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "metrics.csv").write_text("iteration,success_rate\\n1,0.25\\n2,\\n")
>>> run = load_run(d)
>>> run.metrics, run.groups
([{'iteration': 1.0, 'success_rate': 0.25}, {'iteration': 2.0}], [])
>>> load_run(d / "nothing")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
agentenvs.viewer.run.NotARunError: ... is not a run directory: no trajectories/ and no metrics.csv in it
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentenvs.core.store import StoredGroup, list_runs, read_groups

__all__ = ["RunData", "NotARunError", "load_run", "read_metrics", "store_dir"]


class NotARunError(ValueError):
    """The directory holds neither a trajectory store nor a ``metrics.csv``."""


@dataclass
class RunData:
    """What the viewer shows of one run directory.

    Attributes:
        path: the run directory.
        name: its name (the directory's).
        groups: the newest ``max_groups`` stored groups, newest first.
        total_groups: groups in the store (all of them, shown or not).
        methods: how many stored groups each credit method credited (``None``: no method stored).
        metrics: the ``metrics.csv`` rows in file order, each ``{column: float}`` (empty cells left
            out); ``[]`` without the file.
        config: ``config.json`` when present (the learner's run config), else ``{}``.
        skipped: torn store records skipped while reading (a writer killed mid-write).
    """

    path: Path
    name: str
    groups: list[StoredGroup] = field(default_factory=list)
    total_groups: int = 0
    methods: dict[str | None, int] = field(default_factory=dict)
    metrics: list[dict[str, float]] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    skipped: int = 0

    @property
    def method(self) -> str | None:
        """The run's credit method: the one that credited most stored groups (``None``: unknown)."""
        named = {m: n for m, n in self.methods.items() if m is not None}
        return max(named, key=named.__getitem__) if named else None


def store_dir(run_dir: str | os.PathLike) -> Path | None:
    """``run_dir/trajectories`` when it is a directory, else ``None``."""
    path = Path(run_dir) / "trajectories"
    return path if path.is_dir() else None


def read_metrics(path: str | os.PathLike) -> list[dict[str, float]]:
    """The rows of a ``metrics.csv``, each ``{column: float}`` without empty or non-numeric cells.

    Raises:
        ValueError: the file has no header.
    """
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if not reader.fieldnames:
            return []
        rows = []
        for raw in reader:
            row = {}
            for key, value in raw.items():
                if key is None or value in (None, ""):
                    continue
                try:
                    number = float(value)
                except ValueError:
                    continue
                if not math.isnan(number):
                    row[key] = number
            rows.append(row)
    return rows


def load_run(run_dir: str | os.PathLike, max_groups: int = 50) -> RunData:
    """Read ``run_dir`` (see the module docstring); keeps the newest ``max_groups`` groups.

    Raises:
        NotARunError: ``run_dir`` is not a directory, or holds no store and no ``metrics.csv``.
        ValueError: ``max_groups < 0``, or a store file that is not a store record.
    """
    if max_groups < 0:
        raise ValueError(f"max_groups must be >= 0, got {max_groups}")
    path = Path(run_dir)
    store = store_dir(path)
    metrics_file = path / "metrics.csv"
    if store is None and not metrics_file.is_file():
        raise NotARunError(
            f"{path} is not a run directory: no trajectories/ and no metrics.csv in it"
        )
    run = RunData(path=path, name=path.resolve().name)
    if metrics_file.is_file():
        run.metrics = read_metrics(metrics_file)
    config_file = path / "config.json"
    if config_file.is_file():
        try:
            config = json.loads(config_file.read_text())
            run.config = config if isinstance(config, dict) else {}
        except (OSError, ValueError):
            run.config = {}
    if store is not None and list_runs(store):
        reader = read_groups(store)
        newest: deque[StoredGroup] = deque(maxlen=max_groups)
        methods: Counter[str | None] = Counter()
        for group in reader:
            newest.append(group)
            methods[group.method] += 1
        run.groups = sorted(newest, key=lambda g: g.time, reverse=True)
        run.total_groups = sum(methods.values())
        run.methods = dict(methods)
        run.skipped = reader.skipped
    return run
