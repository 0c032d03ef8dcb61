"""End to end: the trainer on credit-wrapped envs (ours, a user's wrapper, a user's env), exact
resume, LoRA, and the CPU-side logic of the GPU paths."""

import csv
import math
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from agentenvs.learners.llm.callbacks import TrainerCallback  # noqa: E402
from agentenvs.learners.llm.config import TrainConfig  # noqa: E402
from agentenvs.learners.llm.generation import HFGenerator  # noqa: E402
from agentenvs.learners.llm.loss import token_logprobs  # noqa: E402
from agentenvs.learners.llm.policy import Policy, collate, response_logits  # noqa: E402
from agentenvs.learners.llm.trainer import Trainer  # noqa: E402
from agentenvs.wrappers import (  # noqa: E402
    CreditState,
    GraphCreditWrapper,
    ProgressCreditWrapper,
    SPAConfig,
    VectorCreditWrapper,
)
from agentenvs.wrappers.registry import METHODS  # noqa: E402
from llm_fixtures import assert_intervals_in_range, tiny_policy  # noqa: E402

import agentenvs  # noqa: E402
from agentenvs.cli.train import parse_args, report_lines  # noqa: E402
from agentenvs.core import Step, TaskPanel, Trajectory, text_space  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]

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


def _graph_envs(n=2, group_size=2, max_steps=2):
    return [
        lambda: GraphCreditWrapper(
            gym.make("agentenvs/Sokoban-v0", max_steps=max_steps), group_size=group_size
        )
    ] * n


@pytest.mark.integration
def test_one_iteration_on_graph_credit_wrappers(tmp_path):
    config = TrainConfig(iterations=1, prompt_style="reference", **SMALL)
    trainer = Trainer(config, tiny_policy(), tmp_path, _graph_envs(), progress=False)
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


@pytest.mark.integration
def test_evaluation_keeps_every_episode_and_reports_the_paired_gain(tmp_path):
    config = TrainConfig(iterations=1, **{**SMALL, "eval_tasks": 3}, eval_modes=("greedy",))
    trainer = Trainer(
        config, tiny_policy(), tmp_path, _graph_envs(), tensorboard=False, progress=False
    )
    rows = trainer.train()
    outcomes = trainer.logger.outcomes
    assert [(r["iteration"], r["split"], r["mode"]) for r in outcomes] == [
        (0, "test", "greedy")
    ] * 3 + [(1, "test", "greedy")] * 3
    assert list(trainer.eval_splits) == ["test"]  # Sokoban's panel: train and test
    assert [r["task_id"] for r in outcomes[:3]] == trainer.eval_splits["test"]
    # the tiny model never wins: no task changes, so the gain is 0, and Tango's interval for 3
    # unchanged tasks is symmetric about it (docs/learner-report.md)
    last = rows[-1]
    assert last["eval/greedy/success_gain"] == 0.0
    assert last["eval/greedy/success_gain_low"] == pytest.approx(-0.5615, abs=1e-4)
    assert last["eval/greedy/success_gain_high"] == pytest.approx(0.5615, abs=1e-4)
    assert not any(k.startswith("eval/sampled/") for r in rows for k in r)
    # a resumed run forgets outcomes logged after its checkpoint's iteration
    trainer.logger.truncate(0)
    assert len(trainer.logger.outcomes) == 3
    assert len((tmp_path / "eval_outcomes.jsonl").read_text().splitlines()) == 3
    trainer.close()


class _Recorder(TrainerCallback):
    """Records each hook call as (name, tag, iteration, what it was given, checkpoint on disk)."""

    def __init__(self, tag, calls):
        self.tag, self.calls = tag, calls

    def on_eval(self, trainer, results):
        self.calls.append(("eval", self.tag, trainer.iteration, dict(results), None))

    def on_iteration_end(self, trainer, metrics):
        saved = (trainer.out_dir / "checkpoint.pt").exists()
        self.calls.append(("end", self.tag, trainer.iteration, dict(metrics), saved))


@pytest.mark.integration
def test_callbacks_see_each_evaluation_and_each_logged_row_in_order(tmp_path):
    config = TrainConfig(iterations=1, **{**SMALL, "eval_tasks": 1}, eval_modes=("greedy",))
    calls = []
    callbacks = [_Recorder("a", calls), _Recorder("b", calls)]
    trainer = Trainer(
        config,
        tiny_policy(),
        tmp_path,
        _graph_envs(),
        tensorboard=False,
        progress=False,
        callbacks=callbacks,
    )
    rows = trainer.train()
    direct = trainer.evaluate({"test": trainer.eval_splits["test"]})
    trainer.close()
    assert [c[:3] for c in calls] == [
        ("eval", "a", 0),
        ("eval", "b", 0),
        ("eval", "a", 1),
        ("eval", "b", 1),
        ("end", "a", 1),
        ("end", "b", 1),
        ("eval", "a", 1),
        ("eval", "b", 1),
    ]
    first_eval, end = calls[0][3], calls[4]
    assert set(first_eval) == {k for k in rows[0] if k != "iteration"}
    assert end[4]  # the iteration's checkpoint is written before on_iteration_end
    logged = {k: v for k, v in rows[-1].items() if k != "iteration"}
    assert end[3].keys() == logged.keys() and end[3]["loss"] == logged["loss"]
    assert "eval/greedy/success_gain" in end[3]
    assert calls[-1][3] == direct


