"""Host state left behind by a killed SWE process, tagged with its owner and reclaimed later
(docs/swe.md, *Host resources*).

A process killed by ``SIGKILL`` (or by ``SIGTERM`` without a handler) runs no finalizer, so its
workspace tmpfs mounts and temporary directories stay. Every such directory is named with its
owner's :func:`owner_tag` (``agentenvs-<kind>-<tag>-...``), and :func:`reclaim_stale` (run when an
``SWEEnv`` starts) unmounts and removes those whose owner is gone.

This module holds:

* :func:`owner_tag` - this process's tag: PID namespace, PID and start time.
* :func:`tagged_prefix` - the ``mkdtemp`` prefix of a host directory of a given kind.
* :func:`owner_alive` - whether the process a tag names still runs.
* :func:`reclaim_stale` - unmount and remove the tagged directories of dead owners.

>>> tagged_prefix("etc").startswith(f"agentenvs-etc-{owner_tag()}-")
True
>>> owner_alive(owner_tag())
True
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import tempfile

__all__ = ["KINDS", "owner_tag", "tagged_prefix", "owner_alive", "reclaim_stale"]

#: The kinds of tagged host directories: workspaces (``swe``), ``/etc`` copies (``etc``), grading
#: plugin and report directories (``grade``), diff object stores (``diff``), local homes (``home``).
KINDS = ("swe", "etc", "grade", "diff", "home")
_TAGGED = re.compile(rf"^agentenvs-(?:{'|'.join(KINDS)})-(\d+\.\d+\.\d+)-")


def _start_time(pid: int | str) -> int | None:
    """Field 22 of ``/proc/<pid>/stat`` (clock ticks after boot), ``None`` without the process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[19]) if len(fields) > 19 else None


def _pid_namespace() -> int:
    """The inode of this process's PID namespace (0 where ``/proc`` does not tell)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


@functools.cache
def _tag_of(pid: int) -> str:
    return f"{_pid_namespace()}.{pid}.{_start_time(pid) or 0}"


def owner_tag() -> str:
    """``<pid namespace inode>.<pid>.<start time>`` of this process (a PID and its start time
    name one process; the namespace says whose PIDs these are)."""
    return _tag_of(os.getpid())


def tagged_prefix(kind: str) -> str:
    """The ``tempfile.mkdtemp`` prefix of a host directory of ``kind`` (one of :data:`KINDS`)
    owned by this process."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return f"agentenvs-{kind}-{owner_tag()}-"


def owner_alive(tag: str) -> bool | None:
    """Whether the process ``tag`` names still runs; ``None`` when it cannot be told (another PID
    namespace, or a malformed tag): such a directory is never reclaimed."""
    try:
        namespace, pid, start = (int(part) for part in tag.split("."))
    except ValueError:
        return None
    if namespace != _pid_namespace() or namespace == 0:
        return None
    return _start_time(pid) == start


def _mount_points() -> list[str]:
    """The mount points of ``agentenvs`` tmpfs file systems in this mount namespace."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) > 4 and tail[:2] == ["tmpfs", "agentenvs"]:
            found.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4]))
    return found


def reclaim_stale(directory: str | os.PathLike[str] | None = None) -> list[str]:
    """Unmount and remove the tagged directories directly in ``directory`` (default: the system
    temporary directory) whose owner is gone (:func:`owner_alive` is false); the paths
    reclaimed. Mounts need root (elsewhere only directories are removed); nothing raises."""
    from agentenvs.swe.workspace import _MNT_DETACH, _libc, _remove_tree  # (imports this module)

    top = os.path.realpath(directory if directory is not None else tempfile.gettempdir())
    dead: dict[str, bool | None] = {}

    def stale(name: str) -> bool:
        match = _TAGGED.match(name)
        if match is None:
            return False
        tag = match[1]
        if tag not in dead:
            dead[tag] = owner_alive(tag) is False
        return bool(dead[tag])

    mounted = set()
    for point in _mount_points():
        if os.path.dirname(point) != top or not stale(os.path.basename(point)):
            mounted.add(point)
            continue
        with contextlib.suppress(AttributeError, OSError):
            if _libc().umount2(os.fsencode(point), _MNT_DETACH) != 0:
                mounted.add(point)
    reclaimed = []
    try:
        names = os.listdir(top)
    except OSError:
        return reclaimed
    for name in names:
        path = os.path.join(top, name)
        if path not in mounted and stale(name):
            _remove_tree(path)
            if not os.path.lexists(path):
                reclaimed.append(path)
    return sorted(reclaimed)
