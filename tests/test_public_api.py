"""The public API: what each package's ``__init__`` exports, and the import rules inside.

* the packages users import (``agentenvs``, ``agentenvs.wrappers``, ``agentenvs.learners.llm``)
  export a small surface, and every exported name resolves;
* no module imports another module's ``_private`` name (a group of modules that share internals
  is a subpackage of private modules);
* the LLM learner imports no credit code: credit reaches it through the envs' ``info``.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Source folder -> import name (pyproject.toml's ``package-dir``).
FOLDERS = {
    "agentenvs": "agentenvs",
    "wrappers": "agentenvs.wrappers",
    "learners": "agentenvs.learners",
}
#: The packages a user imports, and the most names each may export.
SURFACES = {"agentenvs": 12, "agentenvs.wrappers": 30, "agentenvs.learners.llm": 8}


def _modules() -> dict[str, ast.Module]:
    """Every module of the three folders, by import name, parsed."""
    found = {}
    for folder, name in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder).with_suffix("").parts
            if "seeds" in rel:  # the SWE seed repositories are data
                continue
            parts = rel[:-1] if rel[-1] == "__init__" else rel
            found[".".join([name, *parts])] = ast.parse(path.read_text())
    return found


@pytest.mark.parametrize("package", sorted(SURFACES))
def test_a_package_exports_a_small_surface_that_resolves(package):
    module = importlib.import_module(package)
    names = module.__all__
    assert len(names) == len(set(names)) <= SURFACES[package], names
    for name in names:
        assert getattr(module, name) is not None, name


def test_no_module_imports_another_modules_private_names():
    crossings = [
        f"{name} imports {node.module}.{alias.name}"
        for name, tree in _modules().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module != name
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]
    assert crossings == []


def test_the_llm_learner_imports_no_credit_code():
    imports = [
        f"{name}: {node.module}"
        for name, tree in _modules().items()
        if name.startswith("agentenvs.learners.llm")
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agentenvs.wrappers")
    ]
    assert imports == []
