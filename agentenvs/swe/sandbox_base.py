"""The sandbox interface and the pieces every sandbox shares (re-exported by
:mod:`agentenvs.swe.sandbox`).

This module holds:

* :class:`Limits` - resource caps of one command; :class:`Caps` - how a sandbox enforces them.
* :class:`Bind` - an extra host directory for one run.
* :class:`Sandbox` - the abstract interface (``run``, ``caps``, ``bound``, ``close``).
* ``MAX_COMMAND_BYTES`` and the command check (``_unusable_command``), output capture
  (``Capture``), the watchdog (``Watchdog``: wall clock, workspace size and a process/memory
  probe), process-group killing (``kill_group``) and the host interpreter's paths
  (``interpreter_paths``).
"""

from __future__ import annotations

import math
import os
import re
import resource
import signal
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from agentenvs.swe.calls import TIMEOUT_EXIT_CODE, CommandResult
from agentenvs.swe.workspace import (
    tree_bytes,
    workspace_full,
)

__all__ = ["Limits", "Caps", "Bind", "Sandbox", "MAX_COMMAND_BYTES", "KILLED_EXIT_CODE"]

#: Exit code reported when a watchdog (disk, processes, memory) killed a command (``128 + SIGKILL``).
KILLED_EXIT_CODE = 128 + signal.SIGKILL

_ANSI = re.compile(rb"\x1b\[[0-9;]*[A-Za-z]")
#: Seconds between two workspace-size checks (at least; scaled up for slow scans).
_DISK_INTERVAL = 0.1
#: Seconds between two process counts (bwrap).
_COUNT_INTERVAL = 0.02


@dataclass(frozen=True)
class Limits:
    """Resource caps applied to every command.

    Attributes:
        memory_bytes: memory of the whole command (a memory cgroup, or a watchdog on the summed
            resident memory of its processes, see :class:`Caps`), and the address-space limit
            of each process (``RLIMIT_AS``), bytes; 4 GiB.
        file_bytes: largest file a process may write (``RLIMIT_FSIZE``), bytes; 64 MiB.
        open_files: open file descriptors per process (``RLIMIT_NOFILE``); 1024.
        processes: processes of the user (``RLIMIT_NPROC``: the sandbox uid's processes on the
            whole host for :class:`BwrapSandbox` run as root, not enforced for a root caller of
            :class:`LocalSandbox`; bwrap's watchdog also kills a sandbox holding more; Docker's
            ``pids_limit``); 512.
        output_bytes: bytes kept per output stream; the rest is discarded; 1 MiB.
        workspace_bytes: workspace size cap (:func:`~agentenvs.swe.workspace.tree_bytes`: blocks
            and inodes), bytes; a command that grows the workspace past it (or fills its tmpfs)
            is killed, and commands are refused while the workspace is over it; 256 MiB.
        tmp_bytes: size of the private ``/tmp`` (bwrap, Docker), bytes; 256 MiB.

    The CPU-time limit (``RLIMIT_CPU``) is the command's timeout plus 5 s, and core dumps are off.

    >>> Limits().output_bytes
    1048576
    """

    memory_bytes: int = 4 * 2**30
    file_bytes: int = 64 * 2**20
    open_files: int = 1024
    processes: int = 512
    output_bytes: int = 2**20
    workspace_bytes: int = 256 * 2**20
    tmp_bytes: int = 256 * 2**20

    def ulimit(self, timeout: float) -> str:
        """A bash ``ulimit`` command applying the limits (soft = hard) for a command of
        ``timeout`` seconds, each clipped to the caller's own hard limit so it cannot fail.

        >>> Limits(memory_bytes=2**30).ulimit(10).split(" && ")[:2]
        ['ulimit -HS -v 1048576', 'ulimit -HS -t 15']
        """
        wanted = [  # (flag, resource, value in bytes or units, bytes per ulimit unit)
            ("-v", resource.RLIMIT_AS, self.memory_bytes, 1024),
            ("-t", resource.RLIMIT_CPU, math.ceil(timeout) + 5, 1),
            ("-f", resource.RLIMIT_FSIZE, self.file_bytes, 1024),
            ("-n", resource.RLIMIT_NOFILE, self.open_files, 1),
            ("-u", resource.RLIMIT_NPROC, self.processes, 1),
            ("-c", resource.RLIMIT_CORE, 0, 1024),
        ]
        parts = []
        for flag, which, value, unit in wanted:
            hard = resource.getrlimit(which)[1]
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            parts.append(f"ulimit -HS {flag} {value // unit}")
        return " && ".join(parts)


