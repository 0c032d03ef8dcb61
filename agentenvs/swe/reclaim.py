"""Host state left behind by a killed SWE process, tagged with its owner and reclaimed later
(docs/swe.md, *Host resources*).

A process killed by ``SIGKILL`` (or by ``SIGTERM`` without a handler) runs no finalizer, so its
workspace tmpfs mounts and temporary directories stay. Each carries its owner's
:func:`owner_tag`: a workspace tmpfs in its mount source (``agentenvs-<tag>``, its directory keeps
a short name, as paths inside it must fit ``AF_UNIX``'s 108 bytes), the other host directories
(``/etc`` copies, grading and diff directories, local homes) in their name
(``agentenvs-<kind>-<tag>-...``). :func:`reclaim_stale` (run when an ``SWEEnv`` starts) unmounts
and removes those whose owner is gone.

This module holds:

* :func:`owner_tag` - this process's tag: PID namespace, PID and start time.
* :func:`tagged_prefix` - the ``mkdtemp`` prefix of a host directory of a given kind.
* :func:`mount_source` - the source name of this process's workspace tmpfs mounts.
* :func:`owner_alive` - whether the process a tag names still runs.
* :func:`reclaim_stale` - unmount and remove what dead owners left.

>>> tagged_prefix("etc") == f"agentenvs-etc-{owner_tag()}-", mount_source()[10:] == owner_tag()
(True, True)
>>> owner_alive(owner_tag())
True
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import tempfile

__all__ = ["KINDS", "owner_tag", "tagged_prefix", "mount_source", "owner_alive", "reclaim_stale"]

#: The kinds of tagged host directories: ``/etc`` copies (``etc``), grading plugin and report
#: directories (``grade``), diff object stores (``diff``), local sandbox homes (``home``).
KINDS = ("etc", "grade", "diff", "home")
_TAG = r"(\d+\.\d+\.\d+)"
_TAGGED = re.compile(rf"^agentenvs-(?:{'|'.join(KINDS)})-{_TAG}-")
_SOURCE = re.compile(rf"^agentenvs-{_TAG}$")


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


def mount_source() -> str:
    """``agentenvs-<tag>``: the source name of the workspace tmpfs mounts this process makes."""
    return f"agentenvs-{owner_tag()}"


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


def _mount_points() -> list[tuple[str, str]]:
    """``(mount point, owner tag)`` of the workspace tmpfs mounts in this mount namespace."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        source = _SOURCE.match(tail[1]) if len(tail) > 1 and tail[0] == "tmpfs" else None
        if len(fields) > 4 and source is not None:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4])
            found.append((point, source[1]))
    return found


def reclaim_stale(directory: str | os.PathLike[str] | None = None) -> list[str]:
    """Reclaim what owners that are gone (:func:`owner_alive` is false) left: unmount their
    workspace tmpfs mounts (anywhere in this mount namespace; root only) and remove those
    workspace directories, and remove their tagged directories directly in ``directory``
    (default: the system temporary directory). The paths reclaimed; nothing raises."""
    from agentenvs.swe.workspace import MNT_DETACH, libc, remove_tree  # (imports this module)

    dead: dict[str, bool] = {}

    def gone(tag: str) -> bool:
        if tag not in dead:
            dead[tag] = owner_alive(tag) is False
        return dead[tag]

    reclaimed = []
    for point, tag in _mount_points():
        if not gone(tag):
            continue
        with contextlib.suppress(AttributeError, OSError):
            if libc().umount2(os.fsencode(point), MNT_DETACH) == 0:
                if os.path.basename(point).startswith("agentenvs-swe-"):
                    remove_tree(point)
                reclaimed.append(point)
    top = os.path.realpath(directory if directory is not None else tempfile.gettempdir())
    try:
        names = os.listdir(top)
    except OSError:
        names = []
    for name in names:
        tagged = _TAGGED.match(name)
        path = os.path.join(top, name)
        if tagged is not None and gone(tagged[1]) and not os.path.ismount(path):
            remove_tree(path)
            if not os.path.lexists(path):
                reclaimed.append(path)
    return sorted(reclaimed)
