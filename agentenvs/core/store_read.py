"""The readers of :mod:`agentenvs.core.store` (docs/store.md): stored groups back, filtered.

This module holds:

* :func:`read_groups` - the stored groups of a store directory, filtered by run, iteration, task,
  method and success; it returns a :class:`GroupReader`, which counts the records it skipped.
* :class:`GroupReader` - the iterator of stored groups that counts what it skipped.
* :func:`list_runs` - the runs of a store directory.
"""

from __future__ import annotations

import json
import numbers
import os
import warnings
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agentenvs.core.store_format import (
    CRC_MARK,
    META_FIELDS,
    StoredGroup,
    load_pyarrow,
    parse_line,
    part_files,
    row_bytes,
    well_formed,
)
from agentenvs.core.trajectory import Trajectory

__all__ = ["GroupReader", "read_groups", "list_runs"]


def _store_root(root: str | os.PathLike) -> Path:
    path = Path(root)
    if not path.is_dir():
        raise ValueError(f"no trajectory store at {path}: not a directory")
    return path


def list_runs(root: str | os.PathLike) -> list[str]:
    """The runs stored under ``root`` (``<run>.jsonl`` files and ``<run>/`` Parquet
    directories), sorted.

    Raises:
        ValueError: ``root`` is not a directory.
    """
    path = _store_root(root)
    runs = set()
    for entry in path.iterdir():
        if entry.is_dir():
            runs.add(entry.name)
        elif entry.is_file() and entry.name.endswith(".jsonl") and len(entry.name) > 6:
            runs.add(entry.name[: -len(".jsonl")])
    return sorted(runs)


def _values(name: str, value: Any, kind: type, label: str) -> frozenset[Any] | None:
    """A filter argument as a set of accepted values (``None``: no filter)."""
    if value is None:
        return None
    single = isinstance(value, (str, numbers.Integral)) and not isinstance(value, bool)
    if not single and (not isinstance(value, Iterable) or isinstance(value, (bytes, dict))):
        raise ValueError(f"{name} takes a value or a collection of values, got {value!r}")
    accepted = set()
    for v in [value] if single else value:
        if v is not None and (isinstance(v, bool) or not isinstance(v, kind)):
            raise ValueError(f"{name} takes {label} values (or None in a collection), got {v!r}")
        accepted.add(int(v) if isinstance(v, numbers.Integral) else v)
    return frozenset(accepted)


@dataclass(frozen=True)
class _Filter:
    iteration: frozenset[Any] | None
    task: frozenset[Any] | None
    method: frozenset[Any] | None
    success: bool | None

    def select(self, meta: dict[str, Any]) -> bool:
        return (
            (self.iteration is None or meta["iteration"] in self.iteration)
            and (self.task is None or meta["task_id"] in self.task)
            and (self.method is None or meta["method"] in self.method)
        )

    def group(self, meta: dict[str, Any], trajectories: list[dict[str, Any]]) -> StoredGroup | None:
        if self.success is not None:
            trajectories = [t for t in trajectories if bool(t["success"]) == self.success]
            if not trajectories:
                return None
        return StoredGroup(
            run=meta["run"],
            iteration=meta["iteration"],
            method=meta["method"],
            group_id=meta["group_id"],
            task_id=meta["task_id"],
            time=float(meta["time"]),
            trajectories=[Trajectory.from_dict(t) for t in trajectories],
        )