@dataclass(frozen=True)
class Caps:
    """How a sandbox enforces isolation and :class:`Limits` on this host (``Sandbox.caps``).

    Attributes:
        host_uid: host uid the commands run as (``None``: not a host uid, e.g. Docker's).
        memory: ``"cgroup"`` (the whole command in one memory cgroup; the kernel enforces it),
            ``"watchdog"`` (the summed resident memory of its processes, sampled every 20 ms, so
            a fast allocation may briefly overshoot) or ``"rlimit"`` (per process only).
        disk: ``"tmpfs"`` (workspaces are their own size- and inode-capped tmpfs, plus the
            watchdog) or ``"watchdog"`` (the tree is measured every 0.1 s or more, so a fast
            writer may overshoot by what it writes in that time).
        host_paths_hidden: whether no host path of the env's own directories (workspace,
            ``/etc`` copy, grading files) shows inside, in ``/proc/1/cmdline`` or
            ``/proc/self/mountinfo`` (each is its own tmpfs).
        isolation: what confines the commands: ``"namespaces"`` (bubblewrap: own mount, PID,
            network, IPC and UTS namespaces, read-only system), ``"container"`` (Docker) or
            ``"none"`` (the local sandbox: the host itself, as this user).
    """

    host_uid: int | None
    memory: str
    disk: str
    host_paths_hidden: bool
    isolation: str = "none"


def _format_size(n: int) -> str:
    """``n`` bytes in the largest binary unit that divides it.

    >>> _format_size(2**20), _format_size(3 * 2**30), _format_size(1500)
    ('1 MiB', '3 GiB', '1500 bytes')
    """
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


