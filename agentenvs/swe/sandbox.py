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
* :class:`LocalSandbox` - no isolation (the agent's commands run on the host as this user):
  rlimits, a cleared environment and process-group killing only; used only when asked for by
  name.
* :class:`DockerSandbox` - one long-lived container per sandbox (optional ``docker`` SDK).
* :func:`bwrap_available`, :func:`make_sandbox` - pick and build a sandbox.
* :class:`Bind` / :meth:`Sandbox.bound` - extra host directories for one run (grading's plugin
  and report directories).

Every sandbox caps each output stream at ``Limits.output_bytes`` (the rest is read and discarded),
decodes UTF-8 with replacement, strips ANSI colour codes and ``\\r``, kills the command's whole
process tree on the wall timeout (``exit_code`` 124, ``timed_out``), kills it when the workspace
grows over ``Limits.workspace_bytes`` (or its tmpfs is full) and refuses to run while the
workspace is over that cap.

The classes live in :mod:`~agentenvs.swe.sandbox_base` (``Limits``, ``Caps``, ``Bind``,
``Sandbox``), :mod:`~agentenvs.swe.sandbox_process` (``LocalSandbox``),
:mod:`~agentenvs.swe.sandbox_bwrap` (``BwrapSandbox``, with the memory cgroups and process counting
of :mod:`~agentenvs.swe.sandbox_memory`) and :mod:`~agentenvs.swe.sandbox_docker`
(``DockerSandbox``); this module re-exports them and picks one.

>>> make_sandbox("nope")
Traceback (most recent call last):
...
ValueError: unknown sandbox kind 'nope'; choose one of 'auto', 'bwrap', 'local', 'docker'
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from typing import Any

from agentenvs.swe.sandbox_base import KILLED_EXIT_CODE as KILLED_EXIT_CODE
from agentenvs.swe.sandbox_base import MAX_COMMAND_BYTES, Bind, Caps, Limits, Sandbox
from agentenvs.swe.sandbox_bwrap import ETC_ALLOWLIST as ETC_ALLOWLIST
from agentenvs.swe.sandbox_bwrap import BwrapSandbox
from agentenvs.swe.sandbox_docker import DockerSandbox
from agentenvs.swe.sandbox_process import LocalSandbox

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
    """Build a sandbox of ``kind``: ``"auto"`` or ``"bwrap"`` (bubblewrap), ``"local"`` (no
    isolation: the commands run on the host as this user, so a hostile agent can read and write
    whatever this user can; only for trusted agents and tests) or ``"docker"``; ``kwargs`` go to
    the class. ``"auto"`` never falls back to ``"local"``.

    Raises:
        ValueError: for an unknown ``kind``.
        RuntimeError: for ``"auto"``/``"bwrap"`` when bubblewrap does not work here.
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
        kind = "bwrap"
    if kind == "bwrap" and not bwrap_available():
        raise RuntimeError(
            "SWE-v0 needs a working bubblewrap sandbox: apt-get install bubblewrap "
            "(sandbox='local' runs the agent's commands on the host, unisolated)"
        )
    return factories[kind](limits, **kwargs)
