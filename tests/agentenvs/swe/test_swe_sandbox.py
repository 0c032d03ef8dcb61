"""The SWE sandboxes and workspaces: normal use, then the escape and abuse suite.

Every abuse case checks that the attack is contained, that the result reports it (exit code,
``timed_out``, a marker) and that a fresh command afterwards still works. Cases that only the
bubblewrap sandbox can contain skip for :class:`LocalSandbox` (``isolated = False``), whose weaker
behaviour is asserted where it is documented.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from agentenvs.swe import sandbox as sandbox_module
from agentenvs.swe import sandbox_process
from agentenvs.swe.calls import TIMEOUT_EXIT_CODE, CommandResult
from agentenvs.swe.sandbox import (
    BwrapSandbox,
    DockerSandbox,
    Limits,
    LocalSandbox,
    Sandbox,
    bwrap_available,
    make_sandbox,
)
from agentenvs.swe.workspace import Workspace, tree_bytes

psutil = pytest.importorskip("psutil")

needs_bwrap = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap does not work here")
KINDS = [pytest.param("bwrap", marks=needs_bwrap), "local"]
#: Small caps so that the abuse cases finish fast.
LIMITS = Limits(workspace_bytes=48 * 2**20, output_bytes=2**20, file_bytes=16 * 2**20)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny repository: a module, a passing test, a symlink and a git directory."""
    root = tmp_path_factory.mktemp("repo")
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_core.py").write_text(
        "from pkg.core import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (root / "link.py").symlink_to("pkg/core.py")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return root


@pytest.fixture
def workspace(repo: Path, tmp_path: Path):
    with Workspace(repo, parent=tmp_path) as ws:
        yield ws


@pytest.fixture(params=KINDS)
def sandbox(request: pytest.FixtureRequest):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        box = make_sandbox(request.param, LIMITS)
    yield box
    box.close()


@pytest.fixture
def bwrap() -> Sandbox:
    if not bwrap_available():
        pytest.skip("bubblewrap does not work here")
    return BwrapSandbox(LIMITS)


def assert_healthy(box: Sandbox, ws: Workspace) -> None:
    """A normal command in a fresh run works after an attack."""
    result = box.run("echo ok > probe.txt && cat probe.txt && rm probe.txt", ws, timeout=20)
    assert (result.exit_code, result.stdout, result.timed_out) == (0, "ok\n", False), result