class Capture:
    """Bytes of one output stream: the first ``cap`` are kept, the rest counted and dropped."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if len(chunk) > room:
            self.truncated = True
            chunk = chunk[: max(room, 0)]
        self.data += chunk

    def text(self, note: str = "") -> str:
        """Decoded, cleaned text, with the truncation marker and ``note`` appended."""
        text = _ANSI.sub(b"", bytes(self.data)).replace(b"\r", b"").decode("utf-8", "replace")
        if self.truncated:
            text += f"\n[output truncated at {_format_size(self.cap)}]"
        if note:
            text += ("\n" if text and not text.endswith("\n") else "") + note + "\n"
        return text


class Watchdog:
    """Wall-clock deadline, periodic workspace-size check and (optionally) a frequent ``probe``
    (process count, memory) that returns the reason to kill the command, or ``None``.

    ``reason`` is ``None`` while the command may go on, then ``"timeout"``, ``"disk"``,
    ``"processes"`` or ``"memory"``.
    """

    def __init__(
        self,
        workspace: str,
        timeout: float,
        limits: Limits,
        probe: Callable[[], str | None] | None = None,
    ) -> None:
        now = time.monotonic()
        self.workspace, self.limits, self.probe = workspace, limits, probe
        self.deadline = now + timeout
        self.disk_interval = _DISK_INTERVAL
        self.next_disk = now + self.disk_interval
        self.next_count = now + _COUNT_INTERVAL if probe is not None else math.inf
        self.reason: str | None = None

    def wait_seconds(self) -> float:
        """Seconds until the next check is due (never negative)."""
        due = min(self.deadline, self.next_disk, self.next_count)
        return max(0.0, due - time.monotonic())

    def expired(self) -> bool:
        """Run the checks that are due; whether the command must be killed now."""
        now = time.monotonic()
        if now >= self.deadline:
            self.reason = "timeout"
        if self.reason is None and self.probe is not None and now >= self.next_count:
            self.reason = self.probe()
            self.next_count = time.monotonic() + _COUNT_INTERVAL
        if self.reason is None and now >= self.next_disk:
            if workspace_full(self.workspace) or (
                tree_bytes(self.workspace) > self.limits.workspace_bytes
            ):
                self.reason = "disk"
            spent = time.monotonic() - now
            self.disk_interval = max(_DISK_INTERVAL, 10 * spent)  # scans stay under ~10 % CPU
            self.next_disk = time.monotonic() + self.disk_interval
        return self.reason is not None

    def settle(self) -> None:
        """Run the probe once more after the command ended (an out-of-memory kill just before
        the end still counts)."""
        if self.reason is None and self.probe is not None:
            self.reason = self.probe()

    def note(self) -> str:
        """The marker appended to the output of a command the watchdog killed."""
        if self.reason == "disk":
            return f"[workspace over {_format_size(self.limits.workspace_bytes)}: command killed]"
        if self.reason == "processes":
            return f"[more than {self.limits.processes} processes: command killed]"
        if self.reason == "memory":
            return f"[memory over {_format_size(self.limits.memory_bytes)}: command killed]"
        return ""


@dataclass(frozen=True)
class Bind:
    """A host directory a sandbox's commands also see (see :meth:`Sandbox.bound`).

    Attributes:
        source: the host directory.
        target: where commands see it in a sandbox with its own mount namespace (absolute).
        writable: mounted read-write (else read-only).
    """

    source: str
    target: str
    writable: bool = False


class Sandbox(ABC):
    """Runs shell commands over a workspace directory.

    Attributes:
        kind: ``"bwrap"``, ``"local"`` or ``"docker"``.
        isolated: whether the command is confined (file system, network, processes).
        limits: the :class:`Limits` of every command.
        caps: how isolation and limits are enforced on this host (:class:`Caps`).
    """

    kind: str = ""
    isolated: bool = True

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()

    @property
    def caps(self) -> Caps:
        """How this sandbox enforces isolation and :attr:`limits` here (by default the weakest
        claims: unknown uid, per-process memory, the disk watchdog)."""
        return Caps(host_uid=None, memory="rlimit", disk="watchdog", host_paths_hidden=False)

    def run(
        self,
        command: str,
        workspace: str | os.PathLike[str],
        *,
        timeout: float = 60.0,
        merge_stderr: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run ``bash -c command`` in ``workspace`` (seen as ``/testbed`` where the sandbox can map
        it) and return what it did; a workspace already over its size cap is refused, and a
        command holding a NUL byte or over :data:`MAX_COMMAND_BYTES` is not run (exit code 2,
        the reason in its output).

        Args:
            command: the shell command.
            workspace: the directory the command may modify (a :class:`Workspace` works too).
            timeout: wall-clock limit, seconds; on expiry every process of the command is
                killed and the result has ``exit_code`` 124 and ``timed_out``.
            merge_stderr: send standard error into ``stdout`` (in order); ``stderr`` is empty.
            env: extra environment variables on top of the sandbox's minimal environment.
        """
        unusable = _unusable_command(command)
        if unusable is not None:
            text = f"bash: {unusable}\n"
            return CommandResult(2, *((text, "") if merge_stderr else ("", text)))
        workspace = os.path.realpath(workspace)
        refused = self._refusal(workspace)
        if refused is not None:
            return refused
        return self._execute(command, workspace, timeout, merge_stderr, env or {})

    @abstractmethod
    def _execute(
        self,
        command: str,
        workspace: str,
        timeout: float,
        merge_stderr: bool,
        env: Mapping[str, str],
    ) -> CommandResult:
        """:meth:`run` once the workspace passed the size check (``workspace`` is a real path)."""

    def close(self) -> None:  # noqa: B027 - an optional hook: nothing to release by default
        """Release what the sandbox holds (containers, temporary directories)."""

    def bound(self, binds: Sequence[Bind]) -> tuple[Sandbox, list[str]]:
        """A sandbox that runs like this one with each bind's ``source`` also visible, and the
        paths its commands see them at (``target``; the host path where the sandbox shares the
        host's file system). Close the sandbox returned when it is not ``self``."""
        return self, [b.source for b in binds]

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(limits={self.limits})"

    def _refusal(self, workspace: str) -> CommandResult | None:
        """A refused result when ``workspace`` is already over the cap, else ``None``."""
        if tree_bytes(workspace) <= self.limits.workspace_bytes:
            return None
        cap = _format_size(self.limits.workspace_bytes)
        note = f"[workspace over {cap}: command not run; the sandbox refuses to grow it further]"
        return CommandResult(exit_code=1, stderr=note + "\n", refused=True)

    @staticmethod
    def _result(
        exit_code: int,
        out: Capture,
        err: Capture | None,
        watchdog: Watchdog,
        seconds: float,
    ) -> CommandResult:
        """Assemble a :class:`CommandResult`; the disk-watchdog note goes to stderr (or stdout)."""
        note = watchdog.note()
        if watchdog.reason == "timeout":
            exit_code = TIMEOUT_EXIT_CODE
        elif watchdog.reason is not None:
            exit_code = KILLED_EXIT_CODE
        elif exit_code < 0:
            exit_code = 128 - exit_code
        return CommandResult(
            exit_code=exit_code,
            stdout=out.text("" if err is not None else note),
            stderr=err.text(note) if err is not None else "",
            timed_out=watchdog.reason == "timeout",
            truncated=out.truncated or (err is not None and err.truncated),
            seconds=seconds,
        )


