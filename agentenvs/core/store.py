"""An append-only, crash-safe store of credited groups, and its filtered reader.

This module holds:

* :class:`TrajectoryStore` - the writer: one credited group (a list of
  :class:`~agentenvs.core.Trajectory`, each ``Step.advantage`` set) per :meth:`~TrajectoryStore.append`,
  durable when the call returns.
* :func:`read_groups` - the stored groups of a store directory, filtered by run, iteration, task,
  method and success; it returns a :class:`GroupReader`, which counts the records it skipped.
* :class:`StoredGroup` - one group read back, with what was stored beside it.
* :func:`list_runs` - the runs of a store directory.
* :data:`STORE_FORMATS` - ``("jsonl", "parquet")``.

The record format (:data:`STORE_FORMATS`, :class:`StoredGroup`, checksums) lives in
:mod:`agentenvs.core.store_format`, the readers (:func:`read_groups`, :class:`GroupReader`,
:func:`list_runs`) in :mod:`agentenvs.core.store_read`; this module re-exports them.

Layout under ``root`` (a directory that holds the store only):

* JSON lines: ``root/<run>.jsonl``, one group per line: ``{"v": 2, "run", "iteration", "method",
  "group_id", "task_id", "time", "trajectories": [Trajectory.to_dict(), ...], "crc": "<8 hex>"}``.
  ``crc`` is the CRC-32 of the line's exact bytes without it: everything before ``, "crc"``, then
  ``}``.
* Parquet (needs pyarrow): ``root/<run>/part-<n>.parquet`` (``n`` zero-padded to 6 digits), one row
  per group, columns ``run``, ``iteration`` (int64, null when none), ``method``, ``group_id``,
  ``task_id``, ``time``, ``trajectories`` (the JSON text of the ``Trajectory.to_dict()`` list) and
  ``crc`` (int64: the CRC-32 of the row's other values, :func:`~agentenvs.core.store_format.row_bytes`), zstd-compressed; one
  part per append (or per ``flush_every`` appends); the schema's metadata holds
  ``agentenvs.store: 2``.

Integrity. A record (a JSON line, a Parquet row) whose checksum does not match, or that is not a
well-formed group, is skipped and counted in :attr:`GroupReader.skipped`, never returned and never
raised; the records after it are read as usual. A CRC-32 catches every change of up to 4
consecutive bytes, so a flipped byte never comes back as a silently wrong value. A Parquet part
pyarrow cannot read loses its rows (counted, by the row count of its footer when that is
readable, else as one). Version-1 records (written before checksums: JSON lines with ``"v": 1``
and no ``crc``, parts without a ``crc`` column) are still read, validated but unchecked.

Crash safety. A JSON line is written with one ``os.write`` of the whole encoded line on an
``O_APPEND`` descriptor, then ``os.fsync`` (``sync=False`` skips the fsync: still safe from a killed
process, not from a power loss). A writer killed mid-line leaves a partial last line; readers skip
it (and any line that fails its checksum, which is what a partial line becomes once a later writer
ends it with a newline) and count it in :attr:`GroupReader.skipped`. A Parquet part is written under a
hidden ``.part-*.tmp`` name, fsynced, and published under its final name atomically (a hard link,
which never overwrites another writer's part, or a rename where the filesystem has no hard links);
readers never look at ``*.tmp``. Groups buffered for ``flush_every > 1`` are not durable until
their part is written.

>>> import tempfile
>>> from agentenvs.core import Step, Trajectory
>>> root = tempfile.mkdtemp()
>>> won = Trajectory("seed-1", "seed-1#0", [Step("o", "up", 10.0, advantage=1.0)], success=True)
>>> lost = Trajectory("seed-1", "seed-1#0", [Step("o", "down", -0.1, advantage=-1.0)], traj_id="1")
>>> with TrajectoryStore(root, run="demo") as store:
...     store.append([won, lost], method="grpo", iteration=1)
>>> [g] = read_groups(root, method="grpo", iteration=[1, 2], success=True)
>>> g.run, g.iteration, g.group_id, [t.steps[0].advantage for t in g.trajectories]
('demo', 1, 'seed-1#0', [1.0])
>>> list_runs(root)
['demo']
"""