def sleepers(tag: str) -> list:
    """Host processes running ``sleep <tag>``."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if proc.info["cmdline"] == ["sleep", tag]:
            found.append(proc)
    return found


def tagged(tag: str) -> int:
    """How many host processes carry ``tag`` in their command line (forks of a ``bash -c``
    command keep its text); counting the whole host would be at the mercy of other work."""
    count = 0
    for proc in psutil.process_iter(["cmdline"]):
        if any(tag in part for part in proc.info["cmdline"] or ()):
            count += 1
    return count


def wait_until(predicate, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


# --- workspace -----------------------------------------------------------------------------------


def test_workspace_copy_is_independent_and_complete(repo: Path, tmp_path: Path) -> None:
    ws = Workspace(repo, parent=tmp_path)
    assert ws.path.parent == tmp_path and ws.path.name.startswith("agentenvs-swe-")
    assert (ws.path / ".git" / "HEAD").is_file()
    assert os.readlink(ws.path / "link.py") == "pkg/core.py"
    assert (ws.path / "pkg" / "core.py").stat().st_ino != (repo / "pkg" / "core.py").stat().st_ino
    (ws.path / "pkg" / "core.py").write_text("changed\n")
    assert (repo / "pkg" / "core.py").read_text().startswith("def add")
    assert os.fspath(ws) == str(ws.path)
    ws.cleanup()
    assert not ws.path.exists() and ws.closed
    ws.cleanup()  # idempotent


def test_workspace_hashes_changes_and_size(workspace: Workspace) -> None:
    before = workspace.file_hashes()
    assert set(before) == {"pkg/__init__.py", "pkg/core.py", "tests/test_core.py", "link.py"}
    (workspace.path / "pkg" / "core.py").write_text("x = 1\n")
    (workspace.path / "new.txt").write_text("new\n")
    (workspace.path / "tests" / "test_core.py").unlink()
    changes = Workspace.changes(before, workspace.file_hashes())
    assert [(c.path, c.kind) for c in changes] == [
        ("new.txt", "created"),
        ("pkg/core.py", "modified"),
        ("tests/test_core.py", "deleted"),
    ]
    assert changes[0].before_sha1 is None and changes[2].after_sha1 is None
    assert ".git/HEAD" in workspace.file_hashes(exclude=())
    assert workspace.size_bytes() == tree_bytes(workspace.path) > 0
    small = Workspace(workspace.path, parent=workspace.path.parent, max_bytes=10)
    assert small.over_limit() and not workspace.over_limit()
    small.cleanup()


def test_workspace_copy_and_robust_cleanup(workspace: Workspace) -> None:
    (workspace.path / "locked").mkdir()
    (workspace.path / "locked" / "f").write_text("x")
    other = workspace.copy()
    assert (other.path / "locked" / "f").read_text() == "x"
    assert other.path.parent == workspace.path.parent
    os.chmod(other.path / "locked" / "f", 0)
    os.chmod(other.path / "locked", 0)
    os.chmod(other.path / "pkg", stat.S_IRUSR | stat.S_IXUSR)
    other.cleanup()
    assert not other.path.exists()


def test_workspace_removed_when_collected(repo: Path, tmp_path: Path) -> None:
    path = Workspace(repo, parent=tmp_path).path
    assert not path.exists()


def test_workspace_copy_is_fast(repo: Path, tmp_path: Path) -> None:
    source = Workspace(repo, parent=tmp_path)
    for i in range(55):
        (source.path / "pkg" / f"m{i}.py").write_text(f"x = {i}\n" * 20)
    start = time.perf_counter()
    copies = [source.copy() for _ in range(5)]
    per_copy = (time.perf_counter() - start) / 5
    assert per_copy < 0.2  # ~5 ms on an idle core; generous for loaded CI machines
    for ws in copies + [source]:
        ws.cleanup()


# --- normal use ----------------------------------------------------------------------------------


def test_runs_in_the_workspace(sandbox: Sandbox, workspace: Workspace) -> None:
    result = sandbox.run("pwd; ls; echo err >&2; exit 3", workspace)
    cwd = "/testbed" if sandbox.isolated else str(workspace.path)
    assert result.stdout.splitlines()[0] == cwd
    assert "pkg" in result.stdout and result.stderr == "err\n"
    assert (result.exit_code, result.timed_out, result.truncated, result.refused) == (
        3,
        False,
        False,
        False,
    )
    assert result.seconds > 0


def test_merge_stderr_and_cleaning(sandbox: Sandbox, workspace: Workspace) -> None:
    result = sandbox.run(
        r"printf '\033[31mred\033[0m\r\n'; echo two >&2; printf '\377\n'",
        workspace,
        merge_stderr=True,
    )
    assert result.stdout == "red\ntwo\n\ufffd\n" and result.stderr == ""


def test_env_is_cleared(sandbox: Sandbox, workspace: Workspace, monkeypatch) -> None:
    monkeypatch.setenv("AGENTENVS_HOST_SECRET", "hunter2")
    result = sandbox.run("env", workspace, env={"EXTRA": "1"})
    assert "hunter2" not in result.stdout and "AGENTENVS_HOST_SECRET" not in result.stdout
    assert "EXTRA=1" in result.stdout and "PYTHONDONTWRITEBYTECODE=1" in result.stdout
    assert f"PATH={os.path.dirname(sys.executable)}:" in result.stdout


def test_pytest_runs_inside(sandbox: Sandbox, workspace: Workspace) -> None:
    result = sandbox.run(
        "python -m pytest -q -p no:cacheprovider tests && pytest --version", workspace
    )
    assert result.exit_code == 0, result.output
    assert "1 passed" in result.stdout
    assert not list(workspace.path.rglob("__pycache__"))


def test_testbed_writable_usr_readonly(bwrap: Sandbox, workspace: Workspace) -> None:
    result = bwrap.run("touch /testbed/made && touch /usr/x", workspace)
    assert (workspace.path / "made").exists()
    assert result.exit_code != 0 and "Read-only file system" in result.stderr


# --- file system escapes -------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["/usr/x", "/etc/x", "/root/x", "/x", "/dev/x", "/etc/passwd"])
def test_writes_outside_fail(bwrap: Sandbox, workspace: Workspace, target: str) -> None:
    result = bwrap.run(f"echo pwned >> {target}", workspace)
    assert result.exit_code != 0
    # As an unprivileged user (the sandbox's when the host is root) permissions refuse it first.
    reasons = ("Read-only file system", "No such file", "Permission denied")
    assert any(reason in result.stderr for reason in reasons), result.stderr
    assert not Path(target).exists() or "pwned" not in Path(target).read_text(errors="replace")
    assert_healthy(bwrap, workspace)


def test_host_tmp_is_invisible(bwrap: Sandbox, workspace: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("top secret")
    name = f"agentenvs-escape-{os.getpid()}"
    result = bwrap.run(f"cat {secret}; ls /tmp; echo x > /tmp/{name}; ls {tmp_path}", workspace)
    assert "top secret" not in result.stdout and "No such file" in result.stderr
    assert not (Path("/tmp") / name).exists()
    assert_healthy(bwrap, workspace)


def test_host_secrets_are_invisible(bwrap: Sandbox, workspace: Workspace) -> None:
    project_file = Path(__file__).resolve().parents[3] / "pyproject.toml"
    result = bwrap.run(
        f"cat /etc/shadow {project_file}; ls -A /etc/ssh /etc/ssl/private; ls -A /root", workspace
    )
    assert result.stderr.count("No such file or directory") == 4, result.stderr
    assert result.stdout.split() in ([], [".pyenv"])  # only an interpreter prefix under /root
    assert_healthy(bwrap, workspace)


def test_local_is_not_isolated(workspace: Workspace) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        local = LocalSandbox(LIMITS)
    assert local.isolated is False and local.kind == "local"
    result = local.run("echo $HOME; test -w $HOME && echo writable", workspace)
    assert result.stdout == f"{local.home}\nwritable\n"
    local.close()
    assert not os.path.exists(local.home)


# --- network -------------------------------------------------------------------------------------


def test_no_network(bwrap: Sandbox, workspace: Workspace) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    script = (
        "import socket\n"
        f"for addr in [('1.1.1.1', 53), ('127.0.0.1', {port})]:\n"
        "    try:\n"
        "        socket.create_connection(addr, timeout=2).close(); print('CONNECTED', addr)\n"
        "    except OSError as error:\n"
        "        print('failed', addr, error)\n"
    )
    (workspace.path / "net.py").write_text(script)
    result = bwrap.run("python net.py", workspace, timeout=20)
    with pytest.raises(BlockingIOError):
        listener.accept()
    listener.close()
    assert "CONNECTED" not in result.stdout and result.stdout.count("failed") == 2, result
    assert_healthy(bwrap, workspace)


# --- processes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_fork_bomb_that_returns(kind: str, workspace: Workspace) -> None:
    """The classic bomb: the shell returns at once; the bomb must not outlive the run."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        box = make_sandbox(kind, LIMITS)
    tag = f"bomb-{os.getpid()}-{kind}"
    result = box.run(f":(){{ :|:& }};: # {tag}", workspace, timeout=3)
    # As root (CI) nothing caps the local bomb's processes until the run kills its group: the
    # bomb competes with the caller for the CPU meanwhile, so allow more time there.
    assert result.seconds < (10 if box.isolated else 60)
    assert wait_until(lambda: tagged(tag) == 0, 15), tagged(tag)
    assert_healthy(box, workspace)
    box.close()