#: Longest command :meth:`Sandbox.run` accepts, bytes (UTF-8): Linux's limit on one argument of a
#: new process (``MAX_ARG_STRLEN``, 128 KiB), less a margin for the wrapper script.
MAX_COMMAND_BYTES = 128 * 2**10 - 2**10


def _unusable_command(command: str) -> str | None:
    """Why ``command`` cannot be handed to ``bash -c`` (exit code 2, as bash's usage errors), or
    ``None``: a NUL byte (no process argument can hold one), characters with no byte form (lone
    high surrogates; the low ones ``\udc80``-``\udcff`` stand for raw bytes, as ``os.fsencode``
    reads them), or more than :data:`MAX_COMMAND_BYTES` bytes."""
    if "\x00" in command:
        return "the command holds a NUL byte (\\0), which no command line can contain: not run"
    try:
        size = len(command.encode("utf-8", errors="surrogateescape"))
    except UnicodeEncodeError:
        return "the command holds characters that have no byte encoding (lone surrogates): not run"
    if size > MAX_COMMAND_BYTES:
        return (
            f"the command is {size} bytes long, over the {MAX_COMMAND_BYTES}-byte limit of one "
            "command line: not run (write long scripts to a file first)"
        )
    return None


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def interpreter_paths() -> tuple[list[str], list[str]]:
    """``(prefixes to bind, PATH entries)`` that make the host interpreter usable in bwrap.

    Prefixes: ``sys.prefix``, ``sys.base_prefix`` and the directory of the real
    ``sys.executable`` (as given and resolved), minus those under ``/usr`` or another prefix.
    PATH: the directory of ``sys.executable`` (a venv's ``bin``) first.
    """
    executable = os.path.abspath(sys.executable)
    candidates = []
    for path in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(executable))):
        candidates += [os.path.abspath(path), os.path.realpath(path)]
    unique = sorted(set(candidates), key=len)
    prefixes: list[str] = []
    for path in unique:
        if not os.path.isdir(path) or path == "/" or path.startswith("/usr/"):
            continue
        if not any(path == p or path.startswith(p.rstrip("/") + "/") for p in prefixes):
            prefixes.append(path)
    bins = [os.path.dirname(executable), os.path.join(sys.prefix, "bin")]
    path_entries = [
        p for p in dict.fromkeys(bins) if os.path.isdir(p) and not p.startswith("/usr/")
    ]
    return prefixes, path_entries + ["/usr/local/bin", "/usr/bin", "/bin"]
