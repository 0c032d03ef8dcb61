"""benchmarks/credit.py: its data, the inputs it gives verl-agent's GiGPO, and its sections on tiny
sizes (behaviour only; the benchmark itself measures)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
from agentenvs.wrappers import GiGPOConfig, estimate

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "credit.py"


def load_benchmark():
    spec = importlib.util.spec_from_file_location("credit_benchmark", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table_rows(out: str, section: str) -> list[list[str]]:
    body = out.split(section, 1)[1].split("\n## ", 1)[0]
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in body.splitlines()
        if line.startswith("| ") and not line.startswith("| steps")
    ]


def test_sections_run_on_small_sizes(capsys):
    bench = load_benchmark()
    assert bench.main(["--sizes", "300", "--check-sizes", "500", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "Skipped: pass --verl-agent PATH" in out
    rows = table_rows(out, "## Every method")
    assert [r[1] for r in rows] == ["grpo", "gigpo", "graphgpo", "rtmc"]
    assert all(float(r[2]) >= 0 and float(r[3]) >= 0 for r in rows)
    checks = table_rows(out, "## Cross-check")
    assert [r[-1] for r in checks] == ["yes"] * 4  # allclose is asserted inside


def test_a_missing_checkout_is_skipped_with_the_reason(tmp_path, capsys):
    bench = load_benchmark()
    argv = ["--sizes", "100", "--check-sizes", "--repeats", "1", "--verl-agent", str(tmp_path)]
    assert bench.main(argv) == 0
    out = capsys.readouterr().out
    assert "Skipped:" in out and "core_gigpo.py does not exist" in out
    with pytest.raises(FileNotFoundError):
        bench.load_verl_agent_gigpo(tmp_path)


def test_synthetic_batch_has_recurring_states_and_mixed_outcomes():
    batch = load_benchmark().synthetic_batch(5000, seed=1)
    assert 4000 < batch.n_steps < 6000 and batch.n_trajectories % 8 == 0
    assert len(set(batch.state.tolist())) < batch.n_steps / 4
    assert 0.2 < batch.success.mean() < 0.6
    assert 5 <= batch.lengths.min() and batch.lengths.max() <= 50
    last = batch.offsets[1:] - 1
    assert batch.valid[last[batch.success]].all()  # an invalid answer never wins
    assert 0.02 < 1 - batch.valid.mean() < 0.08


def test_trajectories_store_keys_as_the_recorder_does():
    bench = load_benchmark()
    batch = bench.synthetic_batch(2000)
    groups = bench.trajectories(batch)
    for traj in (t for g in groups for t in g):
        for step, after in zip(traj.steps, traj.steps[1:], strict=False):
            assert step.next_state_key is after.state_key  # one object per observation
    flat = bench._flat(groups)
    for name, (module, config) in bench.METHODS.items():
        np.testing.assert_allclose(
            np.concatenate(estimate(flat, name, config)),
            module.estimate_batch(batch, config),
            atol=1e-12,
            err_msg=name,
        )


def test_verl_agent_inputs_are_rows_by_trajectory():
    bench = load_benchmark()
    groups = bench.trajectories(bench.synthetic_batch(600))
    inputs = bench.verl_agent_inputs(groups)
    flat = bench._flat(groups)
    steps = [s for t in flat for s in t.steps]
    assert len(inputs["uid"]) == len(steps) and inputs["anchor_obs"].dtype == object
    assert [inputs["anchor_obs"][i] for i in range(3)] == [s.state_key for s in steps[:3]]
    penalty = np.where([s.action_valid for s in steps], 0.0, bench.PENALTY)
    np.testing.assert_allclose(inputs["rewards"], [s.reward for s in steps] + penalty)
    lengths = [len(t) for t in flat]
    starts = np.cumsum([0, *lengths[:-1]])
    assert len(set(inputs["traj_uid"][starts])) == len(flat)
    assert len(set(inputs["uid"])) == len(groups)
    totals = [sum(inputs["rewards"][a : a + n]) for a, n in zip(starts, lengths, strict=True)]
    np.testing.assert_allclose(inputs["episode_rewards"][starts], totals)


@pytest.mark.skipif(
    not os.environ.get("VERL_AGENT_PATH"),
    reason="set VERL_AGENT_PATH to a verl-agent checkout (with its requirements) to run",
)
def test_verl_agent_gigpo_agrees_with_ours():
    bench = load_benchmark()
    try:
        module = bench.load_verl_agent_gigpo(os.environ["VERL_AGENT_PATH"])
    except ImportError as err:
        pytest.skip(f"verl-agent's requirements are missing: {err}")
    groups = bench.trajectories(bench.synthetic_batch(400))
    theirs, _, _ = bench.run_verl_agent_gigpo(module, bench.verl_agent_inputs(groups))
    ours = np.concatenate(estimate(bench._flat(groups), "gigpo", GiGPOConfig.reference()))
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)
