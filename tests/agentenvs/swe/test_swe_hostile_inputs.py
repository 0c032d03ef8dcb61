"""SWE-v0 against odd agent output (issue 23, class 5): every action is an observation, never an
exception, and leaves a clean next episode and nothing on disk after ``close()``.

Each attack runs on the real env (bubblewrap sandbox) on docs/swe.md's golden task, through
``execute_bash`` / ``file_editor`` / ``search`` (``r2e``) or a bash block (``mini``); then the
episode is submitted (the grading copy must cope with what the agent left), the next episode
must see the pristine snapshot, and ``close()`` must leave no ``agentenvs-swe-*`` directory in
the temporary directory (a private one per test, as other processes share the system one).
The fuzz test plays seeded random actions (random bytes, NULs, control characters, strings up to
1 MiB, tool calls of both toolsets wrapping random payloads, odd files made by commands and
directly on disk) and counts exceptions out of ``step``, ``reset`` and ``close``: there must be
none. 300 actions per toolset run by default; 10,000 in all under ``-m slow``.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from swe_golden import write_golden_task

from agentenvs.swe.env import MAX_INFO_FS_CHANGES, SWEEnv
from agentenvs.swe.sandbox import MAX_COMMAND_BYTES, bwrap_available
from agentenvs.swe.task import SWETask, load_task_dir
from agentenvs.swe.workspace import Workspace

pytestmark = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not installed")

#: Prints the state of the tree (status against HEAD and every path with its type): a fresh
#: episode must print the same thing whatever the previous one did.
STATE = "git status --porcelain --untracked-files=all; find . -path ./.git -prune -o -printf '%y %p\\n' | sort"


def call(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in params.items())
    return f"Let me act.\n<function={name}>\n{body}</function>"


def bash(cmd: str, toolset: str = "r2e") -> str:
    return (
        call("execute_bash", cmd=cmd) if toolset == "r2e" else f"THOUGHT: go\n\n```bash\n{cmd}\n```"
    )


@pytest.fixture(scope="module")
def textkit_task(tmp_path_factory) -> SWETask:
    return load_task_dir(write_golden_task(tmp_path_factory.mktemp("textkit") / "task"))


@pytest.fixture
def private_tmp(tmp_path, monkeypatch) -> Path:
    """A private system temporary directory: workspaces and grading copies are made there."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def leftovers(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.glob("agentenvs-swe-*"))


def check_step(env: SWEEnv, action: str) -> tuple[str, float, bool, bool, dict]:
    """One step that must return a valid observation and a UTF-8/JSON-clean ``info``."""
    obs, reward, terminated, truncated, info = env.step(action)
    assert env.observation_space.contains(obs)
    json.dumps(info).encode("utf-8")  # no lone surrogates anywhere in info
    return obs, reward, terminated, truncated, info


def play_attack(task: SWETask, tmp: Path, toolset: str, actions: list[str]) -> list[tuple]:
    """Play ``actions`` in one episode, submit, check the next episode is pristine and that
    ``close()`` leaves nothing; the steps' ``(obs, info)``."""
    env = SWEEnv([task], split="test", toolset=toolset, sandbox="bwrap", command_timeout=20)
    try:
        env.reset()
        pristine = check_step(env, bash(STATE, toolset))[0]
        env.reset()
        steps = [check_step(env, action) for action in actions]
        steps = [(obs, info) for obs, _, _, _, info in steps]
        submit = (
            call("finish")
            if toolset == "r2e"
            else bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", toolset)
        )
        _, reward, terminated, _, info = check_step(env, submit)
        assert terminated and reward == 0.0 and not info["won"]  # the bug is still there
        env.reset()
        assert check_step(env, bash(STATE, toolset))[0] == pristine
    finally:
        env.close()
    assert leftovers(tmp) == []
    return steps


# ------------------------------------------------------------------------------ the attacks


