"""The learner learns a one-step bandit: a text env where only ``left`` pays.

The smallest end-to-end check that RL moves the tiny model where its reward points: a format-only
warm start (uniformly random words in the action syntax), then GRPO-style PPO (one-step episodes:
step credit equals outcome credit), and greedy decoding must pick ``left`` on every held-out task
within 20 iterations.
"""

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from agentenvs.learners.llm.config import TrainConfig  # noqa: E402
from agentenvs.learners.llm.trainer import Trainer  # noqa: E402
from agentenvs.learners.llm.warm_start import supervised_warm_start  # noqa: E402
from agentenvs.wrappers import GraphCreditWrapper  # noqa: E402
from llm_fixtures import tiny_policy  # noqa: E402

from agentenvs.core import SeedTaskIds, TaskPanel, TextAgentEnv, text_space  # noqa: E402

WORDS = ["up", "down", "left", "right"]


class LeftBandit(TextAgentEnv):
    """One step per episode; reward 1 (and success) iff the action is ``left``."""

    observation_space = text_space()
    action_space = text_space()

    def __init__(self):
        tasks = TaskPanel({"train": SeedTaskIds(0, 64), "test": SeedTaskIds(64, 72)})
        super().__init__(tasks=tasks, max_steps=1)

    def _load_task(self, task_id):
        self._last = task_id

    def _observation(self, feedback):
        return feedback or "Pick a direction."

    def _apply(self, command):
        self._last = command
        return float(command == "left"), command == "left"

    def _state_key(self):
        return "start"

    def _admissible_actions(self):
        return list(WORDS)


def test_rl_learns_the_bandit_greedy_1_within_20_iterations(tmp_path):
    gym.register("test/LeftBandit-v0", entry_point=LeftBandit)
    try:
        policy = tiny_policy(seed=1)  # its format warm start answers greedily with another word
        env = gym.make("test/LeftBandit-v0")
        tasks = env.unwrapped.tasks.ids("train")
        supervised_warm_start(policy, env, tasks, "format", steps=100, max_states=64)
        env.close()
        config = TrainConfig(
            iterations=20, lr=1e-3, warmup_steps=4, kl_coef=0.05, ppo_epochs=2, mini_batches=2,
            max_new_tokens=16, eval_tasks=8, eval_modes=("greedy",), micro_batch_size=16,
            torch_threads=1, store="none",
        )  # fmt: skip

        def make():
            return GraphCreditWrapper(gym.make("test/LeftBandit-v0"), group_size=8)

        trainer = Trainer(config, policy, tmp_path, [make] * 4, tensorboard=False, progress=False)
        rows = trainer.train()
        trainer.close()
    finally:
        del gym.registry["test/LeftBandit-v0"]
    assert rows[0]["eval/greedy/success_rate"] < 1.0  # the warm start did not choose left
    assert rows[-1]["eval/greedy/success_rate"] == 1.0
    assert rows[-1]["success_rate"] > rows[1]["success_rate"]
    assert all(r["collapsed"] == 0.0 for r in rows[1:])
