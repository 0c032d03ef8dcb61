"""Our credit inside the real TRL ``GRPOTrainer`` (``agentenvs.learners.trl``; run in the reach venv by
scripts/test_reach.sh).

The quality bars of docs/integrations.md: the trainer trains the tiny model for 3 steps on Sokoban
with GraphGPO credit on CPU; two steps of one episode with different GraphGPO advantages carry
different per-token advantages in the batch TRL's loss reads (and the loss depends on them); our
``grpo`` through this path equals TRL's own GRPO advantages on the same batch, within 1e-6.

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


def trainer(warm, tmp_path, env_fn, max_steps: int = 1) -> ours.CreditGRPOTrainer:
    state, tok = warm
    model = build_tiny_model(tok)
    model.load_state_dict(state)
    args = trl.GRPOConfig(
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
    )
    return ours.CreditGRPOTrainer(model, env_fn, args, processing_class=tok, **STYLE)


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
