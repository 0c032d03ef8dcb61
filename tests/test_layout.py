"""One namespace: a user's own ``wrappers`` folder or module in the working directory shadows ours,
and importing what needs ours says so in one line (agentenvs/layout.py), in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentenvs.layout import PACKAGES, require_package

ROOT = Path(__file__).resolve().parents[1]


def _python(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """``python ARGS`` in ``cwd`` (first on ``sys.path``), this checkout next on the path."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def _plant(tmp_path: Path, decoy: str) -> Path:
    """A user's own ``wrappers``: a package with an ``__init__.py``, or a module."""
    if decoy == "package":
        (tmp_path / "wrappers").mkdir()
        (tmp_path / "wrappers" / "__init__.py").write_text('"""My own env wrappers."""\n')
        return tmp_path / "wrappers" / "__init__.py"
    (tmp_path / "wrappers.py").write_text('"""My own env wrappers."""\n')
    return tmp_path / "wrappers.py"


@pytest.mark.parametrize("decoy", ["package", "module"])
@pytest.mark.parametrize(
    "args",
    [
        ("-c", "from learners.sb3 import CreditPPO"),
        ("-c", "import agentenvs.viewer"),
        ("-m", "agentenvs.cli", "list"),
    ],
)
def test_a_shadowing_wrappers_is_named_in_one_line(tmp_path, decoy, args):
    planted = _plant(tmp_path, decoy)
    run = _python(tmp_path, *args)
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert last == (
        f"ImportError: 'wrappers' resolves to {planted}, which shadows agentenvs' own 'wrappers' "
        f"({ROOT / 'wrappers'}): rename your 'wrappers' folder or module, or run from another "
        "directory"
    )
    assert "cannot import name" not in run.stderr


def test_without_a_decoy_the_same_imports_work(tmp_path):
    run = _python(tmp_path, "-c", "import learners, agentenvs.viewer, agentenvs.cli")
    assert run.returncode == 0, run.stderr


def test_a_folder_without_init_never_gives_the_bare_error(tmp_path):
    """A bare ``wrappers/`` folder shadows ours only where nothing earlier on the path holds a
    regular ``wrappers`` package (an editable install's finder comes after the path): either the
    import works or it fails with the one line."""
    (tmp_path / "wrappers").mkdir()
    run = _python(tmp_path, "-c", "import learners; from wrappers import CreditWrapper")
    assert run.returncode == 0 or "rename your 'wrappers' folder" in run.stderr, run.stderr


def test_our_packages_pass_and_the_list_is_what_pyproject_installs():
    for name in PACKAGES:
        require_package(name)
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f"include = {[f'{name}*' for name in PACKAGES]}".replace("'", '"') in pyproject
