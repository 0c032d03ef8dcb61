"""The on-disk record format of :mod:`agentenvs.core.store` (docs/store.md): the layout, the
checksums and the checks a record must pass, shared by the writer and the reader.

This module holds:

* :data:`STORE_FORMATS` - ``("jsonl", "parquet")``.
* :class:`StoredGroup` - one group read back, with what was stored beside it.
* private helpers: the record version and metadata keys, the Parquet schema and part names, run
  name checks, directory fsync, a JSON line's encoding with its CRC-32 and its checked parsing,
  a Parquet row's checksummed bytes and the well-formedness check of a record's metadata.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentenvs.core.jsonl import dumps_line
from agentenvs.core.trajectory import Trajectory

__all__ = ["STORE_FORMATS", "StoredGroup"]

#: The on-disk formats: JSON lines (no dependency) and Parquet (pyarrow).
STORE_FORMATS = ("jsonl", "parquet")

FORMAT_VERSION = 2  # the record format: 2 adds the checksums
META_FIELDS = ("run", "iteration", "method", "group_id", "task_id", "time")
_PART = re.compile(r"part-(\d+)\.parquet")
_CRC_SUFFIX = re.compile(rb', "crc": "([0-9a-f]{8})"\}\n\Z')
CRC_MARK = b', "crc": "'


@dataclass
class StoredGroup:
    """One credited group as stored.

    Attributes:
        run: the run it was written under.
        iteration: the writer's iteration (the LLM learner's, 1-based, the ``metrics.csv`` row);
            ``None`` when none was given (the credit wrappers give none).
        method: the credit method's canonical name; ``None`` when none was given.
        group_id: the group's id (its first trajectory's ``group_id``).
        task_id: the task the group played.
        time: unix seconds when the group was appended.
        trajectories: the group's trajectories in stored order (with a ``success`` filter, only
            those that match), each ``Step.advantage`` as credited.
    """

    run: str
    iteration: int | None
    method: str | None
    group_id: str
    task_id: str
    time: float
    trajectories: list[Trajectory] = field(default_factory=list)


def load_pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as err:
        raise ImportError(
            "the Parquet trajectory store needs pyarrow: pip install pyarrow"
        ) from err
    return pa, pq


def arrow_schema(pa: Any) -> Any:
    return pa.schema(
        [
            ("run", pa.string()),
            ("iteration", pa.int64()),
            ("method", pa.string()),
            ("group_id", pa.string()),
            ("task_id", pa.string()),
            ("time", pa.float64()),
            ("trajectories", pa.large_string()),
            ("crc", pa.int64()),
        ],
        metadata={b"agentenvs.store": str(FORMAT_VERSION).encode()},
    )


def check_run(run: Any) -> str:
    if (
        not isinstance(run, str)
        or run in ("", ".", "..")
        or "/" in run
        or os.sep in run
        or "\0" in run
        or run.endswith(".tmp")
    ):
        raise ValueError(
            f"run must be a file name (not empty, no path separator, not ending in .tmp), got {run!r}"
        )
    return run


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (a new or renamed file) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def part_files(run_dir: Path) -> list[tuple[int, Path]]:
    """The published Parquet parts of a run directory, in part order."""
    found = [(int(m.group(1)), p) for p in run_dir.iterdir() if (m := _PART.fullmatch(p.name))]
    return sorted(found)


def encode_line(record: dict[str, Any]) -> bytes:
    """``record`` as one JSON line ending in its ``crc`` (see the module docstring)."""
    body = dumps_line(record).rstrip("\n").encode("utf-8")
    return body[:-1] + CRC_MARK + b"%08x" % zlib.crc32(body) + b'"}\n'


def parse_line(line: bytes) -> dict[str, Any] | None:
    """A JSON line's record, or ``None`` when the line is torn, fails its checksum, or is not a
    well-formed record (version 1 lines, without a checksum, are validated only)."""
    found = _CRC_SUFFIX.search(line)
    body = line[: found.start()] + b"}" if found else line
    if found and zlib.crc32(body) != int(found.group(1), 16):
        return None
    try:
        record = json.loads(body)
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError
        return None
    if not line.endswith(b"\n") or not well_formed(record):
        return None
    if not isinstance(record.get("trajectories"), list):
        return None
    if record["v"] != (FORMAT_VERSION if found else 1) or "crc" in record:
        return None
    return record


def row_bytes(row: dict[str, Any], text: str) -> bytes:
    """A Parquet row's values (its metadata, and the ``trajectories`` JSON ``text``) as the bytes
    its ``crc`` covers."""
    return json.dumps([*(row[k] for k in META_FIELDS), text]).encode("utf-8")


def well_formed(record: Any) -> bool:
    """Whether ``record`` has a group's metadata keys (:data:`META_FIELDS`) with the stored types."""
    if not isinstance(record, dict):
        return False
    iteration, run_time = record.get("iteration"), record.get("time")
    return (
        all(isinstance(record.get(k), str) for k in ("run", "group_id", "task_id"))
        and (iteration is None or (isinstance(iteration, int) and not isinstance(iteration, bool)))
        and (record.get("method") is None or isinstance(record["method"], str))
        and isinstance(run_time, (int, float))
        and not isinstance(run_time, bool)
    )
