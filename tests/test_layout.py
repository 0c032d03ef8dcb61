"""One namespace: the folders ``wrappers/`` and ``learners/`` install as ``agentenvs.wrappers`` and
``agentenvs.learners``, nothing installs a top-level ``wrappers`` or ``learners``, no module loads
under two names, and a user's own ``wrappers`` module sits beside ours (fresh interpreters)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
#: Source folder -> import name (pyproject.toml's ``package-dir``).
FOLDERS = {
    "agentenvs": "agentenvs",
    "wrappers": "agentenvs.wrappers",
    "learners": "agentenvs.learners",
}


def _python(cwd: Path, code: str) -> subprocess.CompletedProcess:
    """``python -c CODE`` in ``cwd``, which comes first on ``sys.path``."""
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("name", ["wrappers", "learners", "learners.llm"])
def test_nothing_installs_a_top_level_wrappers_or_learners(tmp_path, name):
    run = _python(tmp_path, f"import {name}")
    assert run.returncode != 0
    assert (
        run.stderr.strip().splitlines()[-1]
        == f"ModuleNotFoundError: No module named {name.split('.')[0]!r}"
    )


@pytest.mark.parametrize("name", ["wrappers", "wrappers.batch", "learners", "learners.sb3"])
def test_the_source_folders_refuse_a_second_name(name):
    """From the checkout's root the folders are on ``sys.path``: importing them under their folder
    name fails in one line that names the installed name, so a class never exists twice."""
    top = name.split(".")[0]
    run = _python(ROOT, f"import {name}")
    assert run.returncode != 0
    assert run.stderr.strip().splitlines()[-1] == (
        f"ImportError: import agentenvs.{top}, not {top}"
    )


def test_one_class_one_identity():
    code = (
        "import sys\n"
        "from agentenvs.wrappers import GraphCreditWrapper\n"
        "from agentenvs.wrappers.base import GraphCreditWrapper as again\n"
        "from agentenvs.learners.llm.config import TrainConfig\n"
        "import agentenvs.cli.train\n"
        "try:\n    import wrappers\nexcept ImportError:\n    pass\n"
        "assert GraphCreditWrapper is again\n"
        "names = [m for m in sys.modules if m.split('.')[0] in ('wrappers', 'learners')]\n"
        "print(GraphCreditWrapper.__module__, TrainConfig.__module__, names)\n"
    )
    run = _python(ROOT, code)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [
        "agentenvs.wrappers.base",
        "agentenvs.learners.llm.config",
        "[]",
    ]


@pytest.mark.parametrize("decoy", ["package", "module"])
def test_a_users_own_wrappers_sits_beside_ours(tmp_path, decoy):
    if decoy == "package":
        (tmp_path / "wrappers").mkdir()
        (tmp_path / "wrappers" / "__init__.py").write_text("MINE = 1\n")
    else:
        (tmp_path / "wrappers.py").write_text("MINE = 1\n")
    code = (
        "import wrappers, agentenvs.viewer, agentenvs.cli.listing\n"
        "from agentenvs.wrappers import CreditWrapper\n"
        "from agentenvs.learners.sb3 import CreditPPO\n"
        "print(wrappers.MINE, CreditWrapper.__module__)\n"
    )
    run = _python(tmp_path, code)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["1", "agentenvs.wrappers.base"]


def test_pyproject_installs_every_package_under_its_name():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"] == {v: k for k, v in FOLDERS.items() if k != v}
    found = set()
    for folder, name in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            if "seeds" not in rel.parts:  # the SWE seed repositories are data
                found.add(".".join([name, *rel.parts]))
    assert sorted(setuptools["packages"]) == sorted(found)
