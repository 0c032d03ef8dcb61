"""benchmarks/credit.py runs, and its fast, reference and Trajectory-object paths agree on small sizes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "credit.py"


def load_benchmark():
    spec = importlib.util.spec_from_file_location("credit_benchmark", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_small_sizes(capsys):
    bench = load_benchmark()
    assert (
        bench.main(["--sizes", "300", "2000", "--ref-max", "5000"]) == 0
    )  # asserts allclose inside
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and "steps/s" not in line]
    assert len(rows) == 8 and {row.split("|")[2].strip() for row in rows} == {
        "grpo",
        "gigpo",
        "graph",
        "rtmc",
    }


def test_synthetic_batch_has_recurring_states_and_mixed_outcomes():
    batch = load_benchmark().synthetic_batch(5000, seed=1)
    assert 4000 < batch.n_steps < 6000 and batch.n_trajectories % 8 == 0
    assert len(set(batch.state.tolist())) < batch.n_steps / 4
    assert (
        0.2 < batch.success.mean() < 0.6 and 5 <= batch.lengths.min() and batch.lengths.max() <= 50
    )