def _sokoban_with_test_splits(max_steps=2):
    """Sokoban whose panel has two test splits (and a validation split, not a test one)."""
    env = gym.make("agentenvs/Sokoban-v0", max_steps=max_steps)
    base = env.unwrapped.tasks
    test = list(base.ids("test")[:7])
    env.unwrapped.tasks = TaskPanel(
        {
            "train": base.ids("train"),
            "test_seen": test[:2],
            "valid": test[2:4],
            "test_unseen": test[4:],
        }
    )
    return env


@pytest.mark.integration
def test_every_test_split_is_evaluated_under_its_own_label(tmp_path):
    """Default ``eval_splits``: the panel's ``test_*`` splits, each capped at ``eval_tasks``, with
    metrics ``eval/<split>.<mode>/...``, outcome rows naming their split and a gain per label."""
    config = TrainConfig(iterations=1, **SMALL)
    envs = [lambda: GraphCreditWrapper(_sokoban_with_test_splits(), group_size=2)] * 2
    trainer = Trainer(config, tiny_policy(), tmp_path, envs, tensorboard=False, progress=False)
    panel = trainer.eval_envs[0].tasks
    unseen = list(panel.ids("test_unseen"))
    assert len(unseen) == 3  # capped at eval_tasks=2
    assert trainer.eval_splits == {
        "test_seen": list(panel.ids("test_seen")),
        "test_unseen": unseen[:2],
    }
    rows = trainer.train()
    trainer.close()
    modes = ("greedy", "sampled")
    labels = [f"{s}.{m}" for s in ("test_seen", "test_unseen") for m in modes]
    evals = {k.split("/")[1] for k in rows[-1] if k.startswith("eval/")}
    assert evals == set(labels)  # no bare eval/greedy/: no split is named test
    for label in labels:
        assert rows[0][f"eval/{label}/episode_len"] == 2.0  # the tiny model never wins
        assert rows[-1][f"eval/{label}/success_gain"] == 0.0
        assert f"eval/{label}/success_gain" not in rows[0]
    outcomes = trainer.logger.outcomes
    assert [(r["iteration"], r["split"], r["mode"], r["task_id"]) for r in outcomes] == [
        (i, split, mode, task)
        for i in (0, 1)
        for split, tasks in trainer.eval_splits.items()
        for mode in modes
        for task in tasks
    ]
    assert trainer.logger.outcome_values(1, "test_unseen", "sampled") == dict.fromkeys(
        unseen[:2], 0.0
    )
    lines = report_lines(rows, trainer.eval_splits, config.eval_modes)
    heads = [f"{s} success ({m}, 2 tasks)" for s in ("test_seen", "test_unseen") for m in modes]
    assert [line.split(":")[0] for line in lines] == heads
    gain = "gain +0.000 (95% interval -0.658 to +0.658)"  # Tango's, 2 unchanged tasks
    assert lines[-1].endswith(f"0.000 -> 0.000, {gain}; valid actions 0.000 -> 0.000, {gain}")


def _marked_episode(task: str, success: bool, marks: list[bool]) -> Trajectory:
    steps = [Step("o", "a", 0.0, extras={"goal_directed": m}) for m in marks]
    return Trajectory(task, "eval", steps, success)


