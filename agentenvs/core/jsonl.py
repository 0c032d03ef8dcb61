"""Trajectory storage as JSON lines, one trajectory per line (gzip when the path ends in ``.gz``).

This module holds :class:`TrajectoryWriter`, :func:`write_trajectories` and
:func:`read_trajectories`, and the two line-level pieces they share with the crash-safe
:mod:`agentenvs.core.store`: :func:`dumps_line` (one record as one line) and :func:`append_line`
(a durable append of a whole line to an ``O_APPEND`` file descriptor). The round trip is lossless
for everything :func:`agentenvs.core.encode` supports (text, numbers, bytes, tuples, numpy arrays).
A record written before a ``Step`` field existed loads with that field's default (``Step.cost`` =
1.0).

Example:
    >>> import tempfile, os
    >>> from agentenvs.core import Step, Trajectory
    >>> path = os.path.join(tempfile.mkdtemp(), "run.jsonl.gz")
    >>> t = Trajectory("train-1", "g0", [Step("obs", "up", -0.1)], success=False)
    >>> write_trajectories(path, [t, t])
    2
    >>> [x == t for x in read_trajectories(path)]
    [True, True]
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable, Iterator
from typing import IO, Any, cast

from agentenvs.core.trajectory import Trajectory

__all__ = [
    "TrajectoryWriter",
    "write_trajectories",
    "read_trajectories",
    "dumps_line",
    "append_line",
]


def dumps_line(record: Any) -> str:
    """``record`` (JSON-compatible) as one line of text: JSON with non-ASCII text kept as is and
    the trailing newline.

    >>> line = dumps_line({"task_id": "t", "obs": "caf\u00e9"})
    >>> line.endswith("}" + chr(10)), "caf\u00e9" in line
    (True, True)
    """
    return json.dumps(record, ensure_ascii=False) + "\n"


def append_line(fd: int, line: bytes, sync: bool = True) -> None:
    """Append ``line`` (whole, newline included) to the file open at ``fd`` with ``O_APPEND``: one
    ``os.write`` of all its bytes (repeated for the rest only after a short write), then
    ``os.fsync`` when ``sync``.

    A process killed before this returns leaves at most a partial last line (no newline); a line
    whose write returned is in the OS page cache (safe from a process crash), and after the fsync
    on disk (safe from a power loss).
    """
    view = memoryview(line)
    while view:
        view = view[os.write(fd, view) :]
    if sync:
        os.fsync(fd)


def _open(path: str | os.PathLike, mode: str) -> IO[str]:
    if os.fspath(path).endswith(".gz"):
        return cast(IO[str], gzip.open(path, mode + "t", encoding="utf-8"))  # text mode
    return open(path, mode, encoding="utf-8")


class TrajectoryWriter:
    """Append trajectories to a JSON-lines file; use as a context manager.

    Args:
        path: target file; ``.gz`` suffix selects gzip compression.
        append: append to an existing file instead of truncating it.
    """

    def __init__(self, path: str | os.PathLike, append: bool = False) -> None:
        self._file = _open(path, "a" if append else "w")
        self.count = 0

    def write(self, trajectory: Trajectory) -> None:
        self._file.write(dumps_line(trajectory.to_dict()))
        self.count += 1

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> TrajectoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_trajectories(path: str | os.PathLike, trajectories: Iterable[Trajectory]) -> int:
    """Write all ``trajectories`` to ``path`` (overwriting); returns how many were written."""
    with TrajectoryWriter(path) as writer:
        for trajectory in trajectories:
            writer.write(trajectory)
        return writer.count


def read_trajectories(path: str | os.PathLike) -> Iterator[Trajectory]:
    """Yield the trajectories stored in ``path``, in file order (blank lines are skipped)."""
    with _open(path, "r") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield Trajectory.from_dict(json.loads(line))
            except (ValueError, KeyError, TypeError) as err:
                raise ValueError(
                    f"{os.fspath(path)}:{line_no}: not a trajectory record ({err})"
                ) from err