def test_fork_bomb_that_stays(bwrap: Sandbox, workspace: Workspace) -> None:
    """A bomb that keeps the shell alive is killed at the process cap (or the timeout)."""
    tag = f"bomb-{os.getpid()}-stays"
    result = bwrap.run(f":(){{ :|:& }};: ; sleep 60 # {tag}", workspace, timeout=3)
    assert result.exit_code in (137, TIMEOUT_EXIT_CODE)
    assert result.timed_out or "[more than 512 processes: command killed]" in result.stderr
    assert wait_until(lambda: tagged(tag) == 0, 15), tagged(tag)
    assert_healthy(bwrap, workspace)


def test_infinite_loop_times_out(sandbox: Sandbox, workspace: Workspace) -> None:
    result = sandbox.run("echo started; while true; do :; done", workspace, timeout=1)
    assert (result.exit_code, result.timed_out) == (TIMEOUT_EXIT_CODE, True)
    assert result.stdout == "started\n" and 1 <= result.seconds < 5
    assert_healthy(sandbox, workspace)


def test_huge_output_is_truncated(sandbox: Sandbox, workspace: Workspace) -> None:
    rss = psutil.Process().memory_info().rss
    result = sandbox.run("head -c 1G /dev/zero | tr '\\0' a; echo done >&2", workspace, timeout=60)
    assert result.exit_code == 0 and not result.timed_out and result.truncated
    assert result.stdout.endswith("a\n[output truncated at 1 MiB]")
    assert len(result.stdout) < 2**20 + 100 and result.stderr == "done\n"
    assert psutil.Process().memory_info().rss - rss < 64 * 2**20
    assert result.seconds < 30