from __future__ import annotations

import json
import numbers
import os
import tempfile
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentenvs.core.jsonl import append_line
from agentenvs.core.store_format import (
    FORMAT_VERSION,
    META_FIELDS,
    STORE_FORMATS,
    StoredGroup,
    arrow_schema,
    check_run,
    encode_line,
    fsync_dir,
    load_pyarrow,
    parse_line,
    part_files,
    row_bytes,
)
from agentenvs.core.store_read import GroupReader, list_runs, read_groups
from agentenvs.core.trajectory import Trajectory

__all__ = [
    "STORE_FORMATS",
    "TrajectoryStore",
    "StoredGroup",
    "GroupReader",
    "read_groups",
    "list_runs",
]


class TrajectoryStore:
    """Append-only, crash-safe store of credited groups under directory ``root``.

    Args:
        root: the store directory (created if missing); it holds the store only.
        run: the run's name, a file name: groups go to ``root/<run>.jsonl`` or ``root/<run>/``;
            an existing run is appended to.
        fmt: ``"jsonl"`` or ``"parquet"`` (needs pyarrow).
        drop_extras: ``Step.extras`` keys not written (e.g. the learner's token ids and
            log-probs); the trajectories given to :meth:`append` are never changed.
        sync: fsync every append (and Parquet's directory after each part); ``False`` still
            survives a killed process (the data is in the OS page cache), not a power loss.
        flush_every: Parquet only: groups per part file; the buffered groups (fewer than
            ``flush_every``) are not durable until :meth:`flush` or :meth:`close`.

    One writer per run at a time is the intended use; several JSON-lines writers of one run
    interleave whole lines, several Parquet writers never overwrite each other's parts, and
    :meth:`truncate` needs the run to itself. Use it as a context manager or call :meth:`close`.

    Attributes:
        path: the run's file (JSON lines) or directory (Parquet). count: groups appended by
        this writer. root, run, fmt, sync, flush_every: as given.
    """

    def __init__(
        self,
        root: str | os.PathLike,
        run: str = "run",
        fmt: str = "jsonl",
        drop_extras: Sequence[str] = (),
        *,
        sync: bool = True,
        flush_every: int = 1,
    ) -> None:
        if fmt not in STORE_FORMATS:
            raise ValueError(f"fmt must be one of {STORE_FORMATS}, got {fmt!r}")
        self.run = check_run(run)
        drop = () if isinstance(drop_extras, str) else tuple(drop_extras)
        if isinstance(drop_extras, str) or not all(isinstance(k, str) for k in drop):
            raise ValueError(f"drop_extras must be a sequence of key names, got {drop_extras!r}")
        if isinstance(flush_every, bool) or not isinstance(flush_every, int) or flush_every < 1:
            raise ValueError(f"flush_every must be an int >= 1, got {flush_every!r}")
        if fmt == "jsonl" and flush_every != 1:
            raise ValueError("flush_every applies to Parquet; every JSON line is written at once")
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise ValueError(f"the store root {self.root} is not a directory")
        self.root.mkdir(parents=True, exist_ok=True)
        self.fmt = fmt
        self.drop_extras = frozenset(drop)
        self.sync = bool(sync)
        self.flush_every = flush_every
        self.count = 0
        self._buffer: list[dict[str, Any]] = []
        self._fd: int | None = None
        self._closed = False
        if fmt == "jsonl":
            self.path = self.root / f"{run}.jsonl"
            self._open_jsonl()
        else:
            self._pa, self._pq = load_pyarrow()
            self.path = self.root / run
            self.path.mkdir(exist_ok=True)
            parts = part_files(self.path)
            self._next_part = parts[-1][0] + 1 if parts else 0
        if self.sync:
            fsync_dir(self.root)

    def _open_jsonl(self) -> None:
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        size = os.fstat(self._fd).st_size
        if size and os.pread(self._fd, 1, size - 1) != b"\n":
            # a killed writer's partial line: end it, so that it stays one skipped line
            append_line(self._fd, b"\n", self.sync)

    # -- writing -----------------------------------------------------------------------------------
    def append(
        self,
        group: Sequence[Trajectory],
        *,
        method: str | None = None,
        iteration: int | None = None,
    ) -> None:
        """Store one credited ``group`` (trajectories of one task), with the credit ``method``'s
        name and the writer's ``iteration`` (both optional). Durable when it returns (for Parquet
        with ``flush_every > 1``: once its part is written).

        Raises:
            ValueError: an empty group, a member that is not a Trajectory, members of different
                tasks, a bad ``method`` / ``iteration``, or a closed store.
            TypeError: a value in the trajectories that :func:`~agentenvs.core.encode` cannot
                store.
        """
        if self._closed:
            raise ValueError(f"append to a closed TrajectoryStore ({self.path})")
        record = self._record(group, method, iteration)
        if self.fmt == "jsonl":
            assert self._fd is not None  # open while the store is
            append_line(self._fd, encode_line(record), self.sync)
        else:
            self._buffer.append(record)
            if len(self._buffer) >= self.flush_every:
                self.flush()
        self.count += 1

    def _record(self, group: Any, method: Any, iteration: Any) -> dict[str, Any]:
        if isinstance(group, Trajectory) or not isinstance(group, Iterable):
            raise ValueError("append takes a group: a sequence of Trajectory objects")
        group = list(group)
        if not group or not all(isinstance(t, Trajectory) for t in group):
            raise ValueError("a group is a non-empty sequence of Trajectory objects")
        tasks = sorted({str(t.task_id) for t in group})
        if len(tasks) != 1:
            raise ValueError(f"a group plays one task; this one played {tasks}")
        if method is not None and not isinstance(method, str):
            raise ValueError(f"method must be a str or None, got {method!r}")
        if iteration is not None:
            if isinstance(iteration, bool) or not isinstance(iteration, numbers.Integral):
                raise ValueError(f"iteration must be an int >= 0 or None, got {iteration!r}")
            if iteration < 0:
                raise ValueError(f"iteration must be an int >= 0 or None, got {iteration!r}")
            iteration = int(iteration)
        return {
            "v": FORMAT_VERSION,
            "run": self.run,
            "iteration": iteration,
            "method": method,
            "group_id": str(group[0].group_id),
            "task_id": tasks[0],
            "time": time.time(),
            "trajectories": [self._encode(t) for t in group],
        }

    def _encode(self, traj: Trajectory) -> dict[str, Any]:
        drop = self.drop_extras
        if drop and any(k in s.extras for s in traj.steps for k in drop):
            steps = [
                replace(s, extras={k: v for k, v in s.extras.items() if k not in drop})
                for s in traj.steps
            ]
            traj = replace(traj, steps=steps)
        return traj.to_dict()

    def flush(self) -> None:
        """Make every appended group durable: write the Parquet buffer as one part; fsync the
        JSON-lines file (needed with ``sync=False`` only)."""
        if self._closed:
            return
        if self.fmt == "jsonl":
            assert self._fd is not None  # open while the store is
            os.fsync(self._fd)
        elif self._buffer:
            self._write_part(self._buffer)
            self._buffer = []

    def _write_part(self, records: list[dict[str, Any]]) -> Path:
        pa, pq = self._pa, self._pq
        columns: dict[str, list[Any]] = {k: [r[k] for r in records] for k in META_FIELDS}
        columns["trajectories"] = [
            json.dumps(r["trajectories"], ensure_ascii=False) for r in records
        ]
        columns["crc"] = [
            zlib.crc32(row_bytes(r, t))
            for r, t in zip(records, columns["trajectories"], strict=True)
        ]
        table = pa.table(columns, schema=arrow_schema(pa))
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".part-", suffix=".tmp")
        os.close(fd)
        try:
            pq.write_table(table, tmp, compression="zstd")
            if self.sync:
                fd = os.open(tmp, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            final = self._publish(Path(tmp))
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        if self.sync:
            fsync_dir(self.path)
        return final

    def _publish(self, tmp: Path) -> Path:
        """Give the written part ``tmp`` its final name atomically, never over another part."""
        n = self._next_part
        while True:
            final = self.path / f"part-{n:06d}.parquet"
            try:
                os.link(tmp, final)  # fails if the name is taken: another writer's part
            except FileExistsError:
                n = part_files(self.path)[-1][0] + 1
                continue
            except OSError:  # a filesystem without hard links: rename (one writer per run)
                if final.exists():
                    n = part_files(self.path)[-1][0] + 1
                    continue
                os.replace(tmp, final)
            self._next_part = n + 1
            return final

    def truncate(self, last_iteration: int) -> int:
        """Drop this run's groups stored with an iteration after ``last_iteration`` (groups
        without an iteration stay) and any torn JSON line; returns how many groups were dropped.

        A learner resumed from the checkpoint of iteration ``k`` calls ``truncate(k)`` before it
        writes again, so no iteration is stored twice. The file (or each changed part) is
        rewritten under a temporary name and renamed over the old one, so a crash leaves either
        the old or the new content. No other writer may append to the run meanwhile.
        """
        if self._closed:
            raise ValueError(f"truncate a closed TrajectoryStore ({self.path})")
        if isinstance(last_iteration, bool) or not isinstance(last_iteration, numbers.Integral):
            raise ValueError(f"last_iteration must be an int, got {last_iteration!r}")
        self.flush()
        if self.fmt == "jsonl":
            return self._truncate_jsonl(int(last_iteration))
        return self._truncate_parquet(int(last_iteration))

    def _truncate_jsonl(self, last: int) -> int:
        kept: list[bytes] = []
        dropped = torn = 0
        with open(self.path, "rb") as f:
            for line in f:
                if not line.strip():
                    continue
                record = parse_line(line)
                iteration = record.get("iteration") if isinstance(record, dict) else None
                if record is None:
                    torn += 1
                elif iteration is not None and iteration > last:
                    dropped += 1
                else:
                    kept.append(line)
        if not dropped and not torn:
            return 0
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=f".{self.run}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.writelines(kept)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        fsync_dir(self.root)
        assert self._fd is not None  # open while the store is
        os.close(self._fd)
        self._open_jsonl()
        return dropped

    def _truncate_parquet(self, last: int) -> int:
        pa, pq = self._pa, self._pq
        dropped = 0
        for _, part in part_files(self.path):
            try:
                table = pq.read_table(part)
            except Exception:  # noqa: BLE001 - a damaged part stays; readers skip it
                continue
            keep = [it is None or it <= last for it in table.column("iteration").to_pylist()]
            if all(keep):
                continue
            dropped += keep.count(False)
            if not any(keep):
                part.unlink()
                continue
            fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".part-", suffix=".tmp")
            os.close(fd)
            try:
                pq.write_table(table.filter(pa.array(keep)), tmp, compression="zstd")
                os.replace(tmp, part)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        fsync_dir(self.path)
        return dropped

    def close(self) -> None:
        """Write any buffered Parquet groups, fsync, and release the file; idempotent."""
        if self._closed:
            return
        try:
            self.flush()
        finally:
            self._closed = True
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> TrajectoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TrajectoryStore({str(self.root)!r}, run={self.run!r}, fmt={self.fmt!r})"
