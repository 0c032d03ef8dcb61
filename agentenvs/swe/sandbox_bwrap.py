"""The bubblewrap sandbox (re-exported by :mod:`agentenvs.swe.sandbox`).

This module holds:

* :class:`BwrapSandbox` - read-only system, the workspace bound at ``/testbed``, no network, own
  PID namespace, an allowlisted ``/etc`` (``ETC_ALLOWLIST``), the host interpreter's prefixes
  read-only, an unprivileged host uid and a memory cgroup per command.
* the helpers that build its ``bwrap`` arguments (the package and cache paths hidden under a
  bound prefix, binds, the ``/etc`` copy).

No host path of the env's own shows inside where this process may mount (root): bwrap reads its
arguments from a descriptor (``--args``), so ``/proc/1/cmdline`` reads ``bwrap --args 3``, and the
``/etc`` copy, like every workspace, is its own tmpfs, so ``/proc/self/mountinfo`` shows no
directory of the host for it.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from copy import copy

from agentenvs.swe.reclaim import tagged_prefix
from agentenvs.swe.sandbox_base import Bind, Caps, Limits, Sandbox, interpreter_paths, kill_group
from agentenvs.swe.sandbox_memory import NamespaceCounter, init_pid_of, memory_cgroups
from agentenvs.swe.sandbox_process import ProcessSandbox, pidfd_open
from agentenvs.swe.workspace import (
    SANDBOX_ID,
    Workspace,
    own_tree,
    tmpfs_available,
)

__all__ = ["BwrapSandbox", "ETC_ALLOWLIST"]

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


class BwrapSandbox(ProcessSandbox):
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
        etc = _etc_copy()
        self._etc = os.fspath(etc)
        self._cleanup_etc: weakref.finalize | None = weakref.finalize(self, _remove_etc_copy, etc)
        self._prefix_args, path = self._static_args()
        self._cgroups = memory_cgroups() if memory == "auto" else None
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
            isolation="namespaces",
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
        prefixes, path = interpreter_paths()
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
    def _resources(self, workspace: str) -> Iterator[tuple[str | None, int]]:
        """The command's memory cgroup (its path), if any, and a memory file for bwrap's
        arguments; a workspace that the sandbox user does not own is given to it first."""
        if self.user is not None and os.stat(workspace).st_uid != self.user[0]:
            own_tree(workspace, self.user)
        cgroup = None
        args = os.memfd_create("agentenvs-bwrap-args")
        try:
            if self._cgroups is not None:
                cgroup = self._cgroups.create(self.limits.memory_bytes)
            yield cgroup, args
        finally:
            os.close(args)
            if cgroup is not None and self._cgroups is not None:
                self._cgroups.remove(cgroup)

    def _popen_args(
        self,
        command: str,
        workspace: str,
        env: Mapping[str, str] | None,
        timeout: float,
        resources: tuple[str | None, int],
    ) -> tuple[list[str], str | None, dict[str, str]]:
        cgroup, args_fd = resources
        args = list(self._prefix_args[1:])
        args += ["--bind", workspace, "/testbed"]
        # Remount the sandbox's root and /dev read-only last: writes there would fill RAM.
        args += ["--remount-ro", "/dev", "--remount-ro", "/", "--clearenv"]
        for key, value in {**self._env, **(env or {})}.items():
            args += ["--setenv", key, value]
        # cd before the drop: bwrap's own chdir comes after it gave up the capabilities.
        script = f"{self.limits.ulimit(timeout)} && cd /testbed || exit 126; "
        script += f'exec {self._drop}bash -c "$1"'
        os.ftruncate(args_fd, 0)
        os.pwrite(args_fd, b"".join(os.fsencode(a) + b"\0" for a in args), 0)
        # bwrap reads its options from descriptor 3, so its command line (PID 1's inside) shows
        # none of the host paths; with a cgroup, the shell joins it first.
        places = [f"/proc/{os.getpid()}/fd/{args_fd}"]  # shell variables, never exported
        launch = 'a=$1; shift; exec "$0" --args 3 "$@" 3<"$a"'
        if cgroup is not None:
            places.append(os.path.join(cgroup, "cgroup.procs"))
            launch = 'a=$1 p=$2; shift 2; echo $$ > "$p" && exec "$0" --args 3 "$@" 3<"$a"'
        argv = ["/bin/sh", "-c", launch, self.bwrap, *places, "bash", "-c", script, "bash"]
        return [*argv, command], None, {}

    def _probe(
        self, process: subprocess.Popen[bytes], resources: tuple[str | None, int]
    ) -> Callable[[], str | None]:
        """Kill on an out-of-memory kill in the cgroup, too many processes, or (without a
        cgroup) too much summed resident memory."""
        counter, limits, cgroups = NamespaceCounter(process.pid), self.limits, self._cgroups
        cgroup = resources[0]

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
        box._cleanup_etc = None  # the copy shares this sandbox's /etc copy: closing it keeps it
        for b in binds:
            option = "--bind" if b.writable else "--ro-bind"
            box._prefix_args = [*box._prefix_args, *_bind_args(option, b.source, b.target)]
        return box, [b.target for b in binds]

    def close(self) -> None:
        """Remove the ``/etc`` copy (also done at garbage collection and exit; a sandbox from
        :meth:`bound` leaves it to this one). Commands run after it fail to start."""
        if self._cleanup_etc is not None:
            self._cleanup_etc()

    def _after(self, process: subprocess.Popen[bytes], env: Mapping[str, str]) -> None:
        """Kill bwrap (its PID namespace dies with it) and wait until the namespace is gone."""
        init = init_pid_of(process.pid)
        pidfd = pidfd_open(init) if init is not None else None
        kill_group(process.pid)
        if pidfd is not None:
            try:  # the init exits only after every other process of its namespace is reaped
                select.select([pidfd], [], [], self.drain_seconds)
            finally:
                os.close(pidfd)


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


def _etc_copy() -> Workspace:
    """A private copy of the :data:`ETC_ALLOWLIST` entries of ``/etc`` (and ``mtab``), bound as
    the sandbox's ``/etc``: one mount instead of one per entry keeps bwrap's start-up ~4 ms
    shorter. It is a :class:`~agentenvs.swe.workspace.Workspace` (its own tmpfs where this
    process may mount, so no host path shows in the sandbox's mountinfo) in a directory
    ``agentenvs-etc-*`` of its own."""
    with tempfile.TemporaryDirectory(prefix="agentenvs-etc-") as etc:
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
        parent = tempfile.mkdtemp(prefix=tagged_prefix("etc"))
        try:
            return Workspace(etc, parent=parent, max_bytes=64 * 2**20)
        except BaseException:
            os.rmdir(parent)
            raise


def _remove_etc_copy(etc: Workspace) -> None:
    """Remove the ``/etc`` copy and the directory :func:`_etc_copy` made for it."""
    etc.cleanup()
    if etc.parent is not None:
        shutil.rmtree(etc.parent, ignore_errors=True)