class GroupReader(Iterator[StoredGroup]):
    """The groups :func:`read_groups` yields, read lazily, file by file.

    Attributes:
        skipped: records skipped so far as torn, damaged or unreadable: a JSON line without its
            newline (a writer killed mid-write), one that fails its checksum or is not a
            well-formed group (a line holding several records' checksums counts as that many), a
            Parquet row that fails its checksum, the rows of a Parquet part pyarrow cannot read.
        skipped_at: where each skip was (``"path:line"``, ``"path:row i"`` or the part's path).
    """

    def __init__(self, sources: list[tuple[str, Path]], select: _Filter) -> None:
        self.skipped = 0
        self.skipped_at: list[str] = []
        self._groups = self._read(sources, select)

    def __iter__(self) -> GroupReader:
        return self

    def __next__(self) -> StoredGroup:
        return next(self._groups)

    def _skip(self, where: str, records: int = 1) -> None:
        self.skipped += records
        self.skipped_at.append(where)

    def _read(self, sources: list[tuple[str, Path]], select: _Filter) -> Iterator[StoredGroup]:
        for fmt, path in sources:
            if fmt == "jsonl":
                yield from self._read_jsonl(path, select)
            else:
                yield from self._read_part(path, select)

    def _read_jsonl(self, path: Path, select: _Filter) -> Iterator[StoredGroup]:
        with open(path, "rb") as f:
            for line_no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                record = parse_line(line)
                if record is None:
                    self._skip(f"{path}:{line_no}", max(1, line.count(CRC_MARK)))
                elif select.select(record):
                    yield from self._group(
                        f"{path}:{line_no}", select, record, record["trajectories"]
                    )

    def _read_part(self, path: Path, select: _Filter) -> Iterator[StoredGroup]:
        _, pq = load_pyarrow()
        try:
            table = pq.read_table(path)
            meta = {k: table.column(k).to_pylist() for k in META_FIELDS}
            texts = table.column("trajectories").to_pylist()
            version = (table.schema.metadata or {}).get(b"agentenvs.store")
            crcs = table.column("crc").to_pylist() if version != b"1" else [None] * len(texts)
        except Exception as err:  # noqa: BLE001 - pyarrow raises many kinds on a damaged file
            warnings.warn(f"skipping the unreadable Parquet part {path}: {err}", stacklevel=3)
            self._skip(str(path), _row_count(path))
            return
        for i, (text, crc) in enumerate(zip(texts, crcs, strict=True)):
            row = {k: meta[k][i] for k in META_FIELDS}
            readable = well_formed(row) and isinstance(text, str)
            checked = crc is None and version == b"1"  # version 1: no checksum to match
            if readable and not checked:
                checked = crc == zlib.crc32(row_bytes(row, text))
            if not (readable and checked):
                self._skip(f"{path}:row {i}")
            elif select.select(row):
                yield from self._group(f"{path}:row {i}", select, row, text)

    def _group(
        self, where: str, select: _Filter, meta: dict[str, Any], trajectories: Any
    ) -> Iterator[StoredGroup]:
        """The selected group of a checked record (none, if filtered out); a record that still
        does not make a group (a version-1 record, unchecked) is skipped."""
        try:
            if isinstance(trajectories, str):
                trajectories = json.loads(trajectories)
            group = select.group(meta, trajectories)
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
            self._skip(where)
            return
        if group is not None:
            yield group


def _row_count(path: Path) -> int:
    """The rows a damaged Parquet part held, from its footer (1 when that is unreadable too)."""
    _, pq = load_pyarrow()
    try:
        return max(1, int(pq.ParquetFile(path).metadata.num_rows))
    except Exception:  # noqa: BLE001 - pyarrow raises many kinds on a damaged file
        return 1


def read_groups(
    root: str | os.PathLike,
    *,
    run: str | Iterable[str] | None = None,
    iteration: int | Iterable[int | None] | None = None,
    task: str | Iterable[str] | None = None,
    method: str | Iterable[str | None] | None = None,
    success: bool | None = None,
) -> GroupReader:
    """The groups stored under ``root`` (both formats), lazily, that pass every filter given.

    Args:
        root: the store directory.
        run, iteration, task, method: a value or a collection of values; ``None`` = any. A
            collection may hold ``None`` (e.g. ``iteration=[None]``: the groups stored without
            an iteration). ``task`` matches the group's task id.
        success: ``True`` keeps only the successful trajectories of each group, ``False`` only
            the failed ones, dropping groups left empty; ``None`` keeps all.

    Order: runs by name; within a run its JSON lines in file order, then its Parquet parts in part
    order, each in row order (append order for one writer).

    Raises:
        ValueError: ``root`` is not a directory, a named run is not stored, or a filter value of
            the wrong type. Torn, damaged or foreign records are skipped, never an error: see
            :attr:`GroupReader.skipped`.
        ImportError: a Parquet run without pyarrow installed.
    """
    path = _store_root(root)
    runs = _values("run", run, str, "str")
    if success is not None:
        if not isinstance(success, (bool, np.bool_)):
            raise ValueError(f"success must be True, False or None, got {success!r}")
        success = bool(success)
    select = _Filter(
        iteration=_values("iteration", iteration, numbers.Integral, "int"),
        task=_values("task", task, str, "str"),
        method=_values("method", method, str, "str"),
        success=success,
    )
    stored = list_runs(path)
    if runs is not None and not runs <= set(stored):
        missing = sorted(map(str, runs - set(stored)))
        raise ValueError(f"no run {missing} in the store at {path}; stored runs: {stored}")
    sources: list[tuple[str, Path]] = []
    for name in stored:
        if runs is not None and name not in runs:
            continue
        if (path / f"{name}.jsonl").is_file():
            sources.append(("jsonl", path / f"{name}.jsonl"))
        if (path / name).is_dir():
            parts = part_files(path / name)
            if parts:
                load_pyarrow()
            sources += [("parquet", part) for _, part in parts]
    return GroupReader(sources, select)
