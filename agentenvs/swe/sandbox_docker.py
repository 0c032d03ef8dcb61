"""The Docker sandbox (optional ``docker`` SDK; re-exported by :mod:`agentenvs.swe.sandbox`).

This module holds :class:`DockerSandbox`: one long-lived container per sandbox.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Mapping, Sequence
from copy import copy
from typing import Any

from agentenvs.swe.calls import CommandResult
from agentenvs.swe.sandbox_base import Bind, Caps, Capture, Limits, Sandbox, Watchdog
from agentenvs.swe.workspace import (
    tmpfs_available,
)

__all__ = ["DockerSandbox"]

#: Seconds to wait for a Docker command's output to end once its processes were killed.
_DOCKER_DRAIN_SECONDS = 2.0


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
            isolation="container",
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
        out = Capture(self.limits.output_bytes)
        err = None if merge_stderr else Capture(self.limits.output_bytes)
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
        watchdog = Watchdog(workspace, timeout, self.limits)
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