def test_goal_directed_episodes_get_a_rate_a_paired_gain_and_a_report_line(tmp_path):
    """Where the env marks goal-directed steps, evaluation outcomes carry whether an episode took
    one, rollout metrics their share, and the report their change with its interval."""
    from agentenvs.learners.llm.evaluation import outcome_gains
    from agentenvs.learners.llm.metrics import MetricsLogger, rollout_metrics

    before = [_marked_episode(t, False, [False, False]) for t in "abcd"]
    after = [_marked_episode(t, t == "a", [False, t != "d"]) for t in "abcd"]
    assert rollout_metrics([after])["goal_directed_rate"] == 0.75
    assert "goal_directed_rate" not in rollout_metrics(
        [[Trajectory("a", "g", [Step("o", "a", 0)])]]
    )
    logger = MetricsLogger(tmp_path, tensorboard=False)
    for iteration, trajs in ((0, before), (3, after)):
        logger.log_outcomes(iteration, "test", "greedy", trajs)
        logger.log(iteration, rollout_metrics([trajs], prefix="eval/greedy/"))
    assert logger.outcome_values(3, "test", "greedy", "goal_directed") == {
        "a": 1.0,
        "b": 1.0,
        "c": 1.0,
        "d": 0.0,
    }
    gains = outcome_gains(logger, 3, ["test"], ["greedy"])
    assert gains["eval/greedy/goal_directed_gain"] == 0.75
    assert gains["eval/greedy/success_gain"] == 0.25
    assert gains["eval/greedy/valid_action_gain"] == 0.0
    rows = logger.rows[:-1] + [{**logger.rows[-1], **gains}]
    (line,) = report_lines(rows, {"test": list("abcd")}, ["greedy"])
    low, high = (
        gains["eval/greedy/goal_directed_gain_low"],
        gains["eval/greedy/goal_directed_gain_high"],
    )
    assert line.endswith(
        f"; goal-directed episodes 0.000 -> 0.750, gain +0.750 (95% interval {low:+.3f} to {high:+.3f})"
    )


def test_train_llm_eval_splits_flag():
    assert parse_args([]).config.eval_splits is None  # every test / test_* split
    args = parse_args(["--eval-splits", "test_seen,test_unseen"])
    assert args.config.eval_splits == ("test_seen", "test_unseen")


def test_train_llm_refuses_rewards_for_advantages(capsys):
    """advantage='rewards' is for a learner with a critic (CreditPPO); this one has none."""
    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--credit", "spa", "--credit-config", '{"advantage": "rewards"}'])
    assert exit_info.value.code == 2
    assert "needs a learner with a critic" in capsys.readouterr().err
    assert parse_args(["--credit", "spa"]).credit_config.advantage == "group_relative"


@pytest.mark.integration
def test_eval_splits_names_the_splits_and_test_tasks_is_the_test_split(tmp_path):
    envs = [lambda: GraphCreditWrapper(_sokoban_with_test_splits(), group_size=2)] * 2
    config = TrainConfig(eval_splits=("valid", "train"), eval_modes=("greedy",), **SMALL)
    trainer = Trainer(
        config, tiny_policy(), tmp_path / "a", envs, tensorboard=False, progress=False
    )
    assert list(trainer.eval_splits) == ["valid", "train"]
    metrics = trainer.evaluate()
    trainer.close()
    assert {k for k in metrics if k.endswith("/success_rate")} == {
        "eval/valid.greedy/success_rate",
        "eval/train.greedy/success_rate",
    }
    config = TrainConfig(test_tasks=["seed-65536"], eval_splits=("valid",), **SMALL)
    trainer = Trainer(
        config, tiny_policy(), tmp_path / "b", envs, tensorboard=False, progress=False
    )
    assert trainer.eval_splits == {"test": ["seed-65536"]}
    trainer.close()
    with pytest.raises(KeyError, match="unknown split 'nope'"):
        Trainer(TrainConfig(eval_splits=("nope",), **SMALL), tiny_policy(), tmp_path / "c", envs)
    with pytest.raises(ValueError, match="eval_splits must be distinct"):
        TrainConfig(eval_splits=("test", "test"))


@pytest.mark.integration
def test_one_iteration_on_a_grouped_vector_env(tmp_path):
    envs = VectorCreditWrapper(
        agentenvs.make_group_vec_env("agentenvs/Sokoban-v0", 2, 2, max_steps=2), "graph"
    )
    config = TrainConfig(iterations=1, **SMALL)
    trainer = Trainer(config, tiny_policy(), tmp_path, envs, tensorboard=False, progress=False)
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


def _run(tmp_path, iterations, resume_from=None, **overrides):
    config = TrainConfig(iterations=iterations, seed=3, kl_coef=0.05, **{**SMALL, **overrides})
    envs = [lambda: UserCredit(gym.make("agentenvs/Sokoban-v0", max_steps=2))] * 2
    trainer = Trainer(config, tiny_policy(), tmp_path, envs, tensorboard=False, progress=False)
    if resume_from is not None:
        trainer.load_checkpoint(resume_from)
    losses = [trainer.train_iteration()["loss"] for _ in range(iterations - trainer.iteration)]
    trainer.close()
    return trainer, losses


@pytest.mark.parametrize(
    "precision", [{}, {"weight_dtype": "float16"}], ids=["fp32", "fp16-masters-scaler"]
)
def test_user_wrapper_trains_and_resume_reproduces_the_next_loss_bit_exactly(tmp_path, precision):
    """Float16 weights: the checkpoint carries the fp32 masters and the loss scaler's state."""
    _, straight = _run(tmp_path / "a", 2, **precision)
    first, _ = _run(tmp_path / "b", 1, **precision)
    ckpt = first.save_checkpoint()
    resumed, after = _run(tmp_path / "c", 2, resume_from=ckpt, **precision)
    assert straight[1] != 0.0
    assert after == [straight[1]]
    assert resumed.cursor.position == 4 and resumed.iteration == 2
    if precision:
        state = first.precision.state_dict()
        assert state["masters"][0].dtype == torch.float32 and state["scaler"]["scale"] > 1


