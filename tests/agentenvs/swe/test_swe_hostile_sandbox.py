"""The bubblewrap sandbox against a hostile command: no root, caps that cap (issue 23, classes 2, 6).

Each case attacks once, checks that the host is unchanged (ownership, ``/proc/sys``, setuid bits,
mounts, cgroups, processes) and that a normal command still works afterwards. Cases that need
what only root has here (mounting, another host user) skip elsewhere; the weaker fallbacks
(no tmpfs, no memory cgroup) are forced by monkeypatching the probes and tested too.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
import warnings
from pathlib import Path

import pytest

from agentenvs.swe import sandbox_memory
from agentenvs.swe import workspace as workspace_module
from agentenvs.swe.r2e import FileEditor
from agentenvs.swe.sandbox import BwrapSandbox, Limits, LocalSandbox, bwrap_available
from agentenvs.swe.workspace import (
    INODE_BYTES,
    SANDBOX_ID,
    Workspace,
    tmpfs_available,
    tree_bytes,
)

psutil = pytest.importorskip("psutil")

pytestmark = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap does not work here")
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="needs root (the CI case)")
needs_tmpfs = pytest.mark.skipif(not tmpfs_available(), reason="cannot mount a tmpfs here")
#: Small caps so that the cases finish fast.
CAP = 8 * 2**20
LIMITS = Limits(memory_bytes=256 * 2**20, workspace_bytes=CAP, file_bytes=4 * 2**20)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    (root / "pkg").mkdir()
    (root / "pkg" / "core.py").write_text("def add(a, b):\n    return a + b\n")
    return root


@pytest.fixture
def workspace(repo: Path, tmp_path: Path):
    with Workspace(repo, parent=tmp_path, max_bytes=CAP) as ws:
        yield ws


@pytest.fixture
def box():
    sandbox = BwrapSandbox(LIMITS)
    yield sandbox
    sandbox.close()


def healthy(box: BwrapSandbox, ws: Workspace) -> bool:
    result = box.run("echo ok > probe && cat probe && rm probe", ws, timeout=20)
    return (result.exit_code, result.stdout) == (0, "ok\n")


def mount_line(path: Path) -> str | None:
    """The ``/proc/self/mounts`` line of the mount point ``path``, if it is one."""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        if line.split()[1] == str(path):
            return line
    return None


# --- not root inside, not root outside -----------------------------------------------------------


def test_commands_do_not_run_as_host_root(box: BwrapSandbox, workspace: Workspace) -> None:
    result = box.run("id -u; id -G; touch made; mkdir dir", workspace)
    assert result.exit_code == 0, result
    uid = SANDBOX_ID if ROOT else os.geteuid()
    if ROOT:  # no supplementary groups either
        assert result.stdout == f"{SANDBOX_ID}\n{SANDBOX_ID}\n"
    assert box.caps.host_uid == uid
    for name in ("made", "dir"):  # seen from the host
        assert (workspace.path / name).stat().st_uid == uid
    assert healthy(box, workspace)


def test_capabilities_are_gone(box: BwrapSandbox, workspace: Workspace) -> None:
    result = box.run(
        "grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status", workspace
    )
    fields = dict(line.split(":") for line in result.stdout.splitlines())
    assert int(fields["NoNewPrivs"]) == 1
    assert all(int(fields[key], 16) == 0 for key in ("CapEff", "CapPrm", "CapAmb"))
    if ROOT:
        assert int(fields["CapBnd"], 16) == 0


@pytest.mark.parametrize(
    "target",
    ["/proc/sys/kernel/core_pattern", "/proc/sys/kernel/panic", "/proc/sys/fs/file-max"],
)
def test_host_kernel_knobs_are_not_writable(
    box: BwrapSandbox, workspace: Workspace, target: str
) -> None:
    if not Path(target).exists():
        pytest.skip(f"{target} does not exist here")
    before = Path(target).read_text()
    result = box.run(f"echo '|/testbed/pwn' > {target}", workspace)
    assert result.exit_code != 0
    assert "Permission denied" in result.stderr or "Read-only" in result.stderr, result.stderr
    assert Path(target).read_text() == before
    assert healthy(box, workspace)


def test_workspace_is_private_and_owned_by_the_sandbox_user(workspace: Workspace) -> None:
    st = workspace.path.stat()
    assert stat.S_IMODE(st.st_mode) == 0o700
    assert (st.st_uid, st.st_gid) == (
        (SANDBOX_ID, SANDBOX_ID) if ROOT else (os.geteuid(), os.getegid())
    )
    assert all(p.lstat().st_uid == st.st_uid for p in workspace.path.rglob("*"))
    if workspace.tmpfs:
        options = mount_line(workspace.path).split()[3].split(",")
        assert {"nosuid", "nodev"} <= set(options)


@needs_root
def test_setuid_files_give_no_host_privilege(
    box: BwrapSandbox, workspace: Workspace, tmp_path: Path
) -> None:
    result = box.run("cp /usr/bin/id ./idx && chmod u+s,g+s ./idx && ls -ln ./idx", workspace)
    assert result.exit_code == 0 and result.stdout.startswith("-rwsr-s"), result
    made = workspace.path / "idx"
    assert made.stat().st_uid == SANDBOX_ID  # a setuid file of the sandbox user, never root's

    def as_nobody(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(path), "-u"],
            capture_output=True,
            text=True,
            check=False,
            user=65534,
            group=65534,
            extra_groups=[],
        )

    with pytest.raises(PermissionError):  # the workspace is 0700
        as_nobody(made)
    # Even copied out of it (owner and bits kept), it gives the sandbox's uid, never root's.
    with tempfile.TemporaryDirectory() as out:  # under /tmp: reachable by nobody
        os.chmod(out, 0o755)
        copy = Path(out) / "idx"
        subprocess.run(["cp", "-p", str(made), str(copy)], check=True)
        assert as_nobody(copy).stdout.strip() == str(SANDBOX_ID)
    # A workspace copy (e.g. for grading) holds no setuid bit at all.
    with workspace.copy() as graded:
        mode = (graded.path / "idx").stat().st_mode
        assert not mode & (stat.S_ISUID | stat.S_ISGID)
        assert (graded.path / "idx").stat().st_uid == SANDBOX_ID


def test_host_side_edits_stay_writable_by_the_sandbox(
    box: BwrapSandbox, workspace: Workspace
) -> None:
    editor = FileEditor(workspace.path)
    out, ok = editor({"command": "create", "path": "/testbed/new.py", "file_text": "x = 1\n"})
    assert ok, out
    assert (workspace.path / "new.py").stat().st_uid == workspace.path.stat().st_uid
    result = box.run("echo 'y = 2' >> new.py && cat new.py", workspace)
    assert (result.exit_code, result.stdout) == (0, "x = 1\ny = 2\n"), result


def test_a_foreign_directory_is_given_to_the_sandbox_user(
    box: BwrapSandbox, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    (plain / "sub").mkdir(parents=True)
    (plain / "sub" / "f").write_text("x")
    result = box.run("echo more >> sub/f && cat sub/f", plain)
    assert (result.exit_code, result.stdout) == (0, "xmore\n"), result
    assert stat.S_IMODE(plain.stat().st_mode) == 0o700


# --- memory: the whole command -------------------------------------------------------------------


@pytest.mark.parametrize("enforcer", ["cgroup", "watchdog"])
def test_memory_cap_counts_the_whole_command(enforcer: str, workspace: Workspace) -> None:
    box = BwrapSandbox(LIMITS, memory="auto" if enforcer == "cgroup" else "watchdog")
    if box.caps.memory != enforcer:
        pytest.skip(f"no memory {enforcer} here")
    tag = f"memhog{os.getpid()}{enforcer}"
    hog = f"import time; b = bytearray(100 * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep(30)  # {tag}"
    command = f'for i in 1 2 3 4; do python -c "{hog}" & done; wait; echo survived'
    result = box.run(command, workspace, timeout=60)
    assert result.exit_code == 137 and "survived" not in result.stdout, result
    assert result.stderr.endswith("[memory over 256 MiB: command killed]\n")
    assert result.seconds < 20
    assert not [
        p for p in psutil.process_iter(["cmdline"]) if tag in " ".join(p.info["cmdline"] or ())
    ]
    single = box.run(f'python -c "{hog.replace("time.sleep(30)", "print(len(b))")}"', workspace)
    assert (single.exit_code, single.stdout) == (0, f"{100 * 2**20}\n"), single
    box.close()


def test_memory_option_is_checked() -> None:
    with pytest.raises(ValueError, match="memory must be 'auto' or 'watchdog', got 'cgroup'"):
        BwrapSandbox(LIMITS, memory="cgroup")


def test_memory_cgroups_are_removed(box: BwrapSandbox, workspace: Workspace) -> None:
    if box.caps.memory != "cgroup":
        pytest.skip("no memory cgroup here")
    base = sandbox_memory._MemoryCgroups.locate()[0]

    def ours() -> list[str]:
        return [n for n in os.listdir(base) if n.startswith(f"agentenvs-{os.getpid()}-")]

    for _ in range(5):
        assert box.run("sleep 0.01 & true", workspace).exit_code == 0
    assert len(ours()) <= 1  # each command removes the ones before it; the last one goes...
    sandbox_memory.memory_cgroups().sweep(2.0)  # ...at the latest at exit
    assert ours() == []


# --- disk: blocks and inodes ---------------------------------------------------------------------


def fill(box: BwrapSandbox, ws: Workspace, command: str) -> None:
    """Run a writer that wants 3x the cap; it must be stopped within 10 % of the cap."""
    result = box.run(command, ws, timeout=60)
    assert result.exit_code != 0 and not result.timed_out, result
    assert tree_bytes(ws.path) <= 1.1 * CAP, tree_bytes(ws.path)
    if result.exit_code == 137:
        assert "[workspace over 8 MiB: command killed]" in result.stderr


@needs_tmpfs
def test_disk_cap_counts_blocks_directories_and_empty_files(
    box: BwrapSandbox, workspace: Workspace
) -> None:
    assert workspace.tmpfs and box.caps.disk == "tmpfs"
    writer = "for i in $(seq 200); do mkdir d$i && head -c 120K /dev/urandom > d$i/f && : > d$i/e || exit 1; done"
    fill(box, workspace, writer)
    subprocess.run(["rm", "-rf", *map(str, workspace.path.glob("d*"))], check=True)
    assert healthy(box, workspace)


@needs_tmpfs
def test_inode_flood_is_stopped(box: BwrapSandbox, workspace: Workspace) -> None:
    fill(box, workspace, "mkdir flood && cd flood && seq 100000 | xargs touch")
    files = sum(1 for _ in (workspace.path / "flood").iterdir())
    assert files <= 1.1 * CAP // INODE_BYTES
    subprocess.run(["rm", "-rf", str(workspace.path / "flood")], check=True)
    assert healthy(box, workspace)


def test_sparse_files_and_hard_links_are_counted_honestly(workspace: Workspace) -> None:
    base = tree_bytes(workspace.path)
    (workspace.path / "sparse").touch()
    os.truncate(workspace.path / "sparse", 3 * 2**20)  # apparent size: copies materialise it
    assert tree_bytes(workspace.path) - base == 3 * 2**20
    for i in range(5):
        os.link(workspace.path / "sparse", workspace.path / f"link{i}")
    assert tree_bytes(workspace.path) - base == 3 * 2**20  # one inode, counted once


def test_disk_watchdog_without_tmpfs(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workspace_module, "tmpfs_available", lambda: False)
    with Workspace(repo, parent=tmp_path, max_bytes=CAP) as ws, BwrapSandbox(LIMITS) as box:
        assert not ws.tmpfs
        result = box.run("mkdir flood && cd flood && seq 100000 | xargs touch", ws, timeout=60)
        assert result.exit_code == 137, result
        assert result.stderr.endswith("[workspace over 8 MiB: command killed]\n")
        assert box.run("true", ws).refused  # over the cap: refused until files go
        subprocess.run(["rm", "-rf", str(ws.path / "flood")], check=True)
        assert healthy(box, ws)


# --- no host path inside -------------------------------------------------------------------------


#: Everything of ``/proc`` inside that could name a host path: every process's command line and
#: environment (bwrap's own included: PID 1), the mount tables, and the working directory.
PROC_DUMP = (
    "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; tr '\\0' ' ' < $p/environ; echo;"
    " done 2>/dev/null; cat /proc/self/mountinfo /proc/mounts; pwd -P"
)


@needs_tmpfs
def test_no_host_path_in_proc(box: BwrapSandbox, workspace: Workspace) -> None:
    """Neither the workspace's nor the ``/etc`` copy's host path shows anywhere in ``/proc``
    inside (issue 41: ``/proc/1/cmdline`` held bwrap's whole command line, mountinfo the
    ``/etc`` copy's path): bwrap reads its options from a descriptor, and both are tmpfs roots."""
    assert box.caps.host_paths_hidden
    result = box.run(PROC_DUMP, workspace)
    assert result.exit_code == 0 and "/testbed" in result.stdout
    assert "bwrap --args 3 bash -c" in result.stdout  # PID 1's command line: no options
    etc = Path(box._etc)
    leaks = (str(workspace.path), workspace.path.name, workspace.path.parent.name, str(etc))
    for leak in (*leaks, etc.name, etc.parent.name, f"{tempfile.gettempdir()}/agentenvs-"):
        assert leak not in result.stdout, leak


@needs_tmpfs
def test_cleanup_unmounts_the_workspace(repo: Path, tmp_path: Path) -> None:
    ws = Workspace(repo, parent=tmp_path, max_bytes=CAP)
    assert ws.tmpfs and mount_line(ws.path) is not None
    (ws.path / "locked").mkdir()
    os.chmod(ws.path / "locked", 0)
    ws.cleanup()
    assert mount_line(ws.path) is None and not ws.path.exists()


def test_a_source_bigger_than_the_cap_still_gives_a_workspace(repo: Path, tmp_path: Path) -> None:
    with Workspace(repo, parent=tmp_path, max_bytes=10) as small:
        assert not small.tmpfs and small.over_limit()
        assert (small.path / "pkg" / "core.py").is_file()


def test_local_sandbox_reports_its_weaker_caps() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        local = LocalSandbox(LIMITS)
    assert local.caps.memory == "rlimit" and not local.caps.host_paths_hidden
    assert local.caps.host_uid == os.geteuid()
    local.close()


@needs_tmpfs
def test_no_host_path_in_proc_at_grading(tmp_path: Path) -> None:
    """During grading too (the launcher's files and the report directory are bound in): a test
    that reads all of ``/proc`` finds no host directory of the env's."""
    from agentenvs.swe.grading import DEFAULT_TEST_COMMAND, grade

    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_proc.py").write_text(
        "import glob\n\n"
        "def test_proc():\n"
        "    text = ''\n"
        "    for name in glob.glob('/proc/[0-9]*/cmdline') + glob.glob('/proc/[0-9]*/environ'):\n"
        "        try:\n"
        "            text += open(name, 'rb').read().decode('utf-8', 'replace')\n"
        "        except OSError:\n"
        "            pass\n"
        "    text += open('/proc/self/mountinfo').read()\n"
        f"    assert '/testbed' in text and {tempfile.gettempdir() + '/agentenvs-'!r} not in text\n"
        f"    assert {str(tmp_path)!r} not in text\n"
    )
    box = BwrapSandbox()
    try:
        with Workspace(repo, parent=tmp_path) as ws:
            command = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 " + DEFAULT_TEST_COMMAND
            graded = grade(box, ws.path, ["tests/test_proc.py::test_proc"], [], command=command)
    finally:
        box.close()
    assert graded.resolved, graded.log[-3000:]
