"""SWE task generation: mutation operators, snapshots, statements, verification, shipped panel.

Covers docs/swe.md's generator checks on the ``textkit`` golden repository (bug patch, test lists,
assertion text, rewards, an equivalent mutant rejected, determinism) and the shipped panel (gold
patches apply and fix, buggy snapshots fail, splits by repository, statements do not leak).
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest
from swe_golden import BUG_PATCH, CORE, F2P, P2P, TESTS, write_repo

from agentenvs.swe import generate
from agentenvs.swe.grading import grade, is_pass, run_tests
from agentenvs.swe.mutate import OPERATORS, apply, candidates, is_test_file
from agentenvs.swe.sandbox import make_sandbox
from agentenvs.swe.snapshot import SEEDS_DIR, build_snapshot, seed_names, tree_diff, unified_diff
from agentenvs.swe.statements import COMMAND, failure_section, parse_failure, write_statement

#: One source that every operator family can mutate.
ALL_FAMILIES = '''"""Doc."""

__all__ = ["f"]


def f(xs: list[int], n: int = 2) -> int:
    """Docstring is never mutated."""
    total = 0  # comment kept
    for x in range(1, n):
        if x > 3 and xs:
            break
        total += x - 1
    if total is None:
        return max(total, n)
    return total * 2 if True else xs[0]
'''


@pytest.fixture(scope="module")
def run() -> generate.Runner:
    return generate.make_runner("auto")


@pytest.fixture(scope="module")
def box():
    sandbox = make_sandbox("auto")
    yield sandbox
    sandbox.close()


@pytest.fixture()
def textkit(tmp_path: Path) -> Path:
    root = write_repo(tmp_path / "textkit")
    (root / "pyproject.toml").write_text('[project]\nname = "textkit"\nversion = "0.1.0"\n')
    return root


def _off_by_one():
    (m,) = [
        m
        for m in candidates(CORE, "textkit/core.py")
        if m.operator == "off_by_one" and m.lineno == 14 and m.description == "0 -> 1"
    ]
    return m


def test_off_by_one_bug_patch_is_the_documented_hunk() -> None:
    mutation = _off_by_one()
    assert unified_diff(CORE, apply(CORE, mutation), "textkit/core.py") == BUG_PATCH


def test_every_family_has_a_parsing_mutant() -> None:
    found = candidates(ALL_FAMILIES, "pkg/m.py")
    assert {m.operator for m in found} == set(OPERATORS)
    for m in found:
        mutated = apply(ALL_FAMILIES, m)
        ast.parse(mutated)
        assert mutated != ALL_FAMILIES
        assert "# comment kept" in mutated or m.operator == "remove_assign"
        assert '"""Docstring is never mutated."""' in mutated and '__all__ = ["f"]' in mutated
        assert "xs: list[int], n: int = " in mutated and ") -> int:" in mutated
    assert candidates(ALL_FAMILIES, "tests/test_m.py") == []
    assert is_test_file("pkg/conftest.py") and not is_test_file("pkg/contest.py")


def test_seed_mutants_parse() -> None:
    for name in seed_names():
        for path in sorted((SEEDS_DIR / name).rglob("*.py")):
            rel = path.relative_to(SEEDS_DIR / name).as_posix()
            source = path.read_text()
            for m in candidates(source, rel)[::3]:
                ast.parse(apply(source, m))


def test_golden_task_and_rewards(run, box, textkit: Path, tmp_path: Path) -> None:
    clean = run_tests(run, textkit)
    assert len(clean.statuses) == 6 and all(is_pass(s) for s in clean.statuses.values())
    task = generate.evaluate(
        run, textkit, _off_by_one(), clean.statuses, seed=7, allow_all_hidden=True
    )
    assert isinstance(task, dict)
    assert task["bug_patch"] == BUG_PATCH
    assert task["FAIL_TO_PASS"] == F2P and task["PASS_TO_PASS"] == P2P
    assert task["test_files_hidden"] == ["tests/test_core.py"]
    assert task["instance_id"] == generate.task_id("textkit", BUG_PATCH, "off_by_one", 7)
    assert "range(1" not in task["problem_statement"]
    assert "off_by_one" not in task["problem_statement"]
    # Without the one-file exemption the only test file would be hidden: rejected.
    strict = generate.evaluate(run, textkit, _off_by_one(), clean.statuses, seed=7)
    assert strict == "hides every test file"

    snap = tmp_path / "snap"
    assert (
        build_snapshot(textkit, snap, bug_patch=BUG_PATCH, hide=["tests/test_core.py"])
        == (task["base_commit"])
    )
    assert not (snap / "tests" / "test_core.py").exists()
    hidden = {"tests/test_core.py": TESTS.encode()}
    # The assertion text the statement is written from.
    (snap / "tests" / "test_core.py").write_text(TESTS)
    log = run(f"{COMMAND} {F2P[0]}", snap, 60.0).output
    failure = parse_failure(failure_section(log, F2P[0]), F2P[0])
    assert failure.assertion == "assert [[2, 3], [4]] == [[1, 2], [3, 4]]"
    text, level = write_statement(run, snap, F2P[0], seed=1, level="repro", log=log)
    assert level == "repro" and "chunk([1, 2, 3, 4], 2)" in text
    assert "[[2, 3], [4]]" in text and "[[1, 2], [3, 4]]" in text
    (snap / "tests" / "test_core.py").unlink()
    # Rewards: buggy 0; a test-only "fix" 0 (the hidden file is restored); gold patch 1.
    assert not grade(box, snap, F2P, P2P, hidden=hidden).resolved
    (snap / "tests" / "test_core.py").write_text(TESTS.replace("[[1, 2], [3, 4]]", "[[2, 3], [4]]"))
    assert not grade(box, snap, F2P, P2P, hidden=hidden).resolved
    subprocess.run(["git", "apply"], input=task["patch"], cwd=snap, check=True, text=True)
    assert grade(box, snap, F2P, P2P, hidden=hidden).resolved
    diff = tree_diff(snap, snap, exclude=["tests/test_core.py"]).decode()
    assert "+    return [seq[i:i + n] for i in range(0, len(seq), n)]" in diff
    assert "tests/test_core.py" not in diff


def test_equivalent_mutant_rejected(run, textkit: Path) -> None:
    (mutation,) = [
        m
        for m in candidates(CORE, "textkit/core.py")
        if m.lineno == 5 and m.operator == "op_change"
    ]
    assert "if x >= hi:" in apply(CORE, mutation)
    clean = run_tests(run, textkit).statuses
    result = generate.evaluate(run, textkit, mutation, clean, seed=0, allow_all_hidden=True)
    assert result == "equivalent"


def test_generation_is_deterministic(run, textkit: Path) -> None:
    first = generate.generate_repo(run, textkit, per_repo=2, seed=3, allow_all_hidden=True)
    second = generate.generate_repo(run, textkit, per_repo=2, seed=3, allow_all_hidden=True)
    assert len(first.tasks) == 2 and first.tasks == second.tasks
    assert generate.panel_bytes(first.tasks) == generate.panel_bytes(list(reversed(second.tasks)))


def test_tree_diff_needs_a_git_base(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    with pytest.raises(ValueError, match="not a git repository"):
        tree_diff(tmp_path, tmp_path)


# -- the shipped panel -----------------------------------------------------------------------


def _panel() -> list[dict]:
    if not generate.PANEL_PATH.is_file():
        pytest.skip("no shipped SWE panel")
    return generate.load_panel()


def _test_names(task: dict) -> set[str]:
    return {re.split(r"[\[]", i.split("::")[-1])[0] for i in task["FAIL_TO_PASS"]}


def test_panel_schema_splits_and_statements() -> None:
    tasks = _panel()
    keys = {
        "instance_id", "repo", "base_commit", "problem_statement", "FAIL_TO_PASS",
        "PASS_TO_PASS", "patch", "test_patch", "bug_patch", "test_command", "test_files_hidden",
        "python", "mutation", "difficulty", "split",
    }  # fmt: skip
    assert len({t["instance_id"] for t in tasks}) == len(tasks)
    splits: dict[str, set[str]] = {}
    for t in tasks:
        assert set(t) == keys
        assert 1 <= len(t["FAIL_TO_PASS"]) <= generate.MAX_F2P
        assert t["split"] == ("test" if t["repo"] in generate.TEST_REPOS else "train")
        splits.setdefault(t["split"], set()).add(t["repo"])
        statement = t["problem_statement"]
        for line in generate._changed_lines(t["bug_patch"]):
            assert line not in statement, t["instance_id"]
        assert t["mutation"]["operator"] not in statement
        assert not any(name in statement for name in _test_names(t)), t["instance_id"]
    assert not splits.get("train", set()) & splits.get("test", set())


def _verify(box, task: dict, tmp: Path) -> None:
    snap = tmp / task["instance_id"]
    hide = task["test_files_hidden"]
    source = SEEDS_DIR / task["repo"]
    sha = build_snapshot(source, snap, bug_patch=task["bug_patch"], hide=hide)
    assert sha == task["base_commit"]
    hidden = {p: (source / p).read_bytes() for p in hide}
    f2p, p2p = task["FAIL_TO_PASS"], task["PASS_TO_PASS"]
    command = task["test_command"]
    assert not grade(box, snap, f2p, p2p, hidden=hidden, command=command).resolved, task[
        "instance_id"
    ]
    subprocess.run(["git", "apply"], input=task["patch"], cwd=snap, check=True, text=True)
    assert grade(box, snap, f2p, p2p, hidden=hidden, command=command).resolved, task["instance_id"]


@pytest.mark.integration
def test_panel_sample_gold_fixes_and_buggy_fails(box, tmp_path: Path) -> None:
    """20 tasks here; every task is played through the env in tests/agentenvs/swe/test_swe_env.py (slow)."""
    tasks = _panel()
    for task in tasks[:: max(1, len(tasks) // 20)][:20]:
        _verify(box, task, tmp_path)


@pytest.mark.slow
@pytest.mark.long  # about 4 minutes on 2 cores
def test_panel_rebuilds_byte_for_byte() -> None:
    _panel()
    assert generate.main(["--check", "--jobs", "2"]) == 0