def _spa_envs(state, config, n=2):
    """``n`` SPA-credited envs that share one credit state (one estimator for the run)."""
    return [
        lambda: ProgressCreditWrapper(
            gym.make("agentenvs/Sokoban-v0", max_steps=2), group_size=2, config=config, state=state
        )
    ] * n


@pytest.mark.integration
def test_checkpoint_saves_and_restores_the_credit_state(tmp_path):
    """The trainer saves each credit wrapper's state (here one, shared) with the run and
    restores it into the resumed run's fresh state, through its generic state_dict()."""
    spa = SPAConfig(estimator="tabular", refit_every=1)
    config = TrainConfig(iterations=1, seed=3, **SMALL)
    shared = CreditState()
    first = Trainer(config, tiny_policy(), tmp_path / "a", _spa_envs(shared, spa),
                    tensorboard=False, progress=False)  # fmt: skip
    first.train_iteration()
    path = first.save_checkpoint()
    first.close()
    trained = shared.value
    assert trained.buffer.fits == 2 and len(trained.buffer.items) == 4
    fresh = CreditState()
    again = Trainer(config, tiny_policy(), tmp_path / "b", _spa_envs(fresh, spa),
                    tensorboard=False, progress=False)  # fmt: skip
    assert again.source.credit_states() == [fresh]
    again.load_checkpoint(path)
    restored = fresh.get(METHODS["spa"], spa)
    assert restored.estimator.weights == trained.estimator.weights
    assert restored.buffer.fits == 2 and len(restored.buffer.items) == 4
    again.close()
    lone = Trainer(config, tiny_policy(), tmp_path / "c", _graph_envs(n=2),
                   tensorboard=False, progress=False)  # fmt: skip
    with pytest.raises(ValueError, match="holds 1 credit state"):
        lone.load_checkpoint(path)  # two envs, two states: not the saved run's envs
    lone.close()


@pytest.mark.integration
def test_user_env_trains_with_the_generic_prompt(tmp_path):
    gym.register("test/Echo-v0", entry_point=EchoEnv)
    try:
        config = TrainConfig(
            iterations=1, train_tasks=["apple", "pear"], test_tasks=["plum"], **SMALL
        )
        envs = [lambda: GraphCreditWrapper(gym.make("test/Echo-v0"), group_size=2)] * 2
        trainer = Trainer(config, tiny_policy(), tmp_path, envs, tensorboard=False, progress=False)
        assert "Say apple." in trainer.prompts[0].render(*_fresh("Say apple."))
        rows = trainer.train()
        trainer.close()
    finally:
        del gym.registry["test/Echo-v0"]
    assert rows[-1]["groups"] == 2.0 and rows[-1]["samples"] == 8.0
    assert rows[-1]["eval/sampled/episode_len"] == 2.0


def test_format_warm_start_needs_admissible_actions():
    from agentenvs.learners.llm.warm_start import supervised_warm_start

    with pytest.raises(ValueError, match="admissible_actions"):
        supervised_warm_start(tiny_policy(), EchoEnv(), ["apple"], steps=1)


def _fresh(obs):
    from agentenvs.core import EpisodeMemory

    return EpisodeMemory(), obs, {}


@pytest.mark.integration
def test_lora_trains_only_the_adapter(tmp_path):
    pytest.importorskip("peft")
    from peft import LoraConfig, get_peft_model

    policy = tiny_policy()
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


@pytest.mark.integration
def test_the_sync_check_shows_a_stale_backend(tmp_path):
    import copy

    config = TrainConfig(iterations=2, seed=3, **SMALL)
    envs = [lambda: UserCredit(gym.make("agentenvs/Sokoban-v0", max_steps=2))] * 2
    trainer = Trainer(config, tiny_policy(), tmp_path, envs, tensorboard=False, progress=False)
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


@pytest.mark.integration
def test_per_env_defaults_come_from_the_env(tmp_path):
    trainer = Trainer(
        TrainConfig(prompt_style="compact"), tiny_policy(), tmp_path, _graph_envs(1), progress=False
    )
    assert trainer.max_new_tokens == trainer.prompts[0].max_new_tokens == 40
    trainer.close()
    trainer = Trainer(
        TrainConfig(prompt_style="reference"),
        tiny_policy(),
        tmp_path,
        _graph_envs(1),
        progress=False,
    )
    assert trainer.max_new_tokens == 512
    trainer.close()