def test_bytes_that_are_not_utf8_in_names_and_contents(textkit_task, private_tmp):
    steps = play_attack(
        textkit_task,
        private_tmp,
        "r2e",
        [
            bash("printf 'x = 1\\n' > $'bad\\xff.py'; printf 'a\\xffb\\n' > c.py"),
            call("file_editor", command="view", path="/testbed"),
            call("search", search_term="x = 1"),
            call("file_editor", command="view", path="/testbed/c.py"),
            call(
                "file_editor", command="str_replace", path="/testbed/c.py", old_str="a", new_str="b"
            ),
            call("search", search_term="b", path="/testbed/c.py"),
            bash("ls"),
        ],
    )
    (_, created), (listing, _), (found, _), (view, _), (refused, _), (search, _), (ls, _) = steps
    assert {c["path"] for c in created["fs_changes"]} == {"bad\ufffd.py", "c.py"}
    assert "/testbed/bad\ufffd.py\n" in listing and "./bad\ufffd.py (1 matches)" in found
    assert "     1 a\ufffdb" in view and "1:a\ufffdb" in search
    assert "is not a UTF-8 text file" in refused
    assert "bad\ufffd.py" in ls  # command output: invalid bytes replaced as well


@pytest.mark.parametrize("toolset", ["r2e", "mini"])
def test_nul_bytes_and_unencodable_characters_in_commands(textkit_task, private_tmp, toolset):
    steps = play_attack(
        textkit_task,
        private_tmp,
        toolset,
        [bash("echo a\x00b", toolset), bash("echo \ud800", toolset), bash("echo \udcff", toolset)],
    )
    (nul, nul_info), (surrogate, _), (raw_byte, _) = steps
    code = "Exit code: 2\n" if toolset == "r2e" else "<returncode>2</returncode>"
    assert nul.startswith(code) and "holds a NUL byte" in nul and nul_info["exit_code"] == 2
    assert surrogate.startswith(code) and "no byte encoding" in surrogate
    assert "\ufffd" in raw_byte  # \udcff is the byte 0xff (os.fsencode): run, and shown replaced


def test_nul_bytes_and_surrogates_in_file_editor_arguments(textkit_task, private_tmp):
    steps = play_attack(
        textkit_task,
        private_tmp,
        "r2e",
        [
            call("file_editor", command="create", path="/testbed/a\x00b.py", file_text="x"),
            call("file_editor", command="view", path="/testbed/\ud800"),
            call("search", search_term="x", path="/testbed/\x00"),
            call("file_editor", command="create", path="/testbed/n.py", file_text="a\x00b\udcff"),
            call("file_editor", command="view", path="/testbed/n.py"),
            call(
                "file_editor",
                command="str_replace",
                path="/testbed/textkit/core.py",
                old_str="\x00",
                new_str="y",
            ),
            call(
                "file_editor",
                command="str_replace",
                path="/testbed/textkit/core.py",
                old_str="\udcff\ud800",
                new_str="\udcfe",
            ),
        ],
    )
    (nul_path, info), (unencodable, _), (nul_search, _), (created, _), (view, _), (replace, _) = (
        steps[:6]
    )
    surrogate_edit, surrogate_info = steps[6]
    assert "ERROR: No occurrences of '\ufffd\ufffd'" in surrogate_edit
    assert surrogate_info["action_key"].startswith("modify:replace:")  # hashed, not raised
    assert "ERROR: The path holds a NUL byte" in nul_path and not info["fs_changes"]
    assert "ERROR: The path holds characters that no file name can hold" in unencodable
    assert "ERROR: The path holds a NUL byte" in nul_search
    assert created.startswith("Execution output of [file_editor]:\nFile created at /testbed/n.py")
    assert "a\x00b" in view and "ERROR: No occurrences of '\x00'" in replace


@pytest.mark.parametrize("toolset", ["r2e", "mini"])
def test_fifos_sockets_and_device_files(textkit_task, private_tmp, toolset):
    make = (
        "mkfifo f q; python -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")'; "
        "mknod dev c 1 3; (sleep 600 > q &); ls -l f sock q"
    )
    steps = play_attack(
        textkit_task,
        private_tmp,
        toolset,
        [
            bash(make, toolset),
            call("file_editor", command="view", path="/testbed/f"),
            call("search", search_term="def"),
        ],
    )
    made = steps[0][0]
    assert "Operation not permitted" in made  # no capabilities inside: no device files
    assert "prw" in made and "srw" in made
    if toolset == "r2e":
        assert "ERROR: The path '/testbed/f' is not a regular file." in steps[1][0]
        assert "./textkit/core.py (2 matches)" in steps[2][0]


