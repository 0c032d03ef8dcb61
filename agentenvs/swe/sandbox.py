"""Sandboxes that run the agent's shell commands over a workspace (see docs/swe.md, "Sandbox").

This module holds:

* :class:`Limits` - resource caps of one command (memory, file size, open files, processes,
  output, workspace and ``/tmp`` size).
* :class:`Caps` - how a sandbox enforces them on this host (``Sandbox.caps``, probed once).
* :class:`Sandbox` - the interface: ``run(command, workspace, timeout=...)`` runs ``bash -c
  command`` with the workspace as the current directory and returns a
  :class:`~agentenvs.swe.calls.CommandResult`.
* :class:`BwrapSandbox` - bubblewrap: read-only system, the workspace bound at ``/testbed``, no
  network, own PID namespace, an allowlisted ``/etc``, the host interpreter's prefixes read-only,
  an unprivileged host uid (also when the host process is root) and a memory cgroup per command.
* :class:`LocalSandbox` - the fallback without isolation: rlimits, a cleared environment and
  process-group killing only.
* :class:`DockerSandbox` - one long-lived container per sandbox (optional ``docker`` SDK).
* :func:`bwrap_available`, :func:`make_sandbox` - pick and build a sandbox.
* :class:`Bind` / :meth:`Sandbox.bound` - extra host directories for one run (grading's plugin
  and report directories).

Every sandbox caps each output stream at ``Limits.output_bytes`` (the rest is read and discarded),
decodes UTF-8 with replacement, strips ANSI colour codes and ``\\r``, kills the command's whole
process tree on the wall timeout (``exit_code`` 124, ``timed_out``), kills it when the workspace
grows over ``Limits.workspace_bytes`` (or its tmpfs is full) and refuses to run while the
workspace is over that cap.

>>> make_sandbox("nope")
Traceback (most recent call last):
...
ValueError: unknown sandbox kind 'nope'; choose one of 'auto', 'bwrap', 'local', 'docker'
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import math
import os
import re
import resource
import secrets
import select
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from copy import copy
from dataclasses import dataclass
from typing import Any

from agentenvs.swe.calls import TIMEOUT_EXIT_CODE, CommandResult
from agentenvs.swe.workspace import (
    SANDBOX_ID,
    own_tree,
    tmpfs_available,
    tree_bytes,
    workspace_full,
)

__all__ = [
    "Bind",
    "Limits",
    "Caps",
    "Sandbox",
    "BwrapSandbox",
    "LocalSandbox",
    "DockerSandbox",
    "bwrap_available",
    "make_sandbox",
    "MAX_COMMAND_BYTES",
    "SANDBOX_KINDS",
]

#: Accepted ``kind`` values of :func:`make_sandbox`.
SANDBOX_KINDS = ("auto", "bwrap", "local", "docker")

#: Exit code reported when a watchdog (disk, processes, memory) killed a command (``128 + SIGKILL``).
KILLED_EXIT_CODE = 128 + signal.SIGKILL

#: Files and directories of the host's ``/etc`` visible (read-only) inside :class:`BwrapSandbox`:
#: what the dynamic linker, bash, coreutils, git and Python need, nothing secret (no ``shadow``,
#: ``ssh``, ``ssl/private``, ``machine-id``, package-manager credentials).
ETC_ALLOWLIST = (
    "alternatives",
    "debian_version",
    "gitconfig",
    "group",
    "host.conf",
    "hosts",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "protocols",
    "python3",
    f"python3.{sys.version_info.minor}",
    "services",
    "shells",
    "ssl/certs",
    "ssl/openssl.cnf",
    "timezone",
)

_ANSI = re.compile(rb"\x1b\[[0-9;]*[A-Za-z]")
#: Seconds between two workspace-size checks (at least; scaled up for slow scans).
_DISK_INTERVAL = 0.1
#: Seconds between two process counts (bwrap).
_COUNT_INTERVAL = 0.02
#: Bytes per memory page (``/proc/<pid>/statm`` counts pages).
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
#: Seconds to wait for a Docker command's output to end once its processes were killed.
_DOCKER_DRAIN_SECONDS = 2.0


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
        host_paths_hidden: whether the workspace's host path is invisible inside (a tmpfs
            workspace shows no host path in ``/proc/self/mountinfo``).
    """

    host_uid: int | None
    memory: str
    disk: str
    host_paths_hidden: bool