@pytest.mark.integration
def test_stop_at_action_end_reaches_the_sampler(tmp_path):
    for flag in (True, False):
        config = TrainConfig(iterations=1, stop_at_action_end=flag, **SMALL)
        trainer = Trainer(
            config,
            tiny_policy(),
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
    """The (clipped) accumulated gradient the optimizer steps with (the update frees it after the
    step), with lr 0 (weights unchanged); [] when no step is taken."""
    settings = {**SMALL, "lr": 0.0, "kl_coef": 0.05, "recompute_old_logprobs": True}
    config = TrainConfig(iterations=1, **{**settings, "eval_tasks": 0, **overrides})
    trainer = Trainer(
        config, tiny_policy(), tmp_path, _graph_envs(1), tensorboard=False, progress=False
    )
    seen = []
    params = trainer.precision.optimizer_params
    trainer.optimizer.register_step_pre_hook(
        lambda *_: seen.append([p.grad.clone() for p in params if p.grad is not None])
    )
    stats = trainer.update(steps)
    trainer.close()
    assert all(p.grad is None for p in trainer.params)
    return (seen[-1] if seen else []), stats


def test_one_update_moves_log_probs_in_the_advantages_direction(tmp_path):
    """On a fixed batch (advantages +1, -2, +5), one PPO update raises sum_i A_i * log pi(y_i)
    (each response's summed token log-prob): the policy-gradient direction, not its opposite."""
    steps = _hand_steps()
    policy = tiny_policy()

    def score():
        batch = collate(
            [s.extras["prompt_ids"].tolist() for s in steps],
            [s.extras["response_ids"].tolist() for s in steps],
            policy.pad_id,
        )
        with torch.no_grad():
            logp = token_logprobs(response_logits(policy.model, batch), batch.response_ids)
        return (logp * batch.response_mask).sum(-1)

    before = score()
    config = TrainConfig(
        iterations=1, **{**SMALL, "eval_tasks": 0, "kl_coef": 0.0, "recompute_old_logprobs": True}
    )
    trainer = Trainer(config, policy, tmp_path, _graph_envs(1), tensorboard=False, progress=False)
    stats = trainer.update(steps)
    trainer.close()
    change = score() - before
    adv = torch.tensor([s.advantage for s in steps])
    assert stats["update_steps"] == 1.0
    assert float((adv * change).sum()) > 0
    assert change[2] > 0 and change[1] < 0  # the largest advantage up, the negative one down


def test_warmup_ramps_the_learning_rate_per_optimizer_step_and_resumes(tmp_path):
    """``warmup_steps`` 4 with 2 mini-batches: the first update steps at lr/4 and lr/2, the
    second at 3lr/4 and lr (the warmup counts optimizer steps across updates); a checkpoint
    taken between them resumes at 3lr/4."""
    settings = {**SMALL, "eval_tasks": 0, "warmup_steps": 4, "mini_batches": 2}
    config = TrainConfig(iterations=1, **settings)
    trainer = Trainer(
        config, tiny_policy(), tmp_path, _graph_envs(1), tensorboard=False, progress=False
    )
    seen = []
    trainer.optimizer.register_step_pre_hook(lambda opt, *_: seen.append(opt.param_groups[0]["lr"]))
    trainer.update(_hand_steps())
    path = trainer.save_checkpoint()
    trainer.update(_hand_steps())
    trainer.close()
    lr = SMALL["lr"]
    assert seen == pytest.approx([lr / 4, lr / 2, 3 * lr / 4, lr])
    again = Trainer(
        config, tiny_policy(), tmp_path / "b", _graph_envs(1), tensorboard=False, progress=False
    )
    again.load_checkpoint(path)
    assert again.optimizer.param_groups[0]["lr"] == pytest.approx(3 * lr / 4)
    again.close()


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


def _trainer(tmp_path, policy=None, **overrides):
    settings = {**SMALL, "kl_coef": 0.05, "recompute_old_logprobs": True, "eval_tasks": 0}
    config = TrainConfig(iterations=1, **{**settings, **overrides})
    return Trainer(
        config, policy or tiny_policy(), tmp_path, _graph_envs(1), tensorboard=False, progress=False
    )


def _params_after_update(tmp_path, **overrides):
    trainer = _trainer(tmp_path, **overrides)
    stats = trainer.update(_hand_steps())
    trainer.close()
    return [p.detach().float().clone() for p in trainer.params], stats


def test_bf16_autocast_on_cpu_gives_a_finite_loss_close_to_fp32(tmp_path):
    fp32, plain = _update_grads(tmp_path / "a", _hand_steps(), autocast="none")
    bf16, mixed = _update_grads(tmp_path / "b", _hand_steps(), autocast="bfloat16")
    assert math.isfinite(mixed["loss"]) and mixed["loss"] == pytest.approx(plain["loss"], rel=0.05)
    # the logits (so the entropy) come out of bf16 matmuls: close, not equal
    assert mixed["entropy"] != plain["entropy"]
    assert mixed["entropy"] == pytest.approx(plain["entropy"], rel=0.02)
    cos = torch.nn.functional.cosine_similarity(
        torch.cat([g.flatten() for g in fp32]), torch.cat([g.flatten() for g in bf16]), dim=0
    )
    assert cos > 0.95 and any(not torch.equal(a, b) for a, b in zip(fp32, bf16, strict=True))


@pytest.mark.integration
def test_bf16_weights_with_fp32_masters_step_the_masters(tmp_path):
    trainer = _trainer(tmp_path, weight_dtype="bfloat16", lr=1e-2)
    before = [p.detach().clone() for p in trainer.params]
    masters = trainer.precision.optimizer_params
    stats = trainer.update(_hand_steps())
    trainer.close()
    assert stats["update_steps"] == 1.0 and stats["skipped_steps"] == 0.0
    assert all(p.dtype == torch.bfloat16 for p in trainer.policy.model.parameters())
    assert trainer.ref_model is not None and next(trainer.ref_model.parameters()).dtype == (
        torch.bfloat16
    )
    assert all(m.dtype == torch.float32 for m in masters)
    assert all(s["exp_avg"].dtype == torch.float32 for s in trainer.optimizer.state.values())
    assert any(not torch.equal(a, p) for a, p in zip(before, trainer.params, strict=True))
    # the model holds its masters, rounded to bf16; the masters keep what bf16 cannot
    assert all(torch.equal(m.bfloat16(), p) for m, p in zip(masters, trainer.params, strict=True))
    assert any(not torch.equal(m, p.float()) for m, p in zip(masters, trainer.params, strict=True))
    plain = _trainer(tmp_path, weight_dtype="bfloat16", master_weights=False)
    assert plain.precision.optimizer_params[0] is plain.params[0]
    plain.close()


@pytest.mark.integration
def test_fp16_loss_scaler_skips_a_step_on_inf_gradients(tmp_path):
    trainer = _trainer(tmp_path, weight_dtype="float16", lr=1e-2)
    scale = trainer.precision.scaler.get_scale()
    before = [p.detach().clone() for p in trainer.params]
    hook = trainer.params[0].register_hook(lambda g: torch.full_like(g, math.inf))
    skipped = trainer.update(_hand_steps())
    assert skipped["skipped_steps"] == 1.0 and skipped["update_steps"] == 0.0
    assert all(torch.equal(a, p) for a, p in zip(before, trainer.params, strict=True))
    assert trainer.precision.scaler.get_scale() == scale / 2
    hook.remove()
    # at scale 2^15 the tiny model's fp16 gradients overflow for real: the scaler halves the
    # scale after each skipped step until one is taken
    for _ in range(4):
        scale = trainer.precision.scaler.get_scale()
        taken = trainer.update(_hand_steps())
        if taken["update_steps"]:
            break
        assert taken["skipped_steps"] == 1.0 and trainer.precision.scaler.get_scale() == scale / 2
    trainer.close()
    assert taken["skipped_steps"] == 0.0 and taken["update_steps"] == 1.0
    assert math.isfinite(taken["grad_norm"]) and taken["grad_norm"] > 0
    assert any(not torch.equal(a, p) for a, p in zip(before, trainer.params, strict=True))
    # fp32 weights with fp16 autocast (CPU included) scale with torch's GradScaler
    autocast = _trainer(tmp_path, autocast="float16")
    assert autocast.precision.scaler is not None and autocast.precision.masters is None
    stats = [autocast.update(_hand_steps()) for _ in range(3)]
    autocast.close()
    assert sum(s["update_steps"] for s in stats) > 0 and sum(s["skipped_steps"] for s in stats) > 0


def test_gradient_checkpointing_gives_the_same_gradients(tmp_path):
    steps = _hand_steps()
    for step in steps:  # a long shared prefix: prefix sharing is switched off under checkpointing
        step.extras["prompt_ids"] = np.concatenate([np.arange(30, 50), step.extras["prompt_ids"]])
    plain, _ = _update_grads(tmp_path / "a", steps, min_shared_prefix=4)
    ckpt, _ = _update_grads(tmp_path / "b", steps, gradient_checkpointing=True)
    assert len(plain) == len(ckpt) > 0
    for a, b in zip(plain, ckpt, strict=True):
        assert torch.allclose(a, b, atol=1e-6)


@pytest.mark.integration
def test_gradient_checkpointing_with_lora(tmp_path):
    peft = pytest.importorskip("peft")
    grads = []
    for ckpt in (False, True):
        policy = tiny_policy()
        policy.model = peft.get_peft_model(
            policy.model, peft.LoraConfig(r=2, target_modules=["q_proj", "v_proj"])
        )
        trainer = _trainer(tmp_path, policy, gradient_checkpointing=ckpt, lr=0.0)
        seen = []
        params = trainer.params
        trainer.optimizer.register_step_pre_hook(
            lambda *_, params=params, seen=seen: seen.append([p.grad.clone() for p in params])
        )
        trainer.update(_hand_steps())
        trainer.close()
        grads.append(seen[0])
    assert policy.model.base_model.model.model.layers[0].gradient_checkpointing
    assert any(g.abs().sum() > 0 for g in grads[0])  # LoRA B starts at zero: A gets none
    for a, b in zip(*grads, strict=True):
        assert torch.allclose(a, b, atol=1e-6)


@pytest.mark.integration
def test_token_budget_micro_batches_give_the_one_batch_update(tmp_path):
    """Prompts of 4, 2, 3 and responses of 3, 1, 2 tokens: a budget of 10 padded tokens runs
    [1, 2] (2 x 5) then [0] (7); a budget of 5 runs each alone, sample 0 (7 > 5) too. Either way
    the optimizer step equals that of one micro-batch of all three."""
    trainer = _trainer(tmp_path / "a", micro_batch_tokens=10)
    assert trainer.updater._micro_batches(_hand_steps(), [0, 1, 2]) == [[1, 2], [0]]
    trainer.close()
    one, _ = _params_after_update(tmp_path / "b", micro_batch_size=8)
    before = [p.detach().float() for p in tiny_policy().model.parameters() if p.requires_grad]
    assert any(not torch.equal(a, b) for a, b in zip(before, one, strict=True))
    grads, _ = _update_grads(tmp_path / "d", _hand_steps(), micro_batch_size=8)
    for budget in (10, 5):
        split, stats = _params_after_update(tmp_path / f"c{budget}", micro_batch_tokens=budget)
        assert stats["update_steps"] == 1.0
        # AdamW's first step is about lr x sign(gradient): a gradient at rounding level may flip
        # one element by ~lr; a wrong update moves many by lr (1e-3)
        for a, b in zip(one, split, strict=True):
            assert torch.allclose(a, b, atol=1e-4)
        budget_grads, _ = _update_grads(
            tmp_path / f"e{budget}", _hand_steps(), micro_batch_tokens=budget
        )
        for a, b in zip(grads, budget_grads, strict=True):
            assert torch.allclose(a, b, atol=1e-6)


@pytest.mark.integration
@pytest.mark.parametrize("offload", [False, True])
def test_reference_logprobs_come_from_one_pass_per_update(tmp_path, offload):
    trainer = _trainer(
        tmp_path, ppo_epochs=2, mini_batches=2, micro_batch_size=1, ref_offload=offload
    )
    rows = []
    trainer.ref_model.register_forward_hook(
        lambda m, a, kw, out: rows.append(kw["input_ids"].shape[0]), with_kwargs=True
    )
    steps = _hand_steps()
    stats = trainer.update(steps)
    ref = trainer.updater.reference_logprobs(steps, [0, 1, 2], 1.0)
    trainer.close()
    assert stats["update_steps"] == 4.0 and stats["kl"] > 0
    assert sum(rows) == 2 * 3  # one row per sample in the update, and again just above
    assert next(trainer.ref_model.parameters()).device.type == "cpu"
    for i, step in enumerate(steps):  # the same as a forward of the sample alone
        batch = collate(
            [step.extras["prompt_ids"].tolist()], [step.extras["response_ids"].tolist()], 0
        )
        with torch.no_grad():
            alone = token_logprobs(response_logits(trainer.ref_model, batch), batch.response_ids)
        assert np.allclose(ref[i], alone[0].numpy(), atol=1e-5)


@pytest.mark.integration
def test_memory_warning_fires_only_when_the_plan_does_not_fit(tmp_path, monkeypatch):
    import agentenvs.learners.llm.memcheck as memcheck

    for budget, expected in ((2**20, True), (2**40, False)):
        monkeypatch.setattr(memcheck, "device_memory", lambda device, b=budget: b)
        trainer = _trainer(tmp_path)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            trainer.update(_hand_steps())
            trainer.update(_hand_steps())  # checked once
        trainer.close()
        fired = [w for w in caught if "will likely not fit" in str(w.message)]
        assert len(fired) == int(expected)
        if expected:
            assert issubclass(fired[0].category, UserWarning)
            assert "peak phase" in str(fired[0].message) and "gradient_checkpointing" in str(
                fired[0].message
            )
    monkeypatch.setattr(memcheck, "device_memory", lambda device: None)  # CPU: not checked
    assert (
        memcheck.warn_if_unfit(
            TrainConfig(), tiny_policy().model, "cpu", seq_len=8, response_len=4, mini_batch_size=1
        )
        is None
    )


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
    policy = tiny_policy()
    policy.model.to("cuda")
    policy.device = "cuda"
    config = TrainConfig(iterations=1, **SMALL)
    envs = [lambda: UserCredit(gym.make("agentenvs/Sokoban-v0", max_steps=2))] * 2
    trainer = Trainer(config, policy, tmp_path, envs, tensorboard=False, progress=False)
    metrics = trainer.train_iteration()
    trainer.close()
    assert metrics["samples"] > 0 and torch.isfinite(torch.tensor(metrics["loss"]))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize(
    "precision",
    [
        {"weight_dtype": "bfloat16", "gradient_checkpointing": True},
        {"weight_dtype": "bfloat16", "master_weights": False, "ref_offload": True},
        {"autocast": "float16", "micro_batch_tokens": 256},
    ],
    ids=["bf16-masters-ckpt", "bf16-plain-ref-offload", "fp16-autocast-token-budget"],
)
def test_cuda_iteration_with_low_precision_and_checkpointing(tmp_path, precision):
    policy = tiny_policy()
    policy.model.to("cuda")
    policy.device = "cuda"
    config = TrainConfig(iterations=1, kl_coef=0.05, **{**SMALL, **precision})
    envs = [lambda: UserCredit(gym.make("agentenvs/Sokoban-v0", max_steps=2))] * 2
    trainer = Trainer(config, policy, tmp_path, envs, tensorboard=False, progress=False)
    metrics = trainer.train_iteration()
    trainer.close()
    assert metrics["samples"] > 0 and math.isfinite(metrics["kl"])
    assert metrics["update_steps"] + metrics["skipped_steps"] == 1.0
    if "ref_offload" in precision:
        assert next(trainer.ref_model.parameters()).device.type == "cpu"


def test_report_lines_add_the_change_from_the_untrained_policy():
    """With ``untrained`` metrics (and their gains to the last evaluation), each split and decoding
    gets a second line from the untrained policy to the trained one."""
    first = {"eval/greedy/success_rate": 0.0, "eval/greedy/valid_action_rate": 0.5}
    last = {"eval/greedy/success_rate": 0.25, "eval/greedy/valid_action_rate": 1.0}
    untrained = {
        "eval/greedy/success_rate": 0.0,
        "eval/greedy/valid_action_rate": 0.0,
        **{
            f"eval/greedy/valid_action_gain{end}": v
            for end, v in (("", 1.0), ("_low", 0.9), ("_high", 1.0))
        },
    }
    lines = report_lines([first, last], {"test": ["a", "b", "c", "d"]}, ["greedy"], untrained)
    assert lines == [
        "test success (greedy, 4 tasks): 0.000 -> 0.250; valid actions 0.500 -> 1.000",
        "test success (greedy, 4 tasks), untrained -> trained: 0.000 -> 0.250; valid actions "
        "0.000 -> 1.000, gain +1.000 (95% interval +0.900 to +1.000)",
    ]


@pytest.mark.integration
def test_eval_untrained_adds_its_lines_and_leaves_the_run_unchanged(tmp_path, capsys):
    """``--eval-untrained`` evaluates before the warm start (outcomes in ``--out/untrained``),
    prints the untrained -> trained lines, and the run's own lines are those of a run without it
    (the extra evaluation draws from a forked RNG)."""
    from agentenvs.cli.train import main

    flags = [
        "--iterations",
        "1",
        "--warm-start",
        "format",
        "--warm-start-steps",
        "20",
        "--groups",
        "2",
        "--group-size",
        "2",
    ]
    flags += ["--eval-tasks", "4", "--no-progress", "--export", "none", "--threads", "1"]
    assert main([*flags, "--out", str(tmp_path / "plain")]) == 0
    plain = capsys.readouterr().out.splitlines()
    assert main([*flags, "--eval-untrained", "--out", str(tmp_path / "with")]) == 0
    lines = capsys.readouterr().out.splitlines()
    untrained = [line for line in lines if "untrained -> trained" in line]
    assert [line.split(",")[0] for line in untrained] == [
        "test success (greedy",
        "test success (sampled",
    ]
    assert all("valid actions 0.000 -> " in line and "95% interval" in line for line in untrained)
    assert assert_intervals_in_range(lines) == 8  # success and validity, 4 lines
    ours = [line for line in lines if line.startswith("test success (") and line not in untrained]
    assert ours == [line for line in plain if line.startswith("test success (")]
    outcomes = (tmp_path / "with" / "untrained" / "eval_outcomes.jsonl").read_text().splitlines()
    assert len(outcomes) == 8  # 4 tasks x 2 decodings, iteration 0