def test_deep_trees_with_long_paths(textkit_task, private_tmp):
    # 1,300 nested directories, every other name 200 characters long: ~130,000-character paths,
    # 30 times Linux's PATH_MAX, so walking, hashing, copying and removing must go by hops.
    deep = (
        "python -c \"import os\nfor i in range(1300):\n os.mkdir('d' * (200 if i % 2 else 1)); "
        "os.chdir('d' * (200 if i % 2 else 1))\nopen('leaf.py', 'w').write('deep = 1')\""
    )
    steps = play_attack(
        textkit_task,
        private_tmp,
        "r2e",
        [
            bash(deep),
            call("file_editor", command="view", path="/testbed"),
            call("search", search_term="deep = 1"),
            bash("find . -name leaf.py | wc -c"),
        ],
    )
    (_, made), (listing, _), (search, _), (found, _) = steps
    (change,) = made["fs_changes"]
    assert change["kind"] == "created" and change["path"].endswith("/leaf.py")
    assert len(change["path"]) > 130_000
    assert "/testbed/d/" + "d" * 200 in listing
    assert "Execution output of [search]" in search  # too deep to open by path: not found, no error
    assert int(found.split("[STDOUT]\n\n")[1].split()[0]) > 130_000


def test_links_dangling_looping_and_chained(textkit_task, private_tmp):
    steps = play_attack(
        textkit_task,
        private_tmp,
        "r2e",
        [
            bash(
                "ln -s /nonexistent dl; ln -s loop loop; ln -s l0 l0x; ln -s tests l0; "
                "python -c \"import os\nfor i in range(1, 1501): os.symlink(f'l{i - 1}', f'l{i}')\""
            ),
            call("file_editor", command="view", path="/testbed/dl"),
            call("file_editor", command="view", path="/testbed/loop"),
            call("file_editor", command="view", path="/testbed/l1500"),
            call("search", search_term="def", path="/testbed/l1500"),
            call("file_editor", command="view", path="/testbed"),
        ],
    )
    assert len(steps[0][1]["fs_changes"]) == MAX_INFO_FS_CHANGES  # of 1504, the rest flagged
    assert steps[0][1]["fs_changes_truncated"]
    for obs, _ in steps[1:5]:
        assert "ERROR: The path" in obs
    assert "/testbed/dl\n/testbed/l0\n" in steps[5][0]  # listed, not followed


def test_very_long_paths_and_arguments(textkit_task, private_tmp):
    steps = play_attack(
        textkit_task,
        private_tmp,
        "r2e",
        [
            call("file_editor", command="view", path="/testbed/" + "a" * 100_000),
            call(
                "file_editor",
                command="create",
                path="/testbed/" + "a/" * 50_000 + "x",
                file_text="y",
            ),
            call("search", search_term="s" * 100_000),
            bash("ls " + "b" * 100_000),
            bash("echo " + "x" * (MAX_COMMAND_BYTES + 1)),
            bash("echo " + "\u00e9" * 70_000),  # 140,000 bytes in UTF-8
        ],
    )
    (view, _), (create, _), (search, _), (ls, _), (huge, _), (wide, _) = steps
    assert "ERROR: The path '/testbed/aaaa" in view and "does not exist" in view
    assert "ERROR: Error creating file at" in create
    assert search.startswith('Execution output of [search]:\nNo matches found for "sss')
    assert ls.startswith("Exit code: 2\n") and "File name too long" in ls
    for obs in (huge, wide):
        assert obs.startswith("Exit code: 2\n") and "byte limit of one command line: not run" in obs


def test_close_removes_whatever_the_workspace_holds(textkit_task, private_tmp):
    env = SWEEnv([textkit_task], split="test", sandbox="bwrap", command_timeout=20)
    try:
        env.reset()
        lock = (
            "mkdir -p z/y && touch z/y/f && chmod 000 z/y/f z/y z; chmod 444 textkit/core.py; "
            "mkfifo p; (sleep 600 < p &); chattr +i tests/test_core.py; chmod 500 tests; chmod 000 ."
        )
        obs, *_ = check_step(env, bash(lock))
        assert "Operation not permitted" in obs  # chattr: no capabilities in the sandbox
        obs, *_ = check_step(env, bash("ls"))
        assert "Permission denied" in obs or obs.startswith("Exit code: 0")
    finally:
        env.close()
    assert leftovers(private_tmp) == []


# --------------------------------------------------------------------------- workspace unit