def _format_size(n: int) -> str:
    """``n`` bytes in the largest binary unit that divides it.

    >>> _format_size(2**20), _format_size(3 * 2**30), _format_size(1500)
    ('1 MiB', '3 GiB', '1500 bytes')
    """
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


class _Capture:
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


class _Watchdog:
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
        out: _Capture,
        err: _Capture | None,
        watchdog: _Watchdog,
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


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _ProcessSandbox(Sandbox):
    """Shared ``subprocess`` machinery of :class:`BwrapSandbox` and :class:`LocalSandbox`."""

    @abstractmethod
    def _popen_args(
        self,
        command: str,
        workspace: str,
        env: Mapping[str, str] | None,
        timeout: float,
        resources: Any,
    ) -> tuple[list[str], str | None, dict[str, str]]:
        """``(argv, cwd, environment)`` of the process that runs ``command``; ``resources`` is
        what :meth:`_resources` yielded.

        The rlimits are set by a wrapper shell (``ulimit``) rather than a ``preexec_fn``: that
        would make ``subprocess`` fork the whole interpreter (several ms per command, and unsafe
        with threads) instead of using ``vfork``.
        """

    #: Seconds to keep reading the pipes once the command ended or was killed (background
    #: processes that escaped the kill may hold them open).
    drain_seconds = 0.5

    @contextlib.contextmanager
    def _resources(self, workspace: str) -> Iterator[Any]:
        """Per-command resources (released when the command is over); none by default."""
        yield None

    def _probe(
        self, process: subprocess.Popen[bytes], resources: Any
    ) -> Callable[[], str | None] | None:
        """A cheap frequent check for the watchdog (the reason to kill, or ``None``), or
        ``None``."""
        return None

    def _after(self, process: subprocess.Popen[bytes], env: Mapping[str, str]) -> None:
        """Kill what the command left behind once it finished or was killed."""
        _killpg(process.pid)

    def _execute(
        self,
        command: str,
        workspace: str,
        timeout: float,
        merge_stderr: bool,
        env: Mapping[str, str],
    ) -> CommandResult:
        """Run the command once; if the host was briefly out of processes so that it could not
        start (``fork`` failed with ``EAGAIN`` here, or bwrap reported it could not fork, e.g.
        while a fork bomb's processes are still being reaped: the command never ran), retry after
        0.25, 0.5 and 1 s, then report the failure as exit code 126."""
        for delay in (0.25, 0.5, 1.0, None):
            try:
                result = self._run_once(command, workspace, timeout, merge_stderr, env)
            except BlockingIOError as error:  # fork() failed here: nothing was started
                text = f"cannot start the command: {error.strerror}\n"
                result = CommandResult(126, *((text, "") if merge_stderr else ("", text)))
                transient = True
            else:
                transient = _could_not_fork(result, merge_stderr)
            if not transient or delay is None:
                return result
            time.sleep(delay)
        return result

    def _run_once(
        self,
        command: str,
        workspace: str,
        timeout: float,
        merge_stderr: bool,
        env: Mapping[str, str],
    ) -> CommandResult:
        with self._resources(workspace) as resources:
            argv, cwd, environment = self._popen_args(command, workspace, env, timeout, resources)
            start = time.perf_counter()
            process = subprocess.Popen(
                argv,
                cwd=cwd,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                start_new_session=True,
            )
            out = _Capture(self.limits.output_bytes)
            err = None if merge_stderr else _Capture(self.limits.output_bytes)
            watchdog = _Watchdog(workspace, timeout, self.limits, self._probe(process, resources))
            try:
                self._pump(process, out, err, watchdog, environment)
            finally:
                _killpg(process.pid)
                process.wait()
            watchdog.settle()
            seconds = time.perf_counter() - start
            return self._result(process.returncode, out, err, watchdog, seconds)

    def _pump(
        self,
        process: subprocess.Popen[bytes],
        out: _Capture,
        err: _Capture | None,
        watchdog: _Watchdog,
        env: Mapping[str, str],
    ) -> None:
        """Read the pipes until the command ends or must be killed, then drain them briefly.

        A pidfd (Linux) in the selector wakes the loop the moment the command exits; elsewhere
        the loop polls at the watchdog's interval.
        """
        assert process.stdout is not None
        streams = {process.stdout.fileno(): out}
        if err is not None:
            assert process.stderr is not None
            streams[process.stderr.fileno()] = err
        selector = selectors.DefaultSelector()
        for fd in streams:
            selector.register(fd, selectors.EVENT_READ)
        pidfd = _pidfd_open(process.pid)
        if pidfd is not None:
            selector.register(pidfd, selectors.EVENT_READ)
        try:
            while process.poll() is None:
                if selector.get_map():
                    for key, _ in selector.select(watchdog.wait_seconds()):
                        if key.fd == pidfd:
                            selector.unregister(pidfd)
                        else:
                            _read_into(selector, key.fd, streams[key.fd])
                else:
                    try:
                        process.wait(watchdog.wait_seconds())
                    except subprocess.TimeoutExpired:
                        pass
                if process.poll() is None and watchdog.expired():
                    break
            self._after(process, env)
            if pidfd is not None and pidfd in selector.get_map():
                selector.unregister(pidfd)
            # Background processes that escaped may hold the pipes: read only a little longer.
            grace = time.monotonic() + self.drain_seconds
            while selector.get_map() and time.monotonic() < grace:
                for key, _ in selector.select(max(0.0, grace - time.monotonic())):
                    _read_into(selector, key.fd, streams[key.fd])
        finally:
            selector.close()
            if pidfd is not None:
                os.close(pidfd)
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()


