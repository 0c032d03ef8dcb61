"""Memory and process accounting for :class:`~agentenvs.swe.sandbox_bwrap.BwrapSandbox`.

This module holds:

* ``_MemoryCgroups`` / ``memory_cgroups()`` - a memory cgroup per command (v1 or v2, located
  once, swept at exit).
* ``NamespaceCounter`` - counts the processes of one PID namespace for the process cap, and sums
  their resident memory where no cgroup caps it.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import os
import subprocess
import threading
import time

__all__: list[str] = []  # private helpers only

#: Bytes per memory page (``/proc/<pid>/statm`` counts pages).
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class _MemoryCgroups:
    """Creates a memory cgroup per command under this process's own cgroup (v1 ``memory``
    hierarchy or v2 with the ``memory`` controller delegated), with swap capped too.

    A used cgroup is removed lazily (its last processes may take a moment to go): each
    :meth:`create` removes those that are empty by then, and :meth:`sweep` at exit the rest.
    """

    _names = itertools.count()

    def __init__(self, base: str, v2: bool) -> None:
        self.base, self.v2 = base, v2
        self._used: list[str] = []
        self._lock = threading.Lock()

    def create(self, limit: int) -> str:
        """A fresh cgroup of ``limit`` bytes; its path."""
        self.sweep()
        path = os.path.join(self.base, f"agentenvs-{os.getpid()}-{next(self._names)}")
        os.mkdir(path)
        try:
            if self.v2:
                files = [("memory.max", limit), ("memory.swap.max", 0), ("memory.oom.group", 1)]
            else:
                files = [("memory.limit_in_bytes", limit), ("memory.memsw.limit_in_bytes", limit)]
            for name, value in files:
                if os.path.exists(os.path.join(path, name)):
                    with open(os.path.join(path, name), "w") as handle:
                        handle.write(str(value))
        except OSError:
            self.remove(path)
            raise
        return path

    def oom_killed(self, path: str) -> bool:
        """Whether the kernel killed a process of the cgroup for lack of memory."""
        name = "memory.events" if self.v2 else "memory.oom_control"
        try:
            with open(os.path.join(path, name)) as handle:
                for line in handle:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value) > 0
        except (OSError, ValueError):
            pass
        return False

    def remove(self, path: str) -> None:
        """Remove the cgroup once its last process is gone (now or at a later :meth:`sweep`)."""
        with self._lock:
            self._used.append(path)
        self.sweep()

    def sweep(self, seconds: float = 0.0) -> None:
        """Remove the used cgroups that are empty, retrying for up to ``seconds``."""
        deadline = time.monotonic() + seconds
        while True:
            with self._lock:
                self._used = [path for path in self._used if not _rmdir(path)]
                if not self._used or time.monotonic() >= deadline:
                    return
            time.sleep(0.05)

    @staticmethod
    def locate() -> tuple[str, bool] | None:
        """``(directory of this process's memory cgroup, is v2)``, if there is one."""
        try:
            with open("/proc/self/cgroup") as handle:
                lines = handle.read().splitlines()
        except OSError:
            return None
        for line in lines:
            _, controllers, path = line.split(":", 2)
            if "memory" in controllers.split(","):
                return f"/sys/fs/cgroup/memory{path}", False
        for line in lines:
            _, controllers, path = line.split(":", 2)
            for mount in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                base = mount + path.rstrip("/")
                try:
                    with open(os.path.join(base, "cgroup.subtree_control")) as handle:
                        delegated = "memory" in handle.read().split()
                except OSError:
                    continue
                if not controllers and delegated:
                    return base, True
        return None


def _rmdir(path: str) -> bool:
    """Remove an empty directory (a cgroup); whether it is gone."""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def memory_cgroups() -> _MemoryCgroups | None:
    """Per-command memory cgroups, if this host lets this process make one and move a process
    into it: probed once by really doing it."""
    found = _MemoryCgroups.locate()
    if found is None or not os.access(found[0], os.W_OK):
        return None
    cgroups = _MemoryCgroups(*found)
    try:
        path = cgroups.create(2**30)
    except OSError:
        return None
    try:
        joined = subprocess.run(
            ["/bin/sh", "-c", 'echo $$ > "$0"', os.path.join(path, "cgroup.procs")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        cgroups.remove(path)
    if joined.returncode != 0:
        return None
    atexit.register(cgroups.sweep, 2.0)
    return cgroups


def init_pid_of(bwrap_pid: int) -> int | None:
    """Host PID of bwrap's first child (the init of the sandbox's PID namespace), if running."""
    try:
        with open(f"/proc/{bwrap_pid}/task/{bwrap_pid}/children") as handle:
            children = handle.read().split()
    except OSError:
        return None
    return int(children[0]) if children else None


class NamespaceCounter:
    """Counts the processes of a bwrap sandbox's PID namespace through its init's ``/proc`` (and
    sums their resident memory)."""

    def __init__(self, bwrap_pid: int) -> None:
        self.bwrap_pid = bwrap_pid
        self.proc: str | None = None

    def sample(self, rss: bool = False) -> tuple[int, int]:
        """``(processes, their summed resident memory in bytes if rss else 0)``."""
        if self.proc is None:
            init = init_pid_of(self.bwrap_pid)
            try:
                if init is None or os.path.samefile(f"/proc/{init}/root", "/"):
                    return 0, 0  # not started, or bwrap has not switched to the sandbox's root
            except OSError:
                return 0, 0
            self.proc = f"/proc/{init}/root/proc"
        try:
            pids = [name for name in os.listdir(self.proc) if name.isdigit()]
        except OSError:
            return 0, 0
        return len(pids), sum(_resident(f"{self.proc}/{pid}") for pid in pids) if rss else 0


def _resident(proc: str) -> int:
    """Resident memory of the process whose ``/proc`` directory is ``proc``, bytes (0 if gone)."""
    try:
        with open(f"{proc}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0
