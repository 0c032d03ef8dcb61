"""SWE-v0's host side under a hostile policy (docs/swe.md, *Host resources*): full file systems at
grading, huge files and diffs, tens of thousands of files, and the owner process killed.

Each case plays the attack through ``SWEEnv.step`` with the bubblewrap sandbox in a private system
temporary directory and checks that nothing raises, that the outcome names its reason
(``grading_error`` for the policy's doing, ``infra_error`` for the host's) and that the host's
memory, ``info`` and temporary directory stay bounded.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
from pathlib import Path

import pytest
from swe_golden import write_golden_task

from agentenvs.swe import signature
from agentenvs.swe.calls import ToolCall
from agentenvs.swe.env import (
    MAX_INFO_FS_CHANGES,
    MAX_INFO_PATCH_CHARS,
    MAX_STATE_KEY_CHARS,
    SWEEnv,
)
from agentenvs.swe.r2e_files import MAX_EDITOR_FILE_BYTES, MAX_UNDO_BYTES, FileEditor, search
from agentenvs.swe.reclaim import owner_alive, owner_tag, reclaim_stale
from agentenvs.swe.sandbox import bwrap_available
from agentenvs.swe.signature import SignatureState
from agentenvs.swe.snapshot import DiffTooLarge, build_snapshot, tree_diff
from agentenvs.swe.task import SWETask, embedded_tasks, load_task_dir
from agentenvs.swe.workspace import tmpfs_available

pytestmark = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not installed")

#: A shipped task with a withheld test file (written into the grading copy).
HIDDEN_TASK = "cachebox.079133.func_pm_off_by_one__2e96"
FINISH = "<function=finish>\n<parameter=command>submit</parameter>\n</function>"
ROOT = Path(__file__).resolve().parents[3]


def bash(cmd: str) -> str:
    return f"<function=execute_bash>\n<parameter=cmd>{cmd}</parameter>\n</function>"


def edit(**params: str) -> str:
    body = "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in params.items())
    return f"<function=file_editor>\n{body}</function>"


def run_ok(env: SWEEnv, cmd: str) -> str:
    obs, *_ = env.step(bash(cmd))
    assert obs.startswith("Exit code: 0"), (cmd, obs[-2000:])
    return obs


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS"))
    return int(line.split()[1]) / 1024


def mounted_under(top: Path) -> list[str]:
    """Mount points under ``top`` (this mount namespace)."""
    with open("/proc/self/mountinfo") as handle:
        points = [line.split()[4] for line in handle]
    return [p for p in points if p.startswith(str(top.resolve()) + "/")]


@pytest.fixture(scope="module")
def textkit_dir(tmp_path_factory) -> Path:
    return write_golden_task(tmp_path_factory.mktemp("textkit") / "task")


@pytest.fixture(scope="module")
def textkit_task(textkit_dir) -> SWETask:
    return load_task_dir(textkit_dir)


@pytest.fixture(scope="module")
def hidden_task() -> SWETask:
    return next(t for t in embedded_tasks("test") if t.instance_id == HIDDEN_TASK)


@pytest.fixture
def private_tmp(tmp_path, monkeypatch) -> Path:
    """A private system temporary directory: workspaces, grading copies and /etc copies go there."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def make_env(task: SWETask, **kwargs) -> SWEEnv:
    return SWEEnv([task], split="test", sandbox="bwrap", command_timeout=60, **kwargs)


# ------------------------------------------------------------------------------------ ENOSPC


