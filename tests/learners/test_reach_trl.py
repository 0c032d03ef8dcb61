"""Our credit inside the real TRL ``GRPOTrainer`` (``agentenvs.learners.trl``; run in the reach venv by
scripts/test_reach.sh).

The quality bars of docs/integrations.md: the trainer trains the tiny model for 3 steps on Sokoban
with GraphGPO credit on CPU; two steps of one episode with different GraphGPO advantages carry
different per-token advantages in the batch TRL's loss reads (and the loss depends on them); our
``grpo`` through this path equals TRL's own GRPO advantages on the same batch, within 1e-6. Reward
functions, ``environment_factory``, vLLM and more than one process are refused with one-line
errors; a reward wrapper inside the credit wrapper is what shapes the advantages; prompt datasets
(text or chat messages) train through ``task_from_prompt``.

The tiny model starts from a short format-only warm start (``agentenvs.learners.llm.warm_start``), so some
actions are valid and some episodes win: a random model never writes an action and every
advantage would be 0.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.reach, pytest.mark.usefixtures("one_torch_thread")]
trl = pytest.importorskip("trl")
torch = pytest.importorskip("torch")

import gymnasium as gym  # noqa: E402
from agentenvs.learners import trl as ours  # noqa: E402
from agentenvs.learners.llm.policy import Policy  # noqa: E402
from agentenvs.learners.llm.tiny import build_tiny_model, build_tiny_tokenizer  # noqa: E402
from agentenvs.learners.llm.warm_start import supervised_warm_start  # noqa: E402
from agentenvs.wrappers import CreditWrapper, GraphCreditWrapper  # noqa: E402
from datasets import Dataset  # noqa: E402

import agentenvs  # noqa: E402, F401  (registers the envs)

G = 8  # episodes per group (num_generations)
STYLE = {"prompt_style": "compact", "history_length": 0}  # each row already holds the history


def sokoban() -> gym.Env:
    """One-push levels, 3 moves: a valid random move often wins."""
    return gym.make("agentenvs/Sokoban-v0", max_solution_steps=1, max_steps=3)


@pytest.fixture(scope="module")
def warm():
    """The tiny model after a format-only warm start (its state dict) and its tokenizer."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # module fixtures run before one_torch_thread
    tok = build_tiny_tokenizer()
    model = build_tiny_model(tok)
    env = sokoban()
    supervised_warm_start(
        Policy(model, tok), env, env.unwrapped.tasks.ids("train"), steps=60, max_states=128, **STYLE
    )
    env.close()
    torch.set_num_threads(threads)
    return {k: v.clone() for k, v in model.state_dict().items()}, tok


def config(tmp_path, max_steps: int = 1, **overrides) -> trl.GRPOConfig:
    """The tests' TRL config: 2 groups of ``G`` a step, 24 tokens a step's response."""
    return trl.GRPOConfig(
        output_dir=str(tmp_path),
        num_generations=G,
        per_device_train_batch_size=2 * G,  # two groups (tasks) per step
        max_steps=max_steps,
        max_completion_length=24,
        learning_rate=1e-3,
        report_to=[],
        logging_steps=1,
        save_strategy="no",
        use_cpu=True,
        seed=0,
        **overrides,
    )


def trainer(warm, tmp_path, env_fn, max_steps: int = 1, **kwargs) -> ours.CreditGRPOTrainer:
    """A :class:`CreditGRPOTrainer` of the warm tiny model (``kwargs``: the trainer's)."""
    state, tok = warm
    model = build_tiny_model(tok)
    model.load_state_dict(state)
    args = config(tmp_path, max_steps)
    return ours.CreditGRPOTrainer(model, env_fn, args, processing_class=tok, **STYLE, **kwargs)


def batch(t: ours.CreditGRPOTrainer) -> tuple[list[dict], dict]:
    """One generation batch as TRL builds it (the dataloader's inputs, TRL's output)."""
    inputs = next(iter(t.get_train_dataloader()))
    return inputs, t._generate_and_score_completions(inputs)


