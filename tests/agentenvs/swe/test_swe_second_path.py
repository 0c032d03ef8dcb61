"""The second grading path and the diff screen (docs/swe.md, "Grading", 7-8): the pytest-free
runner agrees with pytest on the shipped tasks and says ``UNSUPPORTED`` for what it cannot do as
pytest would; the screen passes every shipped gold patch and names what it flags."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentenvs.swe.grading import GRADING_FILES
from agentenvs.swe.screen import screen_diff
from agentenvs.swe.task import embedded_tasks, prepare

HERE = Path(__file__).resolve().parents[3] / "agentenvs" / "swe"


def run_plain(tree: Path, ids: list[str], tmp: Path) -> dict:
    """The launcher in ``plain`` mode on the host (shipped code only), the report's body."""
    plugin, report = tmp / "plugin", tmp / "report"
    plugin.mkdir(exist_ok=True)
    for name, source in GRADING_FILES.items():
        shutil.copy(HERE / source, plugin / name)
    shutil.rmtree(report, ignore_errors=True)
    report.mkdir()
    (report / "nonce").write_bytes(b"nonce")
    launcher = [sys.executable, "-I", str(plugin / "agentenvs_grade.py"), "plain", str(report)]
    subprocess.run([*launcher, *ids], cwd=tree, capture_output=True, timeout=60)
    return json.loads(json.loads((report / "report.json").read_text())["body"])


@pytest.mark.parametrize("fixed", [True, False])
def test_the_plain_runner_agrees_with_pytest_on_shipped_tasks(tmp_path, fixed):
    """Gold patch: every FAIL_TO_PASS test passes there; the bug: every one fails (all 750 ids of
    the 250 tasks do; this samples 8 tasks)."""
    for task in random.Random(0).sample(embedded_tasks(), 8):
        ready = prepare(task)
        tree = tmp_path / task.instance_id
        shutil.copytree(ready.snapshot, tree, symlinks=True)
        for rel, content in ready.hidden.items():
            (tree / rel).write_bytes(content)
        if fixed:
            subprocess.run(["git", "apply", "-"], input=task.patch.encode(), cwd=tree, check=True)
        body = run_plain(tree, task.FAIL_TO_PASS, tmp_path)
        want = "PASSED" if fixed else "FAILED"
        assert body["outcomes"] == dict.fromkeys(task.FAIL_TO_PASS, want), task.instance_id
        assert body["problems"] == []


def test_the_plain_runner_refuses_what_it_cannot_do_as_pytest(tmp_path):
    tree = tmp_path / "repo"
    (tree / "tests").mkdir(parents=True)
    (tree / "tests" / "test_kinds.py").write_text(
        "import pytest\n\n"
        "def test_ok():\n    with pytest.raises(ValueError, match='bad'):\n"
        "        raise ValueError('a bad value')\n\n"
        "def test_wrong_match():\n    with pytest.raises(ValueError, match='nope'):\n"
        "        raise ValueError('a bad value')\n\n"
        "def test_fixture(tmp_path):\n    pass\n\n"
        "@pytest.mark.skip\ndef test_marked():\n    pass\n\n"
        "def test_approx():\n    assert 0.1 + 0.2 == pytest.approx(0.3)\n\n"
        "@pytest.mark.parametrize('x', [1, 2], ids=['one', 'two'])\ndef test_ids(x):\n    pass\n\n"
        "@pytest.mark.parametrize('x, y', [(1, 'a b'), (2.5, None)])\ndef test_param(x, y):\n"
        "    assert x < 2\n\n"
        "class TestGroup:\n    def test_method(self):\n        pass\n"
    )
    (tree / "sub").mkdir()
    (tree / "sub" / "conftest.py").write_text("")
    (tree / "sub" / "test_c.py").write_text("def test_c():\n    pass\n")
    names = ["ok", "wrong_match", "fixture", "marked", "approx", "ids[one]", "param[1-a b]"]
    ids = [f"tests/test_kinds.py::test_{n}" for n in names]
    ids += [
        "tests/test_kinds.py::test_param[2.5-None]",
        "tests/test_kinds.py::TestGroup::test_method",
    ]
    ids += ["sub/test_c.py::test_c", "tests/test_missing.py::test_x"]
    outcomes = run_plain(tree, ids, tmp_path)["outcomes"]
    expected = ["PASSED", "FAILED", "UNSUPPORTED", "UNSUPPORTED", "UNSUPPORTED", "UNSUPPORTED"]
    expected += ["PASSED", "FAILED", "PASSED", "UNSUPPORTED", "FAILED"]
    assert outcomes == dict(zip(ids, expected, strict=True))


def test_the_screen_passes_every_gold_patch_and_names_what_it_flags():
    assert [t.instance_id for t in embedded_tasks() if screen_diff(t.patch.encode())] == []
    flagged = {
        "+import _pytest.reports\n": "_pytest",
        "+sys.modules['x'] = y\n": "sys.modules",
        "+os._exit(0)\n": "os._exit",
        "+open('/run/agentenvs/x/report/report.json', 'w')\n": "a /run path",
        "+pytest_plugins = ['evil']\n": "pytest hooks",
        "+for o in gc.get_objects():\n": "interpreter internals",
        "+builtins.open = fake\n": "builtins",
    }
    for line, name in flagged.items():
        reason = screen_diff(b"+++ b/pkg/core.py\n" + line.encode())
        assert reason.startswith(f"the diff touches {name} (pkg/core.py: "), reason
    for path in ("pytest.py", "_pytest/reports.py", "pathlib.py", "importlib/__init__.py"):
        assert "would shadow" in screen_diff(f"+++ b/{path}\n+x\n".encode())
    assert screen_diff(b"+++ b/pkg/json_tools.py\n+x = 1\n--- a/run.py\n-atexit\n") == ""