def _odd_tree(root: Path, depth: int = 1300) -> None:
    """Non-UTF-8 names, a FIFO, a socket, links, locked modes and a tree deeper than PATH_MAX."""
    (root / "a").mkdir()
    (root / "a" / "f.py").write_text("x")
    os.mkfifo(root / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "sock"))
    sock.close()
    os.symlink("/nonexistent", root / "dangling")
    Path(os.fsdecode(bytes(root / "bad") + b"\xff")).write_text("b")
    fd = os.open(root, os.O_RDONLY)
    for i in range(depth):
        name = "d" * (200 if i % 2 else 1)
        os.mkdir(name, dir_fd=fd)
        next_fd = os.open(name, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = next_fd
    os.close(os.open("leaf", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    os.close(fd)
    os.chmod(root / "a" / "f.py", 0o444)
    os.chmod(root / "a", 0o500)
    (root / "z").mkdir(mode=0o000)


def test_workspace_hashes_copies_and_removes_odd_trees(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "m.py").write_text("m")
    with Workspace(source, parent=tmp_path) as ws:
        _odd_tree(ws.path)
        hashes = ws.file_hashes()
        leaf = next(p for p in hashes if p.endswith("/leaf"))
        assert len(leaf) > 130_000 and "fifo" not in hashes and "sock" not in hashes
        assert {"m.py", "a/f.py", "dangling", "bad\udcff", leaf} == set(hashes)
        copies: list[Workspace] = []
        worker = threading.Thread(target=lambda: copies.append(ws.copy()), daemon=True)
        worker.start()
        worker.join(60)
        assert copies, "copying a workspace holding a FIFO blocked"
        with copies[0] as copy:
            assert copy.file_hashes() == hashes
            assert (copy.path / "a").stat().st_mode & 0o777 == 0o500
            assert not (copy.path / "fifo").exists() and not (copy.path / "sock").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


# ------------------------------------------------------------------------------------ fuzz

_ODD_NAMES = ("f", "q.py", "$'\\xff\\xfe'", "'a b'", "-rf", "$'\\n'", "'*'", "d/../e", ".hidden")
_ODD_COMMANDS = (
    "mkfifo {n}",
    "python -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"{n}\")'",
    "ln -sf /etc/passwd {n}",
    "ln -sf {n} {n}",
    "printf '\\xff\\x00\\x01' > {n}",
    "mkdir -p {n}/{n}/{n} && chmod 000 {n}",
    "chmod 000 textkit; ls textkit; chmod 755 textkit",
    "python -c \"import os\nfor _ in range(300): os.mkdir('{n}'); os.chdir('{n}')\" 2>&1 | tail -1",
    "head -c 2000 /dev/urandom",
    "printf '\\x1b[31m\\r\\x07\\x00'",
    "cat {n}",
    "touch {n}; rm -rf {n}",
)


class Fuzzer:
    """Seeded random actions for one toolset (numpy ``Generator``)."""

    def __init__(self, seed: int, toolset: str) -> None:
        self.rng = np.random.default_rng(seed)
        self.toolset = toolset

    def text(self, max_len: int = 64) -> str:
        """Random bytes as text: UTF-8 with surrogateescape, or latin-1; NULs and controls likely."""
        n = int(self.rng.integers(0, max_len + 1))
        kind = self.rng.integers(3)
        if kind == 0:
            raw = self.rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        elif kind == 1:
            raw = self.rng.choice(
                np.frombuffer(b"\x00\x01\x1b\n\r\t\x7f<>/=`\xff\xc3a ", np.uint8), n
            ).tobytes()
        else:
            raw = "".join(chr(c) for c in self.rng.integers(32, 0x2FFF, n)).encode(
                "utf-8", "surrogatepass"
            )
        return (
            raw.decode("utf-8", "surrogateescape")
            if self.rng.random() < 0.5
            else raw.decode("latin-1")
        )

    def pick(self, items: tuple[str, ...]) -> str:
        return items[int(self.rng.integers(len(items)))]

    def path(self) -> str:
        roll = self.rng.random()
        if roll < 0.4:
            return self.pick(
                (
                    "/testbed",
                    "/testbed/textkit/core.py",
                    "tests/test_core.py",
                    "textkit",
                    "/etc/passwd",
                    "../../etc",
                    "f",
                    "q.py",
                    "e",
                )
            )
        if roll < 0.95:
            return "/testbed/" + self.text(40)
        return "a/" * int(self.rng.integers(1000, 60_000))

    def editor(self) -> str:
        params = {
            "command": self.pick(
                ("view", "create", "str_replace", "insert", "undo_edit", "nope", "")
            ),
            "path": self.path(),
        }
        for key in ("file_text", "old_str", "new_str", "view_range", "insert_line", "concise"):
            if self.rng.random() < 0.4:
                value = (
                    self.text(200) if self.rng.random() < 0.7 else str(self.rng.integers(-5, 40))
                )
                params[key] = (
                    value
                    if key != "view_range" or self.rng.random() < 0.5
                    else f"[{self.rng.integers(-3, 30)}, {self.rng.integers(-3, 30)}]"
                )
        return call("file_editor", **params)

    def command(self) -> str:
        name = self.pick(_ODD_NAMES)
        cmd = self.pick(_ODD_COMMANDS).format(n=name)
        return cmd + " " + self.text(20) if self.rng.random() < 0.3 else cmd

    def action(self) -> str:
        roll = self.rng.random()
        if roll < 0.02:
            size = int(self.rng.integers(100_000, 2**20 + 1))
            return self.pick(("x", "<function=", "<parameter=a>", "```bash\n", "\x00")) * (
                size // 10
            )
        if roll < 0.30:
            return self.text(300)
        if roll < 0.55:
            return self.editor()
        if roll < 0.65:
            return call("search", search_term=self.text(10), path=self.path())
        if roll < 0.70:
            return call(
                self.pick(("think", "nope", "execute_bash", "finish\x00")), thought=self.text(50)
            )
        if roll < 0.78:
            return bash(self.text(60), self.toolset)
        if roll < 0.80:
            return bash(self.command(), "mini" if self.toolset == "r2e" else "r2e")  # wrong toolset
        if roll < 0.995:
            return bash(self.command(), self.toolset)
        return (
            call("finish")
            if self.toolset == "r2e"
            else bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "mini")
        )


def _host_file_operation(fuzzer: Fuzzer, root: Path) -> None:
    """An odd file made directly in the workspace, between two steps (as root, on the host)."""
    name = os.fsdecode(bytes(fuzzer.rng.integers(1, 256, 6, dtype=np.uint8)).replace(b"/", b"_"))
    target = root / name
    op = int(fuzzer.rng.integers(5))
    if op == 0:
        os.mkfifo(target)
    elif op == 1:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(target))
        sock.close()
    elif op == 2:
        os.symlink(target, target)
    elif op == 3:
        target.mkdir()
        os.chmod(target, 0)
    else:
        target.write_bytes(bytes(fuzzer.rng.integers(0, 256, 100, dtype=np.uint8)))


def fuzz(task: SWETask, toolset: str, n: int, seed: int) -> tuple[list[str], float]:
    """Play ``n`` fuzzed actions; the exceptions raised (as text) and the seconds taken."""
    fuzzer = Fuzzer(seed, toolset)
    errors: list[str] = []
    start = time.perf_counter()

    def guarded(what: str, action: Callable[[], object]) -> object:
        try:
            return action()
        except Exception as exc:  # noqa: BLE001 - counting them is the point
            where = traceback.extract_tb(exc.__traceback__)[-1]
            errors.append(f"{what}: {type(exc).__name__}: {exc} at {where.filename}:{where.lineno}")
            return None

    env = SWEEnv(
        [task], split="test", toolset=toolset, sandbox="bwrap", command_timeout=5, max_steps=40
    )
    guarded("reset", env.reset)
    for i in range(n):
        action = fuzzer.action()
        result = guarded(f"step {i} {action[:80]!r}", lambda a=action: check_step(env, a))
        if result is None or result[2] or result[3]:
            guarded("reset", env.reset)
        elif fuzzer.rng.random() < 0.05 and env._workspace is not None:
            guarded("host op", lambda: _host_file_operation(fuzzer, env._workspace.path))
    guarded("close", env.close)
    return errors, time.perf_counter() - start


def _fuzz_and_report(task: SWETask, tmp: Path, toolset: str, n: int, seed: int) -> None:
    errors, seconds = fuzz(task, toolset, n, seed)
    print(f"fuzz {toolset}: {n} actions in {seconds:.1f} s, {len(errors)} exceptions")
    assert errors == [], errors[:5]
    assert leftovers(tmp) == []


@pytest.mark.parametrize("toolset", ["r2e", "mini"])
def test_fuzzed_actions_never_raise(textkit_task, private_tmp, toolset):
    _fuzz_and_report(textkit_task, private_tmp, toolset, 300, seed=23)


@pytest.mark.slow
@pytest.mark.parametrize("toolset", ["r2e", "mini"])
def test_ten_thousand_fuzzed_actions_never_raise(textkit_task, private_tmp, toolset):
    _fuzz_and_report(textkit_task, private_tmp, toolset, 5_000, seed=2023)