def test_graphgpo_trains_the_tiny_model_3_steps(warm, tmp_path):
    t = trainer(warm, tmp_path, lambda: GraphCreditWrapper(sokoban(), group_size=G), 3)
    before = [p.detach().clone() for p in t.model.parameters()]
    t.train()
    losses = [row["loss"] for row in t.state.log_history if "loss" in row]
    assert t.state.global_step == 3 and len(losses) == 3
    assert any(loss != 0 for loss in losses)
    assert any(not torch.equal(a, b) for a, b in zip(before, t.model.parameters(), strict=True))
    assert [len(g) for g in t.last_groups] == [G, G]


def test_steps_of_one_episode_get_their_own_advantage_in_the_loss(warm, tmp_path):
    t = trainer(warm, tmp_path, lambda: GraphCreditWrapper(sokoban(), group_size=G))
    inputs, out = batch(t)
    rows = [traj for group in t.last_groups for traj in group]
    adv, mask = out["advantages"], out["tool_mask"] * out["completion_mask"]
    assert adv.shape == out["completion_ids"].shape
    found = 0
    for i, traj in enumerate(rows):
        row = ours.episode_row(traj)
        for step in traj.steps:  # each step's response tokens hold its own advantage
            lo = len(step.extras["prompt_ids"]) - len(row["prompt_ids"])
            hi = lo + len(step.extras["response_ids"])
            assert torch.allclose(adv[i, lo:hi], torch.tensor(step.advantage, dtype=torch.float32))
            assert mask[i, lo:hi].all()
        found += len({round(s.advantage, 6) for s in traj.steps}) > 1
    assert found, "no episode with two differently credited steps in this batch"
    assert (adv * (1 - mask)).abs().sum() == 0  # env tokens and padding carry nothing
    # TRL's loss reads the per-token values: each row's mean advantage instead (same loss value
    # on policy, where the ratio is 1) moves the weights otherwise
    flat = dict(out, advantages=(adv * mask).sum(1, keepdim=True) / mask.sum(1, keepdim=True))
    assert not torch.allclose(gradient(t, out), gradient(t, flat))


def gradient(t: ours.CreditGRPOTrainer, inputs: dict) -> torch.Tensor:
    """The gradient of TRL's loss on ``inputs`` (all parameters, flattened)."""
    t.model.zero_grad()
    t.compute_loss(t.model, inputs).backward()
    return torch.cat([p.grad.flatten() for p in t.model.parameters() if p.grad is not None])


def test_grpo_through_the_adapter_equals_trls_grpo(warm, tmp_path):
    t = trainer(
        warm, tmp_path, lambda: CreditWrapper(sokoban(), "grpo", ours.TRL_GRPO, group_size=G)
    )
    _, out = batch(t)
    theirs = torch.tensor(list(t._logs["advantages"]))  # TRL's own, from the episode returns
    rows = [traj for group in t.last_groups for traj in group]
    returns = torch.tensor([traj.total_return for traj in rows])
    assert returns.view(-1, G).std(1).max() > 0  # some group is not uniform
    mask = (out["tool_mask"] * out["completion_mask"]).bool()
    for i in range(len(rows)):
        assert torch.allclose(out["advantages"][i][mask[i]], theirs[i], rtol=0, atol=1e-6)


def graphgpo() -> gym.Env:
    return GraphCreditWrapper(sokoban(), group_size=G)


class Negated(gym.RewardWrapper):
    """A shaped reward (the env's, negated): what docs/integrations.md#trl says to use instead
    of TRL reward functions, inside the credit wrapper."""

    def reward(self, reward: float) -> float:
        return -reward


def test_a_reward_wrapper_inside_the_credit_wrapper_shapes_the_advantages(warm, tmp_path):
    t = trainer(
        warm,
        tmp_path,
        lambda: CreditWrapper(Negated(sokoban()), "grpo", ours.TRL_GRPO, group_size=G),
    )
    _, out = batch(t)
    mask = (out["tool_mask"] * out["completion_mask"]).bool()
    rows = [traj for group in t.last_groups for traj in group]
    adv = [out["advantages"][i][mask[i]].mean().item() for i in range(len(rows))]
    mixed = 0
    for k in range(len(t.last_groups)):  # in a group with wins and losses, wins now score lowest
        won = [adv[i] for i in range(k * G, (k + 1) * G) if rows[i].success]
        lost = [adv[i] for i in range(k * G, (k + 1) * G) if not rows[i].success]
        if won and lost:
            mixed += 1
            assert max(won) < 0 < max(lost) and max(won) < min(lost)
    assert mixed, "no group with both wins and losses in this batch"


