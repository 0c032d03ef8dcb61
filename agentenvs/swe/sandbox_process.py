"""Sandboxes that run the command as a host subprocess (re-exported by
:mod:`agentenvs.swe.sandbox`).

This module holds:

* ``ProcessSandbox`` - the shared subprocess runner: spawn, retry a failed fork, pump the
  output streams under the watchdog, kill the process tree.
* :class:`LocalSandbox` - the fallback without isolation (rlimits, cleared environment,
  process-group and environment-token killing).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
import warnings
import weakref
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from agentenvs.swe.calls import CommandResult
from agentenvs.swe.reclaim import tagged_prefix
from agentenvs.swe.sandbox_base import (
    Caps,
    Capture,
    Limits,
    Sandbox,
    Watchdog,
    interpreter_paths,
    kill_group,
)
from agentenvs.swe.workspace import (
    tmpfs_available,
)

__all__ = ["LocalSandbox"]


class ProcessSandbox(Sandbox):
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
        kill_group(process.pid)

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
            out = Capture(self.limits.output_bytes)
            err = None if merge_stderr else Capture(self.limits.output_bytes)
            watchdog = Watchdog(workspace, timeout, self.limits, self._probe(process, resources))
            try:
                self._pump(process, out, err, watchdog, environment)
            finally:
                kill_group(process.pid)
                process.wait()
            watchdog.settle()
            seconds = time.perf_counter() - start
            return self._result(process.returncode, out, err, watchdog, seconds)

    def _pump(
        self,
        process: subprocess.Popen[bytes],
        out: Capture,
        err: Capture | None,
        watchdog: Watchdog,
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
        pidfd = pidfd_open(process.pid)
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


def _read_into(selector: selectors.BaseSelector, fd: int, capture: Capture) -> None:
    """Read one chunk of ``fd`` into ``capture``; unregister ``fd`` at end of file."""
    chunk = os.read(fd, 1 << 16)
    if chunk:
        capture.feed(chunk)
    else:
        selector.unregister(fd)


def pidfd_open(pid: int) -> int | None:
    """A file descriptor that becomes readable when ``pid`` exits (Linux 5.3+), else ``None``."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


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


#: ``LocalSandbox`` warns once per process.
_local_warned = False


class LocalSandbox(ProcessSandbox):
    """No isolation (``sandbox="local"``, never chosen by default). DANGER: a hostile agent's
    commands run on the host as this user and can read, change and delete whatever this user
    can, reach the network and leave processes running; use it only with
    trusted agents or in tests, never for RL with an untrusted policy. ``caps.isolation`` is
    ``"none"``.

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
        self.home = tempfile.mkdtemp(prefix=tagged_prefix("home"))
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.home, ignore_errors=True)
        _, path = interpreter_paths()
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
            isolation="none",
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
        kill_group(process.pid)
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
