"""A credit method a user registers reaches every learner unchanged: the LLM trainer, the
flagship script's ``--credit NAME`` / ``--credit-config`` and SB3's CreditPPO."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from agentenvs.wrappers import CreditWrapper, make_config, register_method, unregister_method

import agentenvs  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


@dataclasses.dataclass
class ConstantConfig:
    value: float = 0.25


def constant_batch(batch, config):
    """Every step gets ``config.value``: nothing a learner could produce by itself."""
    return np.full(batch.n_steps, config.value, np.float64)


@pytest.fixture
def constant():
    entry = register_method("constant", constant_batch, ConstantConfig, columns=())
    yield entry
    unregister_method("constant")


@pytest.mark.integration
def test_the_llm_trainer_updates_on_the_users_advantages(constant, tmp_path):
    pytest.importorskip("transformers")
    from agentenvs.learners.llm.config import TrainConfig
    from agentenvs.learners.llm.trainer import Trainer
    from llm_fixtures import tiny_policy

    def make_env():
        env = gym.make("agentenvs/Sokoban-v0", max_steps=2)
        return CreditWrapper(env, group_size=2, method="constant", config=ConstantConfig(-0.75))

    config = TrainConfig(
        iterations=1, max_new_tokens=6, eval_tasks=2, micro_batch_size=4, torch_threads=1
    )
    trainer = Trainer(config, tiny_policy(), tmp_path, [make_env])
    seen = []
    update = trainer.update
    trainer.update = lambda steps: seen.extend(steps) or update(steps)
    metrics = trainer.train_iteration()
    trainer.close()
    assert seen and {s.advantage for s in seen} == {-0.75}
    assert metrics["adv_mean"] == -0.75 and metrics["adv_std"] == 0.0


def test_creditppo_buffer_holds_the_users_advantages(constant):
    pytest.importorskip("stable_baselines3")
    from agentenvs.learners.sb3 import CreditPPO, make_credit_vec_env

    env = make_credit_vec_env(
        "agentenvs/SokobanDiscrete-v0", "constant", n_envs=2, group_size=2, seed=0,
        config=make_config("constant", value=1.5),
    )  # fmt: skip
    model = CreditPPO("MlpPolicy", env, n_steps=16, batch_size=16, n_epochs=1, seed=0)
    model.learn(32)
    assert model.rollout_buffer.buffer_size >= 32
    np.testing.assert_array_equal(model.rollout_buffer.advantages, 1.5)


def test_the_flagship_script_takes_a_registered_name_and_its_options(tmp_path):
    """A user's script registers a method, then runs ``examples/train_llm.py`` with
    ``--credit constant --credit-config '{"value": 2.0}'``; unknown options fail clearly."""
    pytest.importorskip("transformers")
    script = (
        "import runpy, sys, numpy as np, dataclasses\n"
        "from agentenvs.wrappers import register_method\n"
        "@dataclasses.dataclass\n"
        "class C:\n"
        "    value: float = 0.0\n"
        "register_method('constant', lambda b, c: np.full(b.n_steps, c.value), C, columns=())\n"
        "sys.argv = ['train_llm.py'] + sys.argv[1:]\n"
        "runpy.run_path('examples/train_llm.py', run_name='__main__')\n"
    )
    base = [
        sys.executable,
        "-c",
        script,
        "--iterations",
        "1",
        "--warm-start",
        "format",
        "--warm-start-steps",
        "2",
    ]
    base += ["--groups", "2", "--group-size", "2", "--eval-tasks", "2", "--export", "none"]
    base += ["--threads", "1", "--out", str(tmp_path), "--credit", "constant"]
    done = subprocess.run(
        [*base, "--credit-config", '{"value": 2.0}'],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "credit constant" in done.stdout
    rows = (tmp_path / "metrics.csv").read_text().splitlines()
    header, last = rows[0].split(","), rows[-1].split(",")
    assert float(last[header.index("adv_mean")]) == 2.0
    bad = subprocess.run(
        [*base, "--credit-config", '{"lam": 1}'], cwd=ROOT, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert bad.returncode == 2 and "has no option 'lam'" in bad.stderr