@pytest.mark.skipif(not tmpfs_available(), reason="workspace tmpfs mounts need root")
def test_enospc_in_the_grading_copy_is_an_invalid_submission(hidden_task, private_tmp):
    """``rm -rf .git`` frees room in the workspace; sparse files sized to it then fill the
    grading copy (which holds the snapshot's ``.git``) when the diff is applied there, so the
    withheld test file does not fit: an invalid submission, never an exception."""
    env = make_env(hidden_task, max_diff_bytes=2**30)
    try:
        env.reset()
        run_ok(env, "df -k . | tail -1 | awk '{print $4}' > free.txt && rm -rf .git")
        run_ok(
            env,
            "each=$(( ($(cat free.txt) - 8) * 256 )); "
            "for i in 1 2 3 4; do truncate -s $each sparse$i.bin; done",
        )
        _, reward, terminated, _, info = env.step(FINISH)
    finally:
        env.close()
    assert terminated and reward == 0.0
    assert "No space left on device" in info["grading_error"], info["grading_error"]
    assert info["infra_error"] == ""
    assert list(private_tmp.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_enospc_on_the_host_is_an_infrastructure_failure(textkit_task, private_tmp):
    """A full host temporary directory (where the diff is built) is the env's failure, not the
    policy's: ``infra_error`` names it, ``grading_error`` stays empty, nothing raises."""
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.mount(b"none", os.fsencode(private_tmp), b"tmpfs", 0, b"size=16m") == 0
    try:
        env = make_env(textkit_task)
        env.reset()
        run_ok(env, "echo 'x = 1' > extra.py")
        with open(private_tmp / "filler", "wb") as filler:
            with pytest.raises(OSError):
                while True:
                    filler.write(b"\0" * 2**20)
                    filler.flush()
        _, reward, terminated, _, info = env.step(FINISH)
        env.close()
        os.unlink(private_tmp / "filler")
        assert terminated and reward == 0.0
        assert info["grading_error"] == ""
        assert "No space left on device" in info["infra_error"], info["infra_error"]
        assert info["patch"].startswith("[no patch: ")
        assert list(private_tmp.iterdir()) == []
    finally:
        libc.umount2(os.fsencode(private_tmp), 2)


def test_no_file_descriptors_left_is_an_infrastructure_failure(textkit_task, private_tmp):
    """``EMFILE`` while grading (the host process out of descriptors) is the host's failure."""
    env = make_env(textkit_task)
    env.reset()
    run_ok(env, "echo 'x = 1' > extra.py")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    in_use = len(os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (in_use + 2, hard))
    try:
        _, reward, terminated, _, info = env.step(FINISH)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        env.close()
    assert terminated and reward == 0.0 and info["grading_error"] == ""
    assert "Too many open files" in info["infra_error"], info["infra_error"]


# ------------------------------------------------------------------------- editor and memory


def test_editor_refuses_a_60_mb_file_and_host_memory_stays_flat(textkit_task, private_tmp):
    env = make_env(textkit_task)
    try:
        env.reset()
        run_ok(env, "python -c \"open('big.py', 'w').write('x = 1\\n' * 10_000_000)\"")
        before = rss_mib()
        for i in range(8):
            args = {"command": "insert", "path": "/testbed/big.py", "insert_line": str(i)}
            obs, *_, info = env.step(edit(**args, new_str=f"y{i} = 2"))
            assert "larger than 8 MiB" in obs and "execute_bash" in obs, obs[:300]
            assert info["tool_call"]["valid"]
        obs, *_ = env.step(edit(command="view", path="/testbed/big.py", view_range="[1, 3]"))
        assert "larger than 8 MiB" in obs
        growth = rss_mib() - before
    finally:
        env.close()
    assert growth < 64, f"the host process grew by {growth:.0f} MiB"


def test_search_reads_a_60_mb_file_in_bounded_memory(tmp_path):
    (tmp_path / "big.txt").write_text(("x = 1 " + "a" * 993 + "\n") * 60_000)  # 60 MB
    tracemalloc.start()
    try:
        one, ok = search(tmp_path, {"search_term": "x = 1", "path": "big.txt"})
        assert ok and one.startswith('Matches for "x = 1" in /testbed/big.txt:\n1:x = 1 a')
        assert 4 * 2**20 < len(one) < 4 * 2**20 + 2000  # more than an observation holds
        every, ok = search(tmp_path, {"search_term": "x = 1"})
        assert ok and "./big.txt (60000 matches)" in every
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"{peak / 2**20:.0f} MiB"


def test_undo_history_is_capped_oldest_first(tmp_path):
    """Each insert into a 6 MiB file keeps its previous content for undo; past
    ``MAX_UNDO_BYTES`` in all, the oldest are forgotten, the newest still undo exactly."""
    (tmp_path / "data.txt").write_text(("a" * 1023 + "\n") * 6 * 2**10)  # 6 MiB
    (tmp_path / "small.py").write_text("s = 0\n")
    editor = FileEditor(tmp_path)
    out, ok = editor({"command": "insert", "path": "small.py", "insert_line": "0", "new_str": "#"})
    assert ok
    versions = []
    for i in range(8):
        versions.append((tmp_path / "data.txt").read_text())
        params = {"command": "insert", "path": "data.txt", "insert_line": "0", "new_str": f"{i}"}
        assert editor(params)[1]
    assert editor._history_bytes <= MAX_UNDO_BYTES
    assert sum(len(entry) for _, entry in editor.history) == editor._history_bytes
    kept = MAX_UNDO_BYTES // len(versions[0].encode())
    for version in reversed(versions[-kept:]):
        assert editor({"command": "undo_edit", "path": "data.txt"})[1]
        assert (tmp_path / "data.txt").read_text() == version
    out, ok = editor({"command": "undo_edit", "path": "data.txt"})
    assert not ok and "No previous edits found" in out
    out, ok = editor({"command": "undo_edit", "path": "small.py"})  # the oldest entry went first
    assert not ok
    assert 6 * 2**20 < MAX_EDITOR_FILE_BYTES  # the file above was editable


# ------------------------------------------------------------------------------ info bounds


def test_many_changed_files_keep_info_small(textkit_task, private_tmp):
    env = make_env(textkit_task)
    try:
        env.reset()
        n = MAX_INFO_FS_CHANGES + 500
        obs, *_, info = env.step(bash(f"mkdir many && cd many && seq {n} | xargs touch"))
        assert len(info["fs_changes"]) == MAX_INFO_FS_CHANGES and info["fs_changes_truncated"]
        assert info["state_key"].startswith("sha256:") and len(info["state_key"]) == 71
        *_, info = env.step(bash("true"))
        assert not info["fs_changes_truncated"] and len(json.dumps(info)) < 4096
    finally:
        env.close()


def test_state_key_is_readable_when_short_and_a_digest_past_the_cap(textkit_task):
    env = make_env(textkit_task)
    try:
        assert env._state_key() == "FLAGS(think=0,test_pass=0,test_fail=0)"
        env._sig = SignatureState(env.signature, {f"f{i}.py": {"C"} for i in range(200)})
        long_key = env._sig.key()
        assert len(long_key) > MAX_STATE_KEY_CHARS
        digest = env._state_key()
        env._sig = SignatureState(env.signature, {f"f{i}.py": {"C"} for i in range(200)})
        assert env._state_key() == digest and len(digest) == 71  # equal states, equal keys
        env._sig.files["f0.py"].add("Vf")
        assert env._state_key() != digest
    finally:
        env.close()


@pytest.mark.slow
def test_sixty_thousand_files_keep_info_under_its_cap(textkit_task, private_tmp):
    env = make_env(textkit_task)
    try:
        env.reset()
        *_, info = env.step(bash("mkdir many && cd many && seq 60000 | xargs touch"))
        assert info["fs_changes_truncated"] and len(json.dumps(info)) < 256 * 2**10
        *_, info = env.step(bash("true"))
        assert len(json.dumps(info)) < 4096 and len(info["state_key"]) == 71
        *_, info = env.step(FINISH)
    finally:
        env.close()
    assert info["patch_truncated"] and len(info["patch"]) == MAX_INFO_PATCH_CHARS
    assert len(json.dumps(info)) < 2 * 2**20


# ------------------------------------------------------------------------------------- diffs


def test_a_200_mb_diff_is_refused_within_5_s(textkit_task, private_tmp):
    env = make_env(textkit_task)
    try:
        env.reset()
        run_ok(env, "for i in 1 2 3 4; do head -c 50000000 /dev/zero > blob$i.bin; done")
        start = time.perf_counter()
        _, reward, terminated, _, info = env.step(FINISH)
        seconds = time.perf_counter() - start
    finally:
        env.close()
    assert terminated and reward == 0.0 and seconds < 5.0, seconds
    assert info["grading_error"] == (
        "the submission is too large: the changed files hold over 16 MiB"
    )
    assert info["patch_truncated"] and len(info["patch"]) < 200


def test_tree_diff_caps_changed_content_and_the_diff(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "big.txt").write_text("line\n" * 2000)  # 10 kB, in the snapshot
    (source / "m.py").write_text("x = 1\n")
    base = tmp_path / "base"
    build_snapshot(source, base)
    tree = tmp_path / "tree"
    build_snapshot(source, tree)
    (tree / "m.py").write_text("x = 2\n")
    assert b"+x = 2" in tree_diff(base, tree, max_bytes=1024)  # an unchanged big file is free
    (tree / "new.txt").write_text("n" * 2000)
    with pytest.raises(DiffTooLarge, match="changed files hold over"):
        tree_diff(base, tree, max_bytes=1024)
    assert b"new.txt" in tree_diff(base, tree, max_bytes=None)
    (tree / "new.txt").unlink()
    (tree / "big.txt").unlink()  # no new content, but a 10 kB diff
    with pytest.raises(DiffTooLarge, match="the diff is over"):
        tree_diff(base, tree, max_bytes=1024)


# --------------------------------------------------------------------- killed owner, close()

CHILD = textwrap.dedent(
    """
    import sys, time
    sys.path[:0] = [{tests!r}, {root!r}]
    from swe_golden import write_golden_task
    from agentenvs.swe.env import SWEEnv
    from agentenvs.swe.task import load_task_dir
    task = load_task_dir({task!r})
    env = SWEEnv([task], split="test", sandbox="bwrap")
    env.reset()
    print(env._workspace.path, flush=True)
    time.sleep(600)
    """
)


@pytest.mark.skipif(not tmpfs_available(), reason="workspace tmpfs mounts need root")
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_owner_leaves_nothing_mounted(textkit_dir, textkit_task, private_tmp, signum):
    """The owner of an env dies without running a finalizer: its workspace tmpfs and /etc copy
    stay until the next env starts, which reclaims them and leaves a live owner's alone."""
    live = make_env(textkit_task)
    live.reset()
    script = CHILD.format(tests=str(ROOT / "tests"), root=str(ROOT), task=str(textkit_dir))
    child = subprocess.Popen(
        [sys.executable, "-c", script],
        env={**os.environ, "TMPDIR": str(private_tmp)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        workspace = Path(child.stdout.readline().strip())
        assert str(workspace.resolve()) in mounted_under(private_tmp)
        os.kill(child.pid, signum)
        child.wait(timeout=30)
        assert str(workspace.resolve()) in mounted_under(private_tmp)  # what a kill leaves
        fresh = make_env(textkit_task)
        fresh.close()
        # the live owner's workspace and /etc copy (a tmpfs in a directory of its own) stay
        etc = Path(live.sandbox._etc).resolve()
        assert sorted(mounted_under(private_tmp)) == sorted(
            [str(live._workspace.path.resolve()), str(etc)]
        )
        assert not workspace.exists()
        left = sorted(p.name for p in private_tmp.iterdir())
        assert left == sorted([live._workspace.path.name, etc.parent.name])
    finally:
        child.kill()
        child.wait()
        live.close()
    assert list(private_tmp.iterdir()) == []


def test_close_removes_everything_it_created(textkit_task, private_tmp):
    env = make_env(textkit_task)
    env.reset()
    env.step(bash("echo hi > note.txt"))
    assert any(p.name.startswith("agentenvs-etc-") for p in private_tmp.iterdir())
    env.close()
    assert list(private_tmp.iterdir()) == []


def test_reclaim_keeps_untagged_foreign_and_live_directories(tmp_path):
    alive = tmp_path / f"agentenvs-home-{owner_tag()}-live"
    namespace, _, start = owner_tag().split(".")
    other_ns = tmp_path / f"agentenvs-etc-1.1.{start}-other"  # another PID namespace
    untagged = tmp_path / "agentenvs-swe-abc123"
    dead = tmp_path / f"agentenvs-grade-{namespace}.{2**22 + 7}.1-dead"
    for path in (alive, other_ns, untagged, dead):
        (path / "sub").mkdir(parents=True)
    assert owner_alive(f"{namespace}.{2**22 + 7}.1") is False and owner_alive("x") is None
    assert reclaim_stale(tmp_path) == [str(dead)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (alive, other_ns, untagged)
    )


def test_signature_state_folds_operations_past_its_cap(monkeypatch):
    monkeypatch.setattr(signature, "MAX_STATE_OPS", 3)
    calls = [
        ToolCall("search", {"search_term": "x", "path": f"/testbed/f{i}.py"}) for i in range(6)
    ]

    def fold(order: list[ToolCall]) -> SignatureState:
        state = SignatureState()
        for call in order:
            state.update(call)
        return state

    state = fold(calls)
    assert sum(len(ops) for ops in state.files.values()) == 3
    assert state.key().endswith(
        f"|OVERFLOW({state.overflow})|FLAGS(think=0,test_pass=0,test_fail=0)"
    )
    assert fold(calls).key() == state.key() and state.copy().key() == state.key()
    again = state.copy()
    again.update(calls[0])  # already held: no change
    assert again.key() == state.key()
    assert fold(calls[:5]).key() != state.key()
