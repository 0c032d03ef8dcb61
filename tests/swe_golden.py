"""docs/swe.md's golden example, shared by the SWE tests: the ``textkit`` repository (one module,
one test file), the off-by-one bug that the generator injects into ``chunk`` and the test lists it
yields; :func:`write_repo` and :func:`write_golden_task` put them on disk."""

import json
import subprocess
from pathlib import Path

#: ``textkit/core.py``, clean.
CORE = '''def clamp(x, lo, hi):
    """Limit x to the closed interval [lo, hi]."""
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def chunk(seq, n):
    """Split seq into consecutive pieces of length n (the last may be shorter)."""
    if n <= 0:
        raise ValueError("n must be positive")
    return [seq[i:i + n] for i in range(0, len(seq), n)]
'''
TESTS = """import pytest

from textkit.core import chunk, clamp


def test_clamp_low():
    assert clamp(-1, 0, 10) == 0


def test_clamp_high():
    assert clamp(11, 0, 10) == 10


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_chunk_even():
    assert chunk([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]


def test_chunk_uneven():
    assert chunk([1, 2, 3], 2) == [[1, 2], [3]]


def test_chunk_bad_n():
    with pytest.raises(ValueError):
        chunk([1], 0)
"""
BUG_PATCH = '''diff --git a/textkit/core.py b/textkit/core.py
--- a/textkit/core.py
+++ b/textkit/core.py
@@ -11,4 +11,4 @@ def chunk(seq, n):
     """Split seq into consecutive pieces of length n (the last may be shorter)."""
     if n <= 0:
         raise ValueError("n must be positive")
-    return [seq[i:i + n] for i in range(0, len(seq), n)]
+    return [seq[i:i + n] for i in range(1, len(seq), n)]
'''
T = "tests/test_core.py::"
F2P = [T + "test_chunk_even", T + "test_chunk_uneven"]
P2P = [
    T + n for n in ("test_clamp_low", "test_clamp_high", "test_clamp_inside", "test_chunk_bad_n")
]
#: ``textkit/core.py`` with the bug of :data:`BUG_PATCH`.
BUGGY_CORE = CORE.replace("range(0, len(seq), n)", "range(1, len(seq), n)")


def write_repo(root: Path) -> Path:
    """The clean ``textkit`` repository (package, tests) written under ``root``; returns ``root``."""
    (root / "textkit").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "textkit" / "__init__.py").write_text("")
    (root / "textkit" / "core.py").write_text(CORE)
    (root / "tests" / "test_core.py").write_text(TESTS)
    return root


def write_golden_task(task_dir: Path, **record: object) -> Path:
    """A task directory (``repo/`` with :data:`BUG_PATCH` applied, ``task.json``) for
    ``agentenvs.swe.task.load_task_dir``; ``record`` overrides the task record's fields."""
    repo = write_repo(task_dir / "repo")
    subprocess.run(["git", "apply", "-"], input=BUG_PATCH.encode(), cwd=repo, check=True)
    fields = {
        "instance_id": "textkit.golden",
        "repo": "textkit",
        "problem_statement": "chunk() drops the first element.",
        "FAIL_TO_PASS": F2P,
        "PASS_TO_PASS": P2P,
        "split": "test",
        **record,
    }
    (task_dir / "task.json").write_text(json.dumps(fields))
    return task_dir
