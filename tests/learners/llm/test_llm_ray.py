"""The LLM learner on Ray workers: ``examples/train_llm.py --vectorization ray`` trains exactly as
on the local vector env (same rollouts, same update, same metrics)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[3]
TIMINGS = ("time", "tokens_per_s", "outside_model_share", "credit_time_share")


def run(vectorization: str, out: Path) -> list[dict[str, str]]:
    cmd = [
        sys.executable, "examples/train_llm.py", "--iterations", "1", "--groups", "2",
        "--group-size", "4", "--warm-start", "format", "--warm-start-steps", "2", "--eval-tasks", "2", "--export", "none",
        "--threads", "1", "--vectorization", vectorization, "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    with (out / "metrics.csv").open() as f:
        return list(csv.DictReader(f))


@pytest.mark.slow  # two tiny-model runs: ~1.5 min each on 2 loaded cores
def test_train_llm_on_ray_workers_matches_the_local_run(tmp_path):
    local, remote = run("sync", tmp_path / "sync"), run("ray", tmp_path / "ray")
    assert len(remote) == len(local) == 2  # the evaluation row and iteration 1
    for a, b in zip(local, remote, strict=True):
        same = {k: v for k, v in a.items() if not any(t in k for t in TIMINGS)}
        assert {k: b[k] for k in same} == same
    assert float(remote[-1]["groups"]) == 2.0
