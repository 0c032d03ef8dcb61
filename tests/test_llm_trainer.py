"""End to end: the trainer on credit-wrapped envs (ours, a user's wrapper, a user's env), exact
resume, LoRA, and the CPU-side logic of the GPU paths."""

import csv
import functools

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import agentenvs  # noqa: E402
from agentenvs.core import Step, Trajectory, text_space  # noqa: E402
from learners.llm.config import TrainConfig  # noqa: E402
from learners.llm.generation import HFGenerator  # noqa: E402
from learners.llm.policy import Policy  # noqa: E402
from learners.llm.tiny import build_tiny_model, build_tiny_tokenizer  # noqa: E402
from learners.llm.trainer import Trainer  # noqa: E402
from wrappers import GraphCreditWrapper, VectorCreditWrapper  # noqa: E402

SMALL = dict(
    max_new_tokens=6,
    eval_tasks=2,
    lr=1e-3,
    micro_batch_size=3,
    torch_threads=1,  # 2 threads on 2 shared cores is many times slower than 1
)


@pytest.fixture(autouse=True)
def _restore_torch_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@functools.cache
def _tokenizer():
    return build_tiny_tokenizer()


def _policy(seed=0):
    return Policy(build_tiny_model(_tokenizer(), seed=seed), _tokenizer())


def _graph_envs(n=2, group_size=2, max_steps=2):
    return [
        lambda: GraphCreditWrapper(
            gym.make("agentenvs/Sokoban-v0", max_steps=max_steps), group_size=group_size
        )
    ] * n


def test_one_iteration_on_graph_credit_wrappers(tmp_path):
    config = TrainConfig(iterations=1, prompt_style="reference", **SMALL)
    trainer = Trainer(config, _policy(), tmp_path, _graph_envs(), progress=False)
    rows = trainer.train()
    trainer.close()
    assert [r["iteration"] for r in rows] == [0.0, 1.0]
    last = rows[-1]
    assert last["groups"] == 2.0 and last["groups_dropped"] == 0.0
    assert last["samples"] == 8.0  # 2 envs x 2 episodes x 2 steps (the tiny model never solves)
    assert last["adv_zero_frac"] == 1.0  # identical returns: GraphGPO gives zero credit
    for key in (
        "success_rate",
        "valid_action_rate",
        "entropy",
        "time_generate",
        "time_update",
        "time_sync",
        "outside_model_share",
        "gen_tokens_per_s",
        "eval/greedy/success_rate",
        "eval/sampled/success_rate",
        "eval/greedy/success_gain",
        "eval/sampled/success_gain_low",
        "truncated_frac",
        "clip_frac_lower",
    ):
        assert key in last
    assert (tmp_path / "checkpoint.pt").exists() and (tmp_path / "learning_curve.png").exists()
    with (tmp_path / "metrics.csv").open() as f:
        assert len(list(csv.DictReader(f))) == 2
    assert list((tmp_path / "tensorboard").iterdir())


def test_evaluation_keeps_every_episode_and_reports_the_paired_gain(tmp_path):
    config = TrainConfig(iterations=1, **{**SMALL, "eval_tasks": 3}, eval_modes=("greedy",))
    trainer = Trainer(config, _policy(), tmp_path, _graph_envs(), tensorboard=False, progress=False)
    rows = trainer.train()
    outcomes = trainer.logger.outcomes
    assert [(r["iteration"], r["mode"]) for r in outcomes] == [(0, "greedy")] * 3 + [
        (1, "greedy")
    ] * 3
    assert [r["task_id"] for r in outcomes[:3]] == trainer.test_tasks
    # the tiny model never wins: no task changes, so the gain and its interval are exactly 0
    last = rows[-1]
    assert (last["eval/greedy/success_gain"], last["eval/greedy/success_gain_low"]) == (0.0, 0.0)
    assert not any(k.startswith("eval/sampled/") for r in rows for k in r)
    # a resumed run forgets outcomes logged after its checkpoint's iteration
    trainer.logger.truncate(0)
    assert len(trainer.logger.outcomes) == 3
    assert len((tmp_path / "eval_outcomes.jsonl").read_text().splitlines()) == 3
    trainer.close()


