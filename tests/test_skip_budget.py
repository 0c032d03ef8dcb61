"""The skip budget (tests/skip_budget.py) on real pytest runs: a run over the budget fails and
names every skip reason; at or under it, or without the variable, the run's status is untouched."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from skip_budget import ENV, skip_limit

#: A tiny suite: two tests skip for one reason, one at collection of a module, one passes.
SUITE = {
    "test_a.py": (
        "import pytest\n\n"
        "@pytest.mark.parametrize('i', [0, 1])\n"
        "def test_skips(i):\n    pytest.skip('no GPU here')\n\n"
        "def test_passes():\n    assert True\n"
    ),
    "test_b.py": "import pytest\n\npytest.skip('no Docker engine', allow_module_level=True)\n",
}


def _run(tmp_path: Path, budget: str | None) -> subprocess.CompletedProcess:
    for name, text in SUITE.items():
        (tmp_path / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k != ENV}
    env["PYTHONPATH"] = str(Path(__file__).parent)
    if budget is not None:
        env[ENV] = budget
    command = [sys.executable, "-m", "pytest", "-p", "skip_budget", "-q", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*command, "-c", os.devnull, "--rootdir", "."],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip


def test_a_run_over_the_budget_fails_and_lists_the_reasons(tmp_path):
    run = _run(tmp_path, "2")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "3 tests skipped, more than the 2 that $AGENTENVS_MAX_SKIPS allows" in run.stdout
    assert "2 x test_a.py:5: no GPU here" in run.stdout
    assert "1 x test_b.py:3: no Docker engine" in run.stdout


@pytest.mark.parametrize("budget", ["3", None])
def test_a_run_within_the_budget_or_without_one_passes(tmp_path, budget):
    run = _run(tmp_path, budget)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed, 3 skipped" in run.stdout and "skip budget" not in run.stdout


def test_a_malformed_budget_stops_the_run(tmp_path):
    run = _run(tmp_path, "a handful")
    assert run.returncode == 4 and "must be a count of tests >= 0, got 'a handful'" in run.stderr
    with pytest.raises(pytest.UsageError, match="got '-1'"):
        skip_limit("-1")