def test_big_file_stopped_by_file_size_limit(sandbox: Sandbox, workspace: Workspace) -> None:
    result = sandbox.run("head -c 1G /dev/zero > big.bin", workspace, timeout=30)
    assert result.exit_code == 128 + 25  # SIGXFSZ
    assert (workspace.path / "big.bin").stat().st_size == LIMITS.file_bytes
    (workspace.path / "big.bin").unlink()
    assert_healthy(sandbox, workspace)


def test_filling_the_disk_is_stopped_then_refused(sandbox: Sandbox, workspace: Workspace) -> None:
    command = "for i in $(seq 100); do head -c 10M /dev/zero > f$i.bin; sleep 0.02; done"
    result = sandbox.run(command, workspace, timeout=30)
    assert result.exit_code == 137 and not result.timed_out
    assert result.stderr.endswith("[workspace over 48 MiB: command killed]\n")
    # The watchdog measures every 0.1 s or more (longer on a loaded machine): the writer gets
    # a few more files in before the kill, far short of the 1,000 MB it would write.
    assert tree_bytes(workspace.path) < LIMITS.workspace_bytes + 64 * 2**20
    refused = sandbox.run("echo never", workspace)
    assert refused.refused and refused.exit_code == 1 and refused.stdout == ""
    assert "workspace over 48 MiB" in refused.stderr
    for path in workspace.path.glob("f*.bin"):
        path.unlink()
    assert_healthy(sandbox, workspace)


@pytest.mark.parametrize("attack", ["kill -9 $PPID", "kill -9 -1", "kill -9 1; kill 1"])
def test_killing_the_parent_spares_the_host(
    sandbox: Sandbox, workspace: Workspace, attack: str
) -> None:
    if attack == "kill -9 -1" and not sandbox.isolated:
        pytest.skip("kill -9 -1 as the host user would kill every host process (no PID namespace)")
    if attack.startswith("kill -9 1") and not sandbox.isolated:
        pytest.skip("PID 1 is the host's init without a PID namespace")
    result = sandbox.run(f"{attack}; echo survived", workspace, timeout=10)
    assert not result.timed_out
    assert result.exit_code in (0, 137)
    assert_healthy(sandbox, workspace)


@pytest.mark.parametrize(
    "spawn", ["sleep {tag} &", "nohup sleep {tag} > /dev/null 2>&1 &", "setsid sleep {tag} &"]
)
def test_background_processes_do_not_survive(
    sandbox: Sandbox, workspace: Workspace, spawn: str
) -> None:
    tag = f"{300 + os.getpid() % 1000}.{len(spawn)}"
    result = sandbox.run(spawn.format(tag=tag) + " echo started", workspace, timeout=10)
    assert result.exit_code == 0 and result.seconds < 5, result
    assert wait_until(lambda: not sleepers(tag), 3), f"{spawn!r} survived in {sandbox.kind}"
    assert_healthy(sandbox, workspace)


# --- construction --------------------------------------------------------------------------------