def test_one_iteration_on_a_grouped_vector_env(tmp_path):
    envs = VectorCreditWrapper(
        agentenvs.make_group_vec_env("agentenvs/Sokoban-v0", 2, 2, max_steps=2), "graph"
    )
    config = TrainConfig(iterations=1, **SMALL)
    trainer = Trainer(config, _policy(), tmp_path, envs, tensorboard=False, progress=False)
    metrics = trainer.train_iteration()
    assert metrics["groups"] == 2.0 and metrics["samples"] == 8.0
    assert trainer.evaluate()["eval/greedy/episode_len"] == 2.0  # on the sync sub-envs' base envs
    trainer.close()


class UserCredit(gym.Wrapper):
    """A user's own credit wrapper: groups of ``group_size`` consecutive episodes of one task, and
    an advantage that depends on the sampled text (nonzero, unlike the tiny model's returns)."""

    def __init__(self, env, group_size=2):
        super().__init__(env)
        self.group_size, self._group, self._steps = group_size, [], []

    def reset(self, *, seed=None, options=None):
        obs, info = self.env.reset(seed=seed, options=options)
        self._obs, self._steps = obs, []
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        advantage = float(sum(map(ord, action)) % 5 - 2)
        self._steps.append(
            Step(self._obs, action, reward, terminated, truncated, advantage=advantage)
        )
        self._obs = obs
        if terminated or truncated:
            self._group.append(Trajectory(info["task_id"], "user", self._steps, info["won"]))
            if len(self._group) == self.group_size:
                info, self._group = {**info, "credit": self._group}, []
        return obs, reward, terminated, truncated, info


class EchoEnv(gym.Env):
    """A user's own env (not a TextAgentEnv): say the task's word inside <action> tags to win.

    It follows the info contract (won, action_valid, state_key, task_id) and has no prompt hook
    and no task panel: the learner uses the generic prompt and the config's task ids."""

    observation_space = text_space()
    action_space = text_space()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.word, self.t = options["task_id"], 0
        return f"Say {self.word}.", self._info(True, False)

    def step(self, action):
        self.t += 1
        valid = "<action>" in action and "</action>" in action
        won = valid and action.split("<action>")[1].split("</action>")[0].strip() == self.word
        done = won or self.t >= 2
        return (
            "Again." if not won else "Yes.",
            float(won),
            won,
            done and not won,
            self._info(valid, won),
        )

    def _info(self, valid, won):
        return {"won": won, "action_valid": valid, "state_key": self.t, "task_id": self.word}


def _run(tmp_path, iterations, resume_from=None):
    config = TrainConfig(iterations=iterations, seed=3, kl_coef=0.05, **SMALL)
    envs = [lambda: UserCredit(gym.make("agentenvs/Sokoban-v0", max_steps=2))] * 2
    trainer = Trainer(config, _policy(), tmp_path, envs, tensorboard=False, progress=False)
    if resume_from is not None:
        trainer.load_checkpoint(resume_from)
    losses = [trainer.train_iteration()["loss"] for _ in range(iterations - trainer.iteration)]
    trainer.close()
    return trainer, losses


def test_user_wrapper_trains_and_resume_reproduces_the_next_loss_bit_exactly(tmp_path):
    _, straight = _run(tmp_path / "a", 2)
    first, _ = _run(tmp_path / "b", 1)
    ckpt = first.save_checkpoint()
    resumed, after = _run(tmp_path / "c", 2, resume_from=ckpt)
    assert straight[1] != 0.0
    assert after == [straight[1]]
    assert resumed.cursor.position == 4 and resumed.iteration == 2


def test_user_env_trains_with_the_generic_prompt(tmp_path):
    gym.register("test/Echo-v0", entry_point=EchoEnv)
    try:
        config = TrainConfig(
            iterations=1, train_tasks=["apple", "pear"], test_tasks=["plum"], **SMALL
        )
        envs = [lambda: GraphCreditWrapper(gym.make("test/Echo-v0"), group_size=2)] * 2
        trainer = Trainer(config, _policy(), tmp_path, envs, tensorboard=False, progress=False)
        assert "Say apple." in trainer.prompts[0].render(*_fresh("Say apple."))
        rows = trainer.train()
        trainer.close()
    finally:
        del gym.registry["test/Echo-v0"]
    assert rows[-1]["groups"] == 2.0 and rows[-1]["samples"] == 8.0
    assert rows[-1]["eval/sampled/episode_len"] == 2.0


def _fresh(obs):
    from agentenvs.core import EpisodeMemory

    return EpisodeMemory(), obs, {}


