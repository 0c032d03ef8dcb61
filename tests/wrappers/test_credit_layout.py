"""The layout of wrappers/: no import cycle, and structural credit without torch.

Both tests read the code, not a description of it: the import graph is drawn from every module's
``import`` statements (ast, function-level imports included), and the torch-free claim is checked
by importing the package in a fresh interpreter whose import system refuses ``torch`` and
``transformers``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "wrappers"


def module_name(path: Path) -> str:
    """``wrappers/batch.py`` -> ``agentenvs.wrappers.batch`` (its installed name)."""
    parts = ("agentenvs", *path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """``module -> the wrappers modules it imports`` for every module of the package.

    ``from agentenvs.wrappers import x`` counts as an import of ``agentenvs.wrappers.x`` when that
    module exists (it names a submodule), else of the package ``agentenvs.wrappers``.
    """
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    target = sub if sub in modules else node.module
                    if target in modules:
                        edges.add(target)
        edges.discard(name)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (as a list of modules, first repeated last), or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_find_cycle_finds_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_wrappers_import_graph_has_no_cycle() -> None:
    graph = import_graph()
    assert {
        "agentenvs.wrappers.base",
        "agentenvs.wrappers.grouping",
        "agentenvs.wrappers.registry",
    } <= set(graph)
    # the package init imports its modules; no module imports the package init back
    assert not [m for m, edges in graph.items() if "agentenvs.wrappers" in edges]
    assert find_cycle(graph) is None


BLOCK_TORCH = """
import importlib.abc, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "transformers"):
            raise ImportError(f"{name} is blocked in this test")
        return None

sys.meta_path.insert(0, Refuse())
import agentenvs.wrappers
from agentenvs.wrappers import GraphCreditWrapper, estimate, GraphGPOConfig
from agentenvs.wrappers.registry import METHODS
from agentenvs.wrappers import grpo, gigpo, graphgpo, rtmc, grouping, registry, stats, batch, base
from agentenvs.core import Step, Trajectory

def traj(path, won):
    steps = [Step("o", "a", 0.0, state_key=u, next_state_key=v) for u, v in zip(path, path[1:])]
    steps[-1].reward = 10.0 if won else 0.0
    return Trajectory("t", "g", steps, success=won)

adv = estimate([traj("ABG", True), traj("ACC", False)], "graph", GraphGPOConfig(eps=0.0))
print([a.round(4).tolist() for a in adv])
print(sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers")))
"""


def test_structural_credit_imports_no_torch() -> None:
    out = subprocess.run(
        [sys.executable, "-c", BLOCK_TORCH],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[[1.4142, 0.7071], [-1.4142, -0.7071]]", "[]"]


def test_configs_are_frozen_values_and_state_lives_apart() -> None:
    import dataclasses

    import pytest
    from agentenvs.wrappers import CreditState, make_config, spa
    from agentenvs.wrappers.registry import METHODS

    for name in ("grpo", "gigpo", "graphgpo", "rtmc", "triage", "hisr", "spa"):
        config = METHODS[name].config()
        assert dataclasses.is_dataclass(config)
        with pytest.raises(dataclasses.FrozenInstanceError):
            config.eps = 0.5  # type: ignore[misc]
    config = make_config("spa", estimator="tabular")
    assert config.estimator == "tabular" and not hasattr(config, "buffer")  # a spec, not a model
    state = CreditState()
    online = state.get(METHODS["spa"], config)
    assert online is state.get(METHODS["spa"], dataclasses.replace(config))  # an equal config
    assert isinstance(online, spa.SPAState) and type(online.estimator).__name__ == (
        "TabularProgressEstimator"
    )
    assert CreditState().get(METHODS["spa"], config) is not online  # per state, not per config


def test_viewer_reruns_only_what_the_registry_calls_pure() -> None:
    import numpy as np
    from agentenvs.wrappers import (
        GRPOConfig,
        register_method,
        registered_methods,
        unregister_method,
    )

    from agentenvs.core import Step, Trajectory
    from agentenvs.viewer.compare import STRUCTURAL_METHODS, compare_methods

    assert STRUCTURAL_METHODS == tuple(m.name for m in registered_methods(needs_model=False))
    group = [
        Trajectory("t", "g", [Step("o", "a", 1.0, state_key="A")], success=True),
        Trajectory("t", "g", [Step("o", "b", 0.0, state_key="A")], success=False),
    ]
    register_method("needy", lambda b, c: np.zeros(b.n_steps), GRPOConfig, needs_model=True)
    try:
        views = compare_methods(group, ["grpo", "needy"])
    finally:
        unregister_method("needy")
    assert [(v.method, v.source) for v in views] == [("grpo", "recomputed"), ("needy", "skipped")]