def _read_into(selector: selectors.BaseSelector, fd: int, capture: _Capture) -> None:
    """Read one chunk of ``fd`` into ``capture``; unregister ``fd`` at end of file."""
    chunk = os.read(fd, 1 << 16)
    if chunk:
        capture.feed(chunk)
    else:
        selector.unregister(fd)


def _pidfd_open(pid: int) -> int | None:
    """A file descriptor that becomes readable when ``pid`` exits (Linux 5.3+), else ``None``."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _interpreter_paths() -> tuple[list[str], list[str]]:
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


#: The ``agentenvs`` package directory (its ``swe/data`` holds the gold patches).
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _private_paths(visible: Sequence[str]) -> list[str]:
    """The directories holding gold patches, seed repositories and built snapshots (the installed
    ``agentenvs`` package and ``$AGENTENVS_CACHE``) that lie under one of the ``visible`` bound
    directories: :class:`BwrapSandbox` mounts an empty read-only tmpfs over each."""
    from agentenvs.swe.task import cache_dir

    found = []
    for path in (_PACKAGE_DIR, os.fspath(cache_dir().parent)):
        real = os.path.realpath(path)
        if os.path.isdir(real) and any(real.startswith(v.rstrip("/") + "/") for v in visible):
            found.append(real)
    return found


class BwrapSandbox(_ProcessSandbox):
    """bubblewrap sandbox (the default where ``bwrap`` works).

    Inside: ``/usr`` and the host interpreter's prefixes read-only, an allowlisted ``/etc``
    (:data:`ETC_ALLOWLIST`), private ``/proc`` (its ``sys`` read-only), ``/dev``, ``/dev/shm`` and
    ``/tmp`` (``tmp_bytes``), the workspace read-write at ``/testbed`` (the working directory,
    ``nosuid``, ``nodev``), everything else read-only and empty (the host's home, ``/root``,
    ``/tmp`` and project directories are invisible). All namespaces are unshared (no network; own
    PID namespace, so every process of the command dies with it; own user namespace),
    capabilities are dropped, the environment holds only ``PATH`` (the interpreter's ``bin``
    first, so ``python`` and ``pytest`` are the host's), ``HOME=/tmp``, ``LANG=C.UTF-8``,
    ``PYTHONDONTWRITEBYTECODE=1``, ``PAGER=cat``, ``TQDM_DISABLE=1`` and ``env``.

    When the host process is root, the command runs as the unprivileged host uid/gid ``uid`` (no
    supplementary groups, no capabilities, ``no_new_privs``: bwrap sets up the sandbox as root,
    then ``setpriv`` drops to ``uid`` before the command starts), so the sandbox's user is never
    root on the host; a workspace not owned by ``uid`` is given to it first
    (:class:`~agentenvs.swe.workspace.Workspace` creates it so). Otherwise commands run as the
    caller's own uid (in a user namespace). Each command runs in its own memory cgroup of ``memory_bytes`` (swap
    included) where this process's cgroup lets it create one, else a watchdog sums the resident
    memory of its processes; either way the whole command is killed (exit code 137, a
    ``[memory over ...: command killed]`` line). :attr:`caps` says which applies.

    Args:
        limits: resource caps (:class:`Limits`).
        bwrap: the bubblewrap executable.
        uid: host uid and gid of the sandbox when this process is root; default
            :data:`~agentenvs.swe.workspace.SANDBOX_ID`.
        memory: ``"auto"`` (default: a memory cgroup per command where the host allows one,
            else the watchdog) or ``"watchdog"`` (never a cgroup: about 10 ms less per command
            on a cgroup-v1 host, but a fast allocation can overshoot the cap between two checks).
    """

    kind = "bwrap"
    isolated = True
    drain_seconds = 5.0

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        bwrap: str = "bwrap",
        uid: int = SANDBOX_ID,
        memory: str = "auto",
    ) -> None:
        if memory not in ("auto", "watchdog"):
            raise ValueError(f"memory must be 'auto' or 'watchdog', got {memory!r}")
        super().__init__(limits)
        found = shutil.which(bwrap)
        if found is None:
            raise RuntimeError(f"{bwrap!r} not found: apt-get install bubblewrap")
        self.bwrap = found
        self.user = (uid, uid) if os.geteuid() == 0 else None
        self._drop = ""
        if self.user is not None:
            setpriv = shutil.which("setpriv", path="/usr/bin:/bin")
            if setpriv is None:
                raise RuntimeError("BwrapSandbox as root needs setpriv: apt-get install util-linux")
            self._drop = f"{setpriv} --reuid={uid} --regid={uid} --clear-groups "
            self._drop += "--inh-caps=-all --bounding-set=-all "
        self._etc = _etc_copy()
        self._cleanup_etc = weakref.finalize(self, shutil.rmtree, self._etc, True)
        self._prefix_args, path = self._static_args()
        self._cgroups = _memory_cgroups() if memory == "auto" else None
        self._env = {
            "PATH": ":".join(path),
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PAGER": "cat",
            "TQDM_DISABLE": "1",
        }

    @property
    def caps(self) -> Caps:
        return Caps(
            host_uid=self.user[0] if self.user is not None else os.geteuid(),
            memory="cgroup" if self._cgroups is not None else "watchdog",
            disk="tmpfs" if tmpfs_available() else "watchdog",
            host_paths_hidden=tmpfs_available(),
        )

    def _static_args(self) -> tuple[list[str], list[str]]:
        """The workspace-independent part of the bwrap command line, and the PATH entries."""
        args = [self.bwrap, "--ro-bind", "/usr", "/usr"]
        for name in ("bin", "lib", "lib32", "lib64", "sbin"):
            if os.path.exists(f"/usr/{name}"):
                args += ["--symlink", f"usr/{name}", f"/{name}"]
        args += ["--ro-bind", self._etc, "/etc"]
        args += ["--proc", "/proc", "--dev", "/dev"]
        args += ["--perms", "1777", "--size", str(self.limits.tmp_bytes), "--tmpfs", "/dev/shm"]
        args += ["--perms", "1777", "--size", str(self.limits.tmp_bytes), "--tmpfs", "/tmp"]
        prefixes, path = _interpreter_paths()
        for prefix in prefixes:
            args += _bind_args("--ro-bind", prefix, prefix)
        for private in _private_paths(["/usr", *prefixes]):
            args += ["--tmpfs", private, "--remount-ro", private]
        if self.user is None:
            args += ["--unshare-all"]
        else:  # no user namespace (it would map root to root), and what the wrapper needs to
            # enter the 0700 workspace and drop to the sandbox user (the drop clears them all)
            args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
            args += ["--unshare-cgroup-try", "--cap-drop", "ALL"]
            for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_DAC_OVERRIDE"):
                args += ["--cap-add", cap]
        args += ["--die-with-parent", "--new-session"]
        return (args + ["--cap-drop", "ALL"] if self.user is None else args), path

    @contextlib.contextmanager
    def _resources(self, workspace: str) -> Iterator[str | None]:
        """The command's memory cgroup (its path), if any; a workspace that the sandbox user
        does not own is given to it first."""
        if self.user is not None and os.stat(workspace).st_uid != self.user[0]:
            own_tree(workspace, self.user)
        cgroup = None
        try:
            if self._cgroups is not None:
                cgroup = self._cgroups.create(self.limits.memory_bytes)
            yield cgroup
        finally:
            if cgroup is not None and self._cgroups is not None:
                self._cgroups.remove(cgroup)

    def _popen_args(
        self,
        command: str,
        workspace: str,
        env: Mapping[str, str] | None,
        timeout: float,
        resources: str | None,
    ) -> tuple[list[str], str | None, dict[str, str]]:
        argv = list(self._prefix_args)
        if resources is not None:  # join the memory cgroup, then become bwrap
            procs = os.path.join(resources, "cgroup.procs")
            argv[:0] = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', procs]
        argv += ["--bind", workspace, "/testbed"]
        # Remount the sandbox's root and /dev read-only last: writes there would fill RAM.
        argv += ["--remount-ro", "/dev", "--remount-ro", "/", "--clearenv"]
        for key, value in {**self._env, **(env or {})}.items():
            argv += ["--setenv", key, value]
        # cd before the drop: bwrap's own chdir comes after it gave up the capabilities.
        script = f"{self.limits.ulimit(timeout)} && cd /testbed || exit 126; "
        script += f'exec {self._drop}bash -c "$1"'
        return argv + ["bash", "-c", script, "bash", command], None, {}

    def _probe(
        self, process: subprocess.Popen[bytes], resources: str | None
    ) -> Callable[[], str | None]:
        """Kill on an out-of-memory kill in the cgroup, too many processes, or (without a
        cgroup) too much summed resident memory."""
        counter, limits, cgroups = _NamespaceCounter(process.pid), self.limits, self._cgroups
        cgroup = resources

        def probe() -> str | None:
            if cgroup is not None and cgroups is not None and cgroups.oom_killed(cgroup):
                return "memory"
            count, rss = counter.sample(rss=cgroup is None)
            if count > limits.processes:
                return "processes"
            return "memory" if rss > limits.memory_bytes else None

        return probe

    def bound(self, binds: Sequence[Bind]) -> tuple[Sandbox, list[str]]:
        box = copy(self)
        for b in binds:
            option = "--bind" if b.writable else "--ro-bind"
            box._prefix_args = [*box._prefix_args, *_bind_args(option, b.source, b.target)]
        return box, [b.target for b in binds]

    def _after(self, process: subprocess.Popen[bytes], env: Mapping[str, str]) -> None:
        """Kill bwrap (its PID namespace dies with it) and wait until the namespace is gone."""
        init = _init_pid(process.pid)
        pidfd = _pidfd_open(init) if init is not None else None
        _killpg(process.pid)
        if pidfd is not None:
            try:  # the init exits only after every other process of its namespace is reaped
                select.select([pidfd], [], [], self.drain_seconds)
            finally:
                os.close(pidfd)


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
def _memory_cgroups() -> _MemoryCgroups | None:
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


def _bind_args(option: str, source: str, target: str) -> list[str]:
    """bwrap arguments binding ``source`` at ``target`` (``option``: ``--bind``/``--ro-bind``),
    first making each directory above ``target`` with mode 0755: bwrap would make them 0700 and
    root's, which the sandbox user cannot enter when the host is root. Use it for every bind.

    >>> " ".join(_bind_args("--ro-bind", "/x", "/run/a/b"))
    '--perms 0755 --dir /run --perms 0755 --dir /run/a --ro-bind /x /run/a/b'
    """
    parts = target.strip("/").split("/")[:-1]
    args = []
    for i in range(len(parts)):
        parent = "/" + "/".join(parts[: i + 1])
        if parent != "/usr" and not parent.startswith("/usr/"):  # /usr is bound read-only
            args += ["--perms", "0755", "--dir", parent]
    return args + [option, source, target]


def _could_not_fork(result: CommandResult, merged: bool) -> bool:
    """The whole output is bwrap's own one-line report on standard error (``merged``: in the one
    stream) that it ran out of processes before starting the command (``EAGAIN`` while forking
    or creating a namespace)."""
    text = (result.stdout if merged else result.stderr).strip()
    return (
        result.exit_code == 1
        and (merged or not result.stdout)
        and text.startswith("bwrap: ")
        and "\n" not in text
        and text.endswith("Resource temporarily unavailable")
    )


def _etc_copy() -> str:
    """A private directory holding copies of the :data:`ETC_ALLOWLIST` entries of ``/etc`` (and
    ``mtab``), bound as the sandbox's ``/etc``: one mount instead of one per entry keeps bwrap's
    start-up ~4 ms shorter."""
    etc = tempfile.mkdtemp(prefix="agentenvs-etc-")
    for name in ETC_ALLOWLIST:
        source, target = f"/etc/{name}", os.path.join(etc, name)
        if not os.path.lexists(source):
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.isdir(source) and not os.path.islink(source):
            shutil.copytree(source, target, symlinks=True)
        else:
            shutil.copy2(source, target, follow_symlinks=False)
    os.symlink("../proc/self/mounts", os.path.join(etc, "mtab"))
    os.chmod(etc, 0o755)
    return etc


def _init_pid(bwrap_pid: int) -> int | None:
    """Host PID of bwrap's first child (the init of the sandbox's PID namespace), if running."""
    try:
        with open(f"/proc/{bwrap_pid}/task/{bwrap_pid}/children") as handle:
            children = handle.read().split()
    except OSError:
        return None
    return int(children[0]) if children else None


class _NamespaceCounter:
    """Counts the processes of a bwrap sandbox's PID namespace through its init's ``/proc`` (and
    sums their resident memory)."""

    def __init__(self, bwrap_pid: int) -> None:
        self.bwrap_pid = bwrap_pid
        self.proc: str | None = None

    def sample(self, rss: bool = False) -> tuple[int, int]:
        """``(processes, their summed resident memory in bytes if rss else 0)``."""
        if self.proc is None:
            init = _init_pid(self.bwrap_pid)
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


#: ``LocalSandbox`` warns once per process.
_local_warned = False


class LocalSandbox(_ProcessSandbox):
    """Fallback without isolation: use only where bubblewrap and Docker are unavailable.

    The command runs on the host as the current user, with the rlimits of :class:`Limits`, in its
    own session, with ``cwd`` = the workspace itself (there is no ``/testbed``: commands must use
    relative paths) and a cleared environment (``PATH`` with the interpreter's ``bin`` first,
    ``HOME`` and ``TMPDIR`` = a private temporary directory, the variables of
    :class:`BwrapSandbox` and ``env``). It does not stop reads or writes elsewhere on the host,
    network access, or signals to other processes of the user. After each command, its process
    group is killed, and so is every process whose environment carries the command's token
    (``AGENTENVS_SANDBOX_RUN``; this catches ``setsid``/``nohup``/double-forked background
    processes unless they clear their environment; Linux ``/proc`` only). The command runs under
    a wrapper shell, so ``kill $PPID`` hits the wrapper, not the caller.

    Args:
        limits: resource caps (:class:`Limits`).
    """

    kind = "local"
    isolated = False

    def __init__(self, limits: Limits | None = None) -> None:
        global _local_warned
        super().__init__(limits)
        if not _local_warned:
            _local_warned = True
            warnings.warn(
                "LocalSandbox runs agent commands on the host with rlimits only: isolation is much "
                "weaker than bubblewrap's (apt-get install bubblewrap) or Docker's",
                RuntimeWarning,
                stacklevel=2,
            )
        self.home = tempfile.mkdtemp(prefix="agentenvs-swe-home-")
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.home, ignore_errors=True)
        _, path = _interpreter_paths()
        self._env = {
            "PATH": ":".join(path),
            "HOME": self.home,
            "TMPDIR": self.home,
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PAGER": "cat",
            "TQDM_DISABLE": "1",
        }

    @property
    def caps(self) -> Caps:
        return Caps(
            host_uid=os.geteuid(),
            memory="rlimit",
            disk="tmpfs" if tmpfs_available() else "watchdog",
            host_paths_hidden=False,
        )

    def _popen_args(
        self,
        command: str,
        workspace: str,
        env: Mapping[str, str] | None,
        timeout: float,
        resources: Any,
    ) -> tuple[list[str], str | None, dict[str, str]]:
        token = secrets.token_hex(8)
        environment = {**self._env, **(env or {}), "AGENTENVS_SANDBOX_RUN": token}
        # Limits the host refuses (e.g. -v on macOS) are skipped: this sandbox is best effort.
        script = f"{self.limits.ulimit(timeout).replace(' && ', ' 2>/dev/null; ')} 2>/dev/null; "
        script += 'bash -c "$1"; exit $?'
        return ["bash", "-c", script, "bash", command], workspace, environment

    def _after(self, process: subprocess.Popen[bytes], env: Mapping[str, str]) -> None:
        _killpg(process.pid)
        marker = f"\0AGENTENVS_SANDBOX_RUN={env['AGENTENVS_SANDBOX_RUN']}\0".encode()
        for pid in _pids_with_environ(marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def close(self) -> None:
        """Remove the private home directory (also done at garbage collection and exit)."""
        self._finalizer()


def _pids_with_environ(marker: bytes) -> Iterator[int]:
    """PIDs of the processes (readable in ``/proc``) whose environment contains ``marker``."""
    me = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                environ = b"\0" + handle.read()
        except OSError:
            continue
        if marker in environ:
            yield int(name)


class DockerSandbox(Sandbox):
    """One long-lived Docker container per sandbox object (needs the ``docker`` SDK and engine).

    The container (``image``, default ``python:3.11-slim``) has no network, a read-only root,
    ``mem_limit`` = ``memory_bytes``, ``pids_limit`` = ``processes``, file-size/open-file/core
    ulimits, a ``tmp_bytes`` tmpfs at ``/tmp`` and the workspace bind-mounted at ``/testbed``; it
    is re-created when another workspace is passed. Each command runs as ``docker exec bash -c``;
    afterwards (and on timeout) every process but the container's init is killed. The image's
    interpreter is used, not the host's: it must hold the task's test dependencies.

    Args:
        limits: resource caps (:class:`Limits`).
        image: the container image.
        client: a ``docker.DockerClient``; ``docker.from_env()`` by default.
    """

    kind = "docker"
    isolated = True

    #: PID 1 of the container: reaps orphans and is immune to ``kill -9 -1`` from inside.
    _INIT = ["bash", "-c", "while :; do sleep 3600 & wait $!; done"]

    def __init__(
        self, limits: Limits | None = None, *, image: str = "python:3.11-slim", client: Any = None
    ) -> None:
        super().__init__(limits)
        if client is None:
            try:
                import docker
            except ImportError as error:
                raise RuntimeError(
                    "DockerSandbox needs the docker SDK: pip install docker"
                ) from error
            client = docker.from_env()
        self.client = client
        self.image = image
        self._container: Any = None
        self._mounted: str | None = None
        self._binds: tuple[Bind, ...] = ()

    @property
    def caps(self) -> Caps:
        return Caps(
            host_uid=None,
            memory="cgroup",
            disk="tmpfs" if tmpfs_available() else "watchdog",
            host_paths_hidden=tmpfs_available(),
        )

    def _container_for(self, workspace: str) -> Any:
        if self._container is not None and self._mounted == workspace:
            return self._container
        self.close()
        from docker.types import Ulimit

        limits = self.limits
        self._container = self.client.containers.run(
            self.image,
            self._INIT,
            detach=True,
            network_disabled=True,
            read_only=True,
            mem_limit=limits.memory_bytes,
            memswap_limit=limits.memory_bytes,
            pids_limit=limits.processes,
            ulimits=[
                Ulimit(name="fsize", soft=limits.file_bytes, hard=limits.file_bytes),
                Ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files),
                Ulimit(name="core", soft=0, hard=0),
            ],
            tmpfs={"/tmp": f"size={limits.tmp_bytes}"},
            volumes={
                workspace: {"bind": "/testbed", "mode": "rw"},
                **{
                    b.source: {"bind": b.target, "mode": "rw" if b.writable else "ro"}
                    for b in self._binds
                },
            },
            working_dir="/testbed",
            environment={"HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"},
        )
        self._mounted = workspace
        return self._container

    def _kill_commands(self) -> None:
        """Kill every process of the container except its init (restart it if that fails)."""
        try:
            self._container.exec_run(["bash", "-c", "kill -9 -1"], user="root")
        except Exception:  # any engine error: fall back to a restart
            self._container.restart(timeout=0)

    def _execute(
        self,
        command: str,
        workspace: str,
        timeout: float,
        merge_stderr: bool,
        env: Mapping[str, str],
    ) -> CommandResult:
        container = self._container_for(workspace)
        start = time.perf_counter()
        api = self.client.api
        environment = {"PAGER": "cat", "TQDM_DISABLE": "1", **env}
        exec_id = api.exec_create(
            container.id,
            ["bash", "-c", command],
            workdir="/testbed",
            environment=environment,
        )["Id"]
        out = _Capture(self.limits.output_bytes)
        err = None if merge_stderr else _Capture(self.limits.output_bytes)
        stop = threading.Event()

        def pump() -> None:
            for chunk_out, chunk_err in api.exec_start(exec_id, stream=True, demux=True):
                if chunk_out:
                    out.feed(chunk_out)
                if chunk_err:
                    (err or out).feed(chunk_err)
                if stop.is_set():
                    return

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        watchdog = _Watchdog(workspace, timeout, self.limits)
        while reader.is_alive():
            reader.join(watchdog.wait_seconds())
            if reader.is_alive() and watchdog.expired():
                break
        stop.set()
        self._kill_commands()
        reader.join(_DOCKER_DRAIN_SECONDS)
        exit_code = api.exec_inspect(exec_id).get("ExitCode")
        return self._result(
            -signal.SIGKILL if exit_code is None else exit_code,
            out,
            err,
            watchdog,
            time.perf_counter() - start,
        )

    def bound(self, binds: Sequence[Bind]) -> tuple[Sandbox, list[str]]:
        box = copy(self)
        box._container, box._mounted, box._binds = None, None, (*self._binds, *binds)
        return box, [b.target for b in binds]

    def close(self) -> None:
        """Remove the container (if any)."""
        container, self._container, self._mounted = self._container, None, None
        if container is not None:
            container.remove(force=True)


@functools.lru_cache(maxsize=1)
def bwrap_available() -> bool:
    """Whether ``bwrap`` is on PATH and a trivial command actually runs in the sandbox (cached)."""
    if shutil.which("bwrap") is None:
        return False
    try:
        with tempfile.TemporaryDirectory(prefix="agentenvs-swe-probe-") as probe:
            result = BwrapSandbox().run("true", probe, timeout=10)
    except (OSError, subprocess.SubprocessError, RuntimeError):
        return False
    return result.exit_code == 0


def make_sandbox(kind: str = "auto", limits: Limits | None = None, **kwargs: Any) -> Sandbox:
    """Build a sandbox of ``kind``: ``"auto"`` (bwrap if it works, else local with a warning),
    ``"bwrap"``, ``"local"`` or ``"docker"``; ``kwargs`` go to the class.

    Raises:
        ValueError: for an unknown ``kind``.
        RuntimeError: for ``"bwrap"`` when bubblewrap does not work here.
    """
    factories: dict[str, Callable[..., Sandbox]] = {
        "bwrap": BwrapSandbox,
        "local": LocalSandbox,
        "docker": DockerSandbox,
    }
    if kind not in SANDBOX_KINDS:
        choices = ", ".join(repr(k) for k in SANDBOX_KINDS)
        raise ValueError(f"unknown sandbox kind {kind!r}; choose one of {choices}")
    if kind == "auto":
        kind = "bwrap" if bwrap_available() else "local"
    elif kind == "bwrap" and not bwrap_available():
        raise RuntimeError(
            "bubblewrap is not installed or does not work here: apt-get install bubblewrap "
            "(or use kind='local', which does not isolate)"
        )
    return factories[kind](limits, **kwargs)