def zero_reward(prompts: list, completions: list, **_) -> list[float]:
    """A TRL reward function (the kind CreditGRPOTrainer refuses)."""
    return [0.0] * len(prompts)


@pytest.mark.parametrize(
    ("name", "kwargs", "overrides", "says"),
    [
        ("reward_funcs", {"reward_funcs": [zero_reward]}, {}, "RewardWrapper inside the credit"),
        ("environment_factory", {"environment_factory": sokoban}, {}, "TRL's tool loop has no"),
        ("use_vllm", {}, {"use_vllm": True}, "set use_vllm=False"),
    ],
)
def test_what_does_not_compose_is_refused_in_one_line(tmp_path, name, kwargs, overrides, says):
    tok = build_tiny_tokenizer()
    args = config(tmp_path, **overrides)  # the real GRPOConfig (use_vllm needs no vllm here)
    with pytest.raises(ValueError, match=says) as raised:
        ours.CreditGRPOTrainer(
            build_tiny_model(tok), graphgpo, args, processing_class=tok, **kwargs
        )
    assert "\n" not in str(raised.value) and name in str(raised.value)


def test_more_than_one_process_is_refused_before_the_envs_are_made(tmp_path, monkeypatch):
    tok = build_tiny_tokenizer()
    args = config(tmp_path)
    monkeypatch.setattr(type(args), "world_size", property(lambda self: 2))  # accelerate launch
    made = []

    def env_fn() -> gym.Env:
        made.append(1)
        return graphgpo()

    with pytest.raises(ValueError, match="one process, not 2: TRL's sampler may split a group"):
        ours.CreditGRPOTrainer(build_tiny_model(tok), env_fn, args, processing_class=tok)
    assert not made


LEVELS = ("Push the box onto the target, level A.", "Push the box onto the target, level B.")


def text_of(prompt) -> str:
    """A dataset prompt's text: itself, or its last chat message's content."""
    return prompt if isinstance(prompt, str) else prompt[-1]["content"]


@pytest.mark.parametrize("chat", [False, True], ids=["text", "chat"])
def test_a_prompt_dataset_trains_through_task_from_prompt(warm, tmp_path, chat):
    ids = sokoban().unwrapped.tasks.ids("train")
    task = {LEVELS[0]: ids[0], LEVELS[1]: ids[1]}
    rows = [[{"role": "user", "content": p}] if chat else p for p in LEVELS]
    t = trainer(
        warm,
        tmp_path,
        graphgpo,
        train_dataset=Dataset.from_dict({"prompt": rows}),
        task_from_prompt=lambda p: task[text_of(p)],
    )
    t.train()
    assert t.state.global_step == 1
    assert sorted(g[0].task_id for g in t.last_groups) == sorted(task.values())


def test_the_envs_task_from_prompt_method_is_the_default_hook(warm, tmp_path):
    ids = sokoban().unwrapped.tasks.ids("train")

    def env_fn() -> gym.Env:
        env = graphgpo()
        env.unwrapped.task_from_prompt = lambda p: ids[LEVELS.index(text_of(p))]
        return env

    t = trainer(warm, tmp_path, env_fn, train_dataset=Dataset.from_dict({"prompt": list(LEVELS)}))
    assert [t.task_of(p) for p in LEVELS] == list(ids[:2])
    assert t.task_of(ids[5]) == ids[5]  # a task id is still itself


def test_an_unmapped_prompt_is_a_one_line_error_at_init(tmp_path):
    tok = build_tiny_tokenizer()
    data = Dataset.from_dict({"prompt": ["Push the box onto the target."]})
    with pytest.raises(ValueError, match="task_dataset\\(ids\\) or task_from_prompt=") as raised:
        ours.CreditGRPOTrainer(
            build_tiny_model(tok),
            graphgpo,
            config(tmp_path),
            processing_class=tok,
            train_dataset=data,
        )
    assert "\n" not in str(raised.value)
