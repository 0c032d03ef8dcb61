"""SWE task sources: SWE-bench-format instances and SWE-smith-style instances over local git
clones, played through agentenvs/SWE-v0 (docs/swe.md, "Task format")."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agentenvs.swe.env import SWEEnv
from agentenvs.swe.sandbox import bwrap_available
from agentenvs.swe.snapshot import unified_diff
from agentenvs.swe.task import load_swebench, load_swesmith, prepare

pytestmark = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not installed")

GOOD = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
BAD = GOOD.replace("a - b", "b - a")
OLD_TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
NEW_TESTS = (
    OLD_TESTS + "\n\ndef test_sub():\n    from calc import sub\n\n    assert sub(5, 3) == 2\n"
)


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "GIT_CONFIG_GLOBAL": "/dev/null"}  # fmt: skip
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def call(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in params.items())
    return f"<function={name}>\n{body}</function>"


def play(task, fix: str) -> tuple[bool, bool]:
    """(won with an empty submission, won after running ``fix``)."""
    env = SWEEnv([task], split=task.split)
    try:
        env.reset()
        *_, empty = env.step(call("finish", command="submit"))
        env.reset()
        obs, *_ = env.step(call("execute_bash", cmd=fix))
        assert obs.startswith("Exit code: 0"), obs
        *_, fixed = env.step(call("finish", command="submit"))
        return empty["won"], fixed["won"]
    finally:
        env.close()


def test_swebench_instances_over_a_local_clone(tmp_path):
    repo = tmp_path / "repos" / "acme__calc"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    base = commit(repo, {"calc.py": BAD, "tests/test_calc.py": OLD_TESTS}, "buggy")
    commit(repo, {"calc.py": GOOD, "tests/test_calc.py": NEW_TESTS}, "the fix, later in history")
    row = {
        "instance_id": "acme__calc-1",
        "repo": "acme/calc",
        "base_commit": base,
        "problem_statement": "sub() returns the wrong sign",
        "patch": unified_diff(BAD, GOOD, "calc.py"),
        "test_patch": unified_diff(OLD_TESTS, NEW_TESTS, "tests/test_calc.py"),
        "FAIL_TO_PASS": json.dumps(["tests/test_calc.py::test_sub"]),
        "PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_add"]),
        "version": "1.0",
    }
    path = tmp_path / "instances.jsonl"
    path.write_text(json.dumps(row) + "\n")
    (task,) = load_swebench(path, tmp_path / "repos")
    snapshot = prepare(task, tmp_path / "cache").snapshot
    assert (snapshot / "calc.py").read_text() == BAD
    assert git(snapshot, "rev-list", "--count", "HEAD") == "1"  # no later history to peek at
    fix = f"git apply <<'EOF'\n{task.patch}EOF"
    assert play(task, fix) == (False, True)


def test_swesmith_instances_hide_the_failing_tests(tmp_path):
    repo = tmp_path / "repos" / "acme__calc"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    clean = commit(repo, {"calc.py": GOOD, "tests/test_calc.py": OLD_TESTS,
                          "tests/test_sub.py": "from calc import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"},
                   "clean")  # fmt: skip
    row = {
        "instance_id": "acme__calc.abc.func_pm_op_swap__1",
        "repo": f"swesmith/acme__calc.{clean[:8]}",
        "patch": unified_diff(GOOD, BAD, "calc.py"),
        "problem_statement": "sub() returns the wrong sign",
        "FAIL_TO_PASS": ["tests/test_sub.py::test_sub"],
        "PASS_TO_PASS": ["tests/test_calc.py::test_add"],
    }
    path = tmp_path / "smith.json"
    path.write_text(json.dumps([row]))
    (task,) = load_swesmith(path, tmp_path / "repos")
    assert task.test_files_hidden == ["tests/test_sub.py"] and task.bug_patch == row["patch"]
    snapshot = prepare(task, tmp_path / "cache").snapshot
    assert not (snapshot / "tests" / "test_sub.py").exists()
    assert (snapshot / "calc.py").read_text() == BAD
    fix = f"git apply -R <<'EOF'\n{task.bug_patch}EOF"
    assert play(task, fix) == (False, True)


def test_loaders_report_what_is_missing(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"instance_id": "x", "repo": "a/b", "problem_statement": "p",
                                "FAIL_TO_PASS": []}) + "\n{not json\n")  # fmt: skip
    with pytest.raises(ValueError, match="rows.jsonl:2"):
        load_swebench(path, tmp_path)
    path.write_text(json.dumps({"instance_id": "x", "repo": "a/b", "problem_statement": "p",
                                "FAIL_TO_PASS": []}) + "\n")  # fmt: skip
    with pytest.raises(FileNotFoundError, match="no local clone of 'a/b'"):
        load_swebench(path, tmp_path)
    path.write_text(json.dumps({"instance_id": "x", "repo": "a/b"}) + "\n")
    with pytest.raises(ValueError, match="problem_statement"):
        load_swebench(path, tmp_path)