def test_make_sandbox_choices() -> None:
    with pytest.raises(ValueError, match="'auto', 'bwrap', 'local', 'docker'"):
        make_sandbox("podman")
    if bwrap_available():
        box = make_sandbox()
        assert box.kind == "bwrap" and box.caps.isolation == "namespaces"
        assert box.limits == Limits() and box.isolated
        box.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        local = make_sandbox("local")
    assert local.caps.isolation == "none" and not local.isolated
    local.close()


def test_bwrap_missing_is_reported(monkeypatch) -> None:
    """Without a working bubblewrap nothing falls back to the unisolated local sandbox: the
    default kind and ``gym.make("agentenvs/SWE-v0")`` raise one line naming the apt package."""
    import gymnasium as gym

    monkeypatch.setattr(sandbox_module, "bwrap_available", lambda: False)
    for kind in ("auto", "bwrap"):
        with pytest.raises(RuntimeError, match="apt-get install bubblewrap") as raised:
            make_sandbox(kind)
        assert "\n" not in str(raised.value)
    with pytest.raises(RuntimeError, match="apt-get install bubblewrap"):
        gym.make("agentenvs/SWE-v0")
    with pytest.raises(RuntimeError, match="apt-get install bubblewrap"):
        BwrapSandbox(bwrap="no-such-bwrap-binary")


def test_local_warns_once(monkeypatch) -> None:
    monkeypatch.setattr(sandbox_process, "_local_warned", False)
    with pytest.warns(RuntimeWarning, match="weaker"):
        LocalSandbox().close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LocalSandbox().close()


def test_docker_sandbox() -> None:
    docker = pytest.importorskip("docker", reason="the docker SDK is not installed")
    try:
        docker.from_env().ping()
    except Exception as error:  # any connection problem
        pytest.skip(f"no Docker engine: {error}")
    with (
        DockerSandbox(LIMITS) as box,
        Workspace(Path(__file__).resolve().parents[2] / "fixtures") as ws,
    ):
        result = box.run("pwd; echo err >&2", ws)
        assert (result.exit_code, result.stdout, result.stderr) == (0, "/testbed\n", "err\n")
        assert box.run("sleep 30", ws, timeout=1).timed_out
        assert box.run("echo ok", ws).stdout == "ok\n"


def test_bwrap_retries_when_the_host_is_briefly_out_of_processes(bwrap, workspace, monkeypatch):
    """bwrap's own EAGAIN report (the command never ran) is retried; a command's own output
    that merely mentions it is not."""
    eagain = CommandResult(1, "", "bwrap: Can't fork for pid 1: Resource temporarily unavailable\n")
    real = sandbox_process.ProcessSandbox._run_once
    calls = []

    def flaky(self, *args):
        calls.append(args[0])
        return eagain if len(calls) <= 2 else real(self, *args)

    monkeypatch.setattr(sandbox_process.ProcessSandbox, "_run_once", flaky)
    result = bwrap.run("echo ran", workspace)
    assert (result.exit_code, result.stdout, len(calls)) == (0, "ran\n", 3)
    calls.clear()
    said = bwrap.run("echo 'bwrap: x: Resource temporarily unavailable'; exit 1", workspace)
    assert said.exit_code == 1 and len(calls) == 3  # stdout, not bwrap's report: no more retries


def test_a_failed_fork_is_retried_then_reported(sandbox, workspace, monkeypatch):
    """``fork`` failing with EAGAIN on the host (nothing started) is retried, and reported as exit
    code 126 with a message if it goes on failing, never raised."""
    real = subprocess.Popen
    tries = []

    def failing(*args, **kwargs):
        tries.append(1)
        if len(tries) <= 2:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return real(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", failing)
    assert sandbox.run("echo ran", workspace).stdout == "ran\n" and len(tries) == 3

    def always(*args, **kwargs):
        tries.append(1)
        raise BlockingIOError(11, "Resource temporarily unavailable")

    tries.clear()
    monkeypatch.setattr(subprocess, "Popen", always)
    result = sandbox.run("echo never", workspace)
    assert result.exit_code == 126 and len(tries) == 4
    assert result.stderr == "cannot start the command: Resource temporarily unavailable\n"