def test_lora_trains_only_the_adapter(tmp_path):
    pytest.importorskip("peft")
    from peft import LoraConfig, get_peft_model

    policy = _policy()
    policy.model = get_peft_model(
        policy.model, LoraConfig(r=2, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    )
    config = TrainConfig(iterations=1, kl_coef=0.1, **SMALL)
    envs = [lambda: UserCredit(gym.make("agentenvs/Sokoban-v0", max_steps=2))] * 2
    trainer = Trainer(config, policy, tmp_path, envs, tensorboard=False, progress=False)
    base = {k: v.clone() for k, v in policy.model.named_parameters() if "lora" not in k}
    metrics = trainer.train_iteration()
    trainer.close()
    assert trainer.ref_model is None and metrics["kl"] >= 0.0
    assert all(torch.equal(v, dict(policy.model.named_parameters())[k]) for k, v in base.items())
    assert all("lora" in n for n, p in policy.model.named_parameters() if p.requires_grad)


def test_the_sync_check_shows_a_stale_backend(tmp_path):
    import copy

    config = TrainConfig(iterations=2, seed=3, **SMALL)
    envs = [lambda: UserCredit(gym.make("agentenvs/Sokoban-v0", max_steps=2))] * 2
    trainer = Trainer(config, _policy(), tmp_path, envs, tensorboard=False, progress=False)
    shared = trainer.train_iteration()
    assert "sync/logprob_gap" not in shared  # HF sampling from the training model cannot drift
    # a backend that keeps the weights from before the next update: an engine never synced
    stale = Policy(copy.deepcopy(trainer.policy.model), trainer.policy.tokenizer)
    trainer.generator = HFGenerator(stale, max_new_tokens=trainer.max_new_tokens)
    missed = trainer.train_iteration()
    assert missed["sync/logprob_gap"] > 1e-2  # about 0.13 nats per token after one update
    assert missed["sync/logprob_gap_max"] >= missed["sync/logprob_gap"]
    # the same backend once it holds the trained weights (what a sync does)
    stale.model.load_state_dict(trainer.policy.model.state_dict())
    synced = trainer.check_sync(_hand_steps())
    trainer.close()
    assert synced["sync/logprob_gap"] < 1e-5 and synced["sync/logprob_gap_max"] < 1e-5
    trainer.config.logprob_check_samples = 0
    assert trainer.check_sync(_hand_steps()) == {}  # 0 turns the check off


def test_per_env_defaults_come_from_the_env(tmp_path):
    trainer = Trainer(
        TrainConfig(prompt_style="compact"), _policy(), tmp_path, _graph_envs(1), progress=False
    )
    assert trainer.max_new_tokens == trainer.prompts[0].max_new_tokens == 40
    trainer.close()
    trainer = Trainer(
        TrainConfig(prompt_style="reference"), _policy(), tmp_path, _graph_envs(1), progress=False
    )
    assert trainer.max_new_tokens == 512
    trainer.close()


def test_stop_at_action_end_reaches_the_sampler(tmp_path):
    for flag in (True, False):
        config = TrainConfig(iterations=1, stop_at_action_end=flag, **SMALL)
        trainer = Trainer(
            config,
            _policy(),
            tmp_path,
            _graph_envs(1, max_steps=1),
            tensorboard=False,
            progress=False,
        )
        groups, _, sample = trainer.collect()
        trainer.close()
        assert sample.stop_at_action_end is flag
        steps = [s for g in groups for t in g for s in t.steps]
        assert steps and all(isinstance(s.extras["truncated"], bool) for s in steps)
        # 6 tokens are too few for a random model to close its action: responses are truncated
        assert any(s.extras["truncated"] for s in steps)


def _hand_steps(truncated=(False, False, False)):
    """Three credited step-samples with short, distinct prompts (no shared prefix) and responses
    of 3, 1 and 2 tokens; the last has a large advantage."""
    import numpy as np

    prompts, responses = [[5, 6, 7, 8], [9, 10], [11, 12, 13]], [[20, 21, 22], [23], [24, 25]]
    steps = []
    for p, r, a, t in zip(prompts, responses, (1.0, -2.0, 5.0), truncated, strict=True):
        step = Step("o", "a", 0.0, advantage=a)
        step.extras.update(
            prompt_ids=np.asarray(p, np.int32),
            response_ids=np.asarray(r, np.int32),
            logprobs=np.zeros(len(r), np.float32),  # unused: recompute_old_logprobs
            truncated=t,
        )
        steps.append(step)
    return steps


def _update_grads(tmp_path, steps, **overrides):
    """The (clipped) accumulated gradient one update leaves, with lr 0 (weights unchanged)."""
    settings = {**SMALL, "lr": 0.0, "kl_coef": 0.05, "recompute_old_logprobs": True}
    config = TrainConfig(iterations=1, **{**settings, "eval_tasks": 0, **overrides})
    trainer = Trainer(
        config, _policy(), tmp_path, _graph_envs(1), tensorboard=False, progress=False
    )
    stats = trainer.update(steps)
    trainer.close()
    grads = [p.grad.clone() for p in trainer.params if p.grad is not None]
    return grads, stats


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"])
def test_update_gradient_does_not_depend_on_the_micro_batch_size(tmp_path, mode):
    one, stats = _update_grads(
        tmp_path / "a", _hand_steps(), micro_batch_size=1, loss_agg_mode=mode
    )
    all_, _ = _update_grads(tmp_path / "b", _hand_steps(), micro_batch_size=8, loss_agg_mode=mode)
    assert stats["update_steps"] == 1.0 and stats["truncated_frac"] == 0.0
    assert "clip_frac_lower" in stats
    assert len(one) == len(all_) > 0
    for a, b in zip(one, all_, strict=True):
        assert torch.allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean"])
def test_mask_truncated_gives_truncated_samples_zero_weight(tmp_path, mode):
    flags = (False, False, True)
    kept, _ = _update_grads(tmp_path / "a", _hand_steps()[:2], loss_agg_mode=mode)
    masked, stats = _update_grads(
        tmp_path / "b",
        _hand_steps(flags),
        mask_truncated=True,
        micro_batch_size=2,
        loss_agg_mode=mode,
    )
    unmasked, stats_off = _update_grads(tmp_path / "c", _hand_steps(flags), loss_agg_mode=mode)
    # masked: exactly the update without the truncated sample (its tokens and its sequence count
    # in no normaliser; its micro-batch of one never runs); unmasked: it pulls the gradient
    for a, b in zip(kept, masked, strict=True):
        assert torch.allclose(a, b, atol=1e-6)
    assert not all(torch.allclose(a, b, atol=1e-4) for a, b in zip(kept, unmasked, strict=True))
    assert stats["truncated_frac"] == stats_off["truncated_frac"] == pytest.approx(1 / 3)
    assert stats["samples"] == 3.0


def test_mask_truncated_with_only_truncated_samples_takes_no_step(tmp_path):
    grads, stats = _update_grads(tmp_path, _hand_steps((True,) * 3), mask_truncated=True)
    assert grads == [] and stats["update_steps"] == 0.0 and stats["truncated_frac"] == 1.0


def test_bad_config_values_raise():
    with pytest.raises(ValueError, match="backend"):
        TrainConfig(backend="tpu")
    with pytest.raises(ValueError, match="loss_agg_mode"):
        TrainConfig(loss_agg_mode="seq-sum")
    with pytest.raises(ValueError, match="clip_ratio_c"):
        TrainConfig(clip_ratio_c=0.5)
    with pytest.raises(ValueError, match="micro_batch_size"):
        TrainConfig(micro_batch_size=0)
    with pytest.raises(ValueError, match="prompt_style"):
        TrainConfig(prompt_style="fancy")
    with pytest.raises(ValueError, match="vllm_gpu_memory_utilization"):
        TrainConfig(vllm_gpu_memory_utilization=0.0)
    with pytest.raises(ValueError, match="vllm_max_model_len"):
        TrainConfig(vllm_max_model_len=0)
    with pytest.raises(ValueError, match="vllm_max_lora_rank"):
        TrainConfig(vllm_max_lora_rank=0)
    with pytest.raises(ValueError, match="logprob_check_samples"):
        TrainConfig(logprob_check_samples=-1)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_iteration_with_bf16_autocast(tmp_path):
    policy = _policy()
    policy.model.to("cuda")
    policy.device = "cuda"
    config = TrainConfig(iterations=1, **SMALL)
    envs = [lambda: UserCredit(gym.make("agentenvs/Sokoban-v0", max_steps=2))] * 2
    trainer = Trainer(config, policy, tmp_path, envs, tensorboard=False, progress=False)
    metrics = trainer.train_iteration()
    trainer.close()
    assert metrics["samples"] > 0 and torch.isfinite(torch.tensor(metrics["loss"]))
