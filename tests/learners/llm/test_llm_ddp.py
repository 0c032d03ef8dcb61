"""The LLM learner data-parallel on CPU: 2 processes with the gloo backend give the update of one
process on the union of their samples (DDP and FSDP2), keep identical weights, shard the rollout
and evaluation tasks, survive a rank without samples, checkpoint and resume; and
``torchrun examples/train_llm.py`` end to end (slow; its 2-GPU twin is marked gpu).

The 2-process cases run once per module (one spawn, every scenario in it: 15 to 35 s on 2 shared
cores); each test checks one scenario's results, against a single-process run in the test
process where one applies.
Tolerance: float32 weights after 2 updates x 2 PPO epochs (AdamW, lr 1e-3: the weights move by up
to 4e-3) agree to ``atol=5e-6, rtol=1e-5``: the ranks sum the same per-sample gradients in another
order, and AdamW's normalisation magnifies rounding in near-zero gradients; the measured gap is
at most 9e-7 (0 when one rank holds every sample).
"""

import csv
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from agentenvs.learners.llm.config import TrainConfig  # noqa: E402
from agentenvs.learners.llm.cursor import TaskCursor  # noqa: E402
from agentenvs.learners.llm.distributed import Distributed  # noqa: E402
from agentenvs.learners.llm.trainer import Trainer  # noqa: E402
from agentenvs.wrappers import GraphCreditWrapper  # noqa: E402
from llm_fixtures import tiny_policy  # noqa: E402

from agentenvs.core import Step  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]

#: Every scenario: clipping active (grad_clip far below the gradient norm), 2 PPO epochs,
#: micro-batches of 2 samples (ranks run different numbers of them), KL to the reference,
#: old log-probs recomputed, the shared-prefix forward on (prompts share 20 tokens).
BASE = dict(
    max_new_tokens=6,
    eval_tasks=0,
    lr=1e-3,
    micro_batch_size=2,
    torch_threads=1,
    kl_coef=0.05,
    recompute_old_logprobs=True,
    ppo_epochs=2,
    grad_clip=0.05,
    min_shared_prefix=16,
)

#: name: (config overrides, groups of rank 0, groups of rank 1); a single process plays all.
SCENARIOS = {
    "ddp-token-mean": ({}, [0, 1], [2, 3]),
    "ddp-seq-mean-token-mean-unequal": ({"loss_agg_mode": "seq-mean-token-mean"}, [0], [1, 2, 3]),
    "ddp-seq-mean-token-sum-rank-without-samples": (
        {"loss_agg_mode": "seq-mean-token-sum"},
        [0, 1, 2, 3],
        [],
    ),
    "fsdp-token-mean-unequal": ({"parallel": "fsdp"}, [0, 1, 2], [3]),
    "fsdp-rank-without-samples": ({"parallel": "fsdp"}, [], [0, 1, 2, 3]),
}

#: Not comparable with one process (each rank splits its own samples): ranks must agree.
MINI_BATCHES = ({"mini_batches": 2}, [0, 1, 2], [3])

UPDATES = 2  # consecutive updates per scenario
#: 2 tasks on rank 0 and 1 on rank 1; 1 task on rank 0 and none on rank 1.
EVAL_SPLITS = {"test": ["seed-65536", "seed-65537", "seed-65538"], "test_unseen": ["seed-65539"]}
TIMEOUT_S = 240  # the whole 2-process job; a hang fails the test instead of the test run


def _group(g: int) -> list[Step]:
    """Credited group ``g``: 2 or 3 step-samples whose prompts share 20 tokens (one shared-prefix
    forward per micro-batch), responses of 1 to 5 tokens, distinct advantages; one truncated."""
    rng = np.random.default_rng(g)
    prefix = list(range(30, 50))
    steps = []
    for k in range(2 + g % 2):
        step = Step("o", "a", 0.0, advantage=float(rng.normal()))
        step.extras.update(
            prompt_ids=np.asarray(prefix + list(rng.integers(50, 200, 2 + k)), np.int32),
            response_ids=np.asarray(rng.integers(50, 200, 1 + (g + k) % 5), np.int32),
            logprobs=np.zeros(1 + (g + k) % 5, np.float32),  # unused: recomputed
            truncated=(g, k) == (1, 0),
        )
        steps.append(step)
    return steps


def _envs(n=1):
    return [
        lambda: GraphCreditWrapper(gym.make("agentenvs/Sokoban-v0", max_steps=1), group_size=2)
    ] * n


def _trainer(out_dir, overrides, distributed=None, groups=1) -> Trainer:
    config = TrainConfig(iterations=1, **{**BASE, **overrides})
    return Trainer(
        config,
        tiny_policy(),
        out_dir,
        _envs(groups),
        tensorboard=False,
        progress=False,
        distributed=distributed or Distributed(),
    )


def _full_params(trainer: Trainer) -> list:
    """The trainer's weights as full float32 tensors (FSDP shards gathered: every rank calls)."""
    out = []
    for p in trainer.policy.model.parameters():
        full = p.full_tensor() if hasattr(p, "full_tensor") else p
        out.append(full.detach().float().clone())
    return out


def _updated(trainer: Trainer, groups: list[int]) -> tuple[list, list]:
    steps = [s for g in groups for s in _group(g)]
    stats = [trainer.update(steps) for _ in range(UPDATES)]
    params = _full_params(trainer)
    trainer.close()
    return params, stats


def _worker(rank: int, port: int, out_dir: str) -> None:
    """One rank of the 2-process job: every scenario's updates, then one sharded collect."""
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE="2",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    torch.set_num_threads(1)
    dist = Distributed.from_env("cpu", timeout_s=60)
    results = {}
    scenarios = {**SCENARIOS, "mini-batches": MINI_BATCHES}
    for name, (overrides, *shards) in scenarios.items():
        trainer = _trainer(Path(out_dir) / name, overrides, dist)
        results[name] = _updated(trainer, shards[rank])
    # rollouts: 2 groups per rank, sharded from one cursor walk; evaluation; a checkpoint
    root = Path(out_dir) / "collect"
    trainer = _trainer(root, {"seed": 5}, dist, groups=2)
    tasks = [[g[0].task_id for g in trainer.collect()[0]] for _ in range(2)]
    results["collect"] = (tasks, trainer.cursor.position)
    results["evaluate"] = trainer.evaluate(EVAL_SPLITS)
    results["outcomes"] = trainer.logger.outcomes if trainer.logger is not None else None
    trainer.save_checkpoint()
    rng = torch.get_rng_state()
    trainer.close()
    torch.manual_seed(123)
    resumed = _trainer(root, {"seed": 5}, dist, groups=2)
    resumed.load_checkpoint()
    results["resume"] = (resumed.cursor.position, torch.equal(torch.get_rng_state(), rng))
    resumed.close()
    # FSDP: checkpoint (gathered whole) and resume; the full policy for export
    for parallel in ("ddp", "fsdp"):
        root = Path(out_dir) / f"resume-{parallel}"
        steps = [s for g in range(4) for s in _group(g)][rank::2]
        trainer = _trainer(root, {"parallel": parallel}, dist)
        trainer.update(steps)
        trainer.save_checkpoint()
        full = trainer.full_policy()
        exported = (
            None if full is None else [p.detach().float().clone() for p in full.model.parameters()]
        )
        trainer.update(steps)
        straight = _full_params(trainer)
        trainer.close()
        resumed = _trainer(root, {"parallel": parallel}, dist)
        resumed.load_checkpoint()
        restored = _full_params(resumed)
        resumed.update(steps)
        results[f"resume-{parallel}"] = (exported, restored, straight, _full_params(resumed))
        resumed.close()
    torch.save(results, Path(out_dir) / f"rank{rank}.pt")
    dist.destroy()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    """Run the 2-process job once; returns each rank's results."""
    import torch.multiprocessing as mp

    out = tmp_path_factory.mktemp("ddp")
    ctx = mp.start_processes(
        _worker, args=(_free_port(), str(out)), nprocs=2, join=False, start_method="spawn"
    )
    deadline = time.monotonic() + TIMEOUT_S
    while not ctx.join(timeout=1):
        if time.monotonic() > deadline:
            for process in ctx.processes:
                process.kill()
            pytest.fail(f"the 2-process job did not finish in {TIMEOUT_S} s")
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in range(2)]


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.integration
@pytest.mark.parametrize("name", SCENARIOS)
def test_two_ranks_give_the_one_process_update(name, two_ranks, tmp_path):
    overrides, first, second = SCENARIOS[name]
    single, single_stats = _updated(_trainer(tmp_path, overrides), first + second)
    (params0, stats0), (params1, stats1) = two_ranks[0][name], two_ranks[1][name]
    # every rank holds the same weights, bit for bit
    assert all(torch.equal(a, b) for a, b in zip(params0, params1, strict=True))
    # and they are one process's on the union of the samples, within float tolerance
    start = [
        p.detach().float() for p in tiny_policy().model.parameters()
    ]  # what every run starts from
    moved = max(float((a - b).abs().max()) for a, b in zip(single, start, strict=True))
    assert moved > 1e-4, "the update did not move the weights: nothing was compared"
    gap = max(float((a - b).abs().max()) for a, b in zip(params0, single, strict=True))
    print(f"{name}: max |2 ranks - 1 process| = {gap:.2e} (weights moved up to {moved:.2e})")
    for a, b in zip(params0, single, strict=True):
        torch.testing.assert_close(a, b, atol=5e-6, rtol=1e-5, msg=f"max gap {gap:.2e}")
    for ours, theirs in zip(stats0, single_stats, strict=True):
        assert ours["samples"] == theirs["samples"] == 10.0
        assert ours["update_steps"] == theirs["update_steps"] == 2.0  # 2 epochs, 1 mini-batch
        assert ours["grad_norm"] > BASE["grad_clip"]  # clipping was active
        for key in ("loss", "pg_loss", "kl", "clip_frac", "entropy", "grad_norm"):
            assert ours[key] == pytest.approx(theirs[key], rel=1e-5, abs=1e-7), key
        assert ours["truncated_frac"] == pytest.approx(theirs["truncated_frac"])
    assert stats0 == stats1  # the job's stats, on every rank


def test_mini_batches_are_local_and_weights_stay_identical(two_ranks):
    """``mini_batches=2`` with 1 sample on rank 1: one of its local mini-batches is empty, it
    still takes part in both steps of every epoch."""
    (params0, stats0), (params1, stats1) = (
        two_ranks[0]["mini-batches"],
        two_ranks[1]["mini-batches"],
    )
    assert all(torch.equal(a, b) for a, b in zip(params0, params1, strict=True))
    assert [s["update_steps"] for s in stats0] == [4.0, 4.0]  # 2 epochs x 2 mini-batches
    assert stats0 == stats1


def test_rollouts_are_sharded_by_rank(two_ranks):
    """Each iteration takes 2 x 2 ids from the one cursor walk: rank r plays ids [2r, 2r + 2)."""
    (tasks0, position0), (tasks1, position1) = two_ranks[0]["collect"], two_ranks[1]["collect"]
    assert position0 == position1 == 8
    cursor = TaskCursor(_envs()[0]().unwrapped.tasks.ids("train"), seed=5)
    for mine0, mine1 in zip(tasks0, tasks1, strict=True):
        walk = cursor.take(4)
        assert sorted(mine0) == sorted(walk[:2]) and sorted(mine1) == sorted(walk[2:])


def test_evaluation_is_sharded_and_gathered(two_ranks):
    """2 splits of 3 and 1 tasks (one rank plays none of the second), 2 decodings: every rank
    returns the metrics of every episode per split and mode, rank 0 alone keeps (and writes) the
    outcomes, in task order."""
    metrics0, metrics1 = two_ranks[0]["evaluate"], two_ranks[1]["evaluate"]
    assert metrics0.keys() == metrics1.keys()
    for key in metrics0:
        if not key.endswith("/time"):
            assert metrics0[key] == metrics1[key], key
    labels = {"greedy", "sampled", "test_unseen.greedy", "test_unseen.sampled"}
    assert {key.split("/")[1] for key in metrics0} == labels
    assert metrics0["eval/greedy/episode_len"] == 1.0
    assert metrics0["eval/test_unseen.greedy/episode_len"] == 1.0
    outcomes = two_ranks[0]["outcomes"]
    assert [(o["split"], o["mode"], o["task_id"]) for o in outcomes] == [
        (split, mode, task)
        for split, tasks in EVAL_SPLITS.items()
        for mode in ("greedy", "sampled")
        for task in tasks
    ]
    assert two_ranks[1]["outcomes"] is None


def test_checkpoint_resumes_every_rank_with_its_own_random_stream(two_ranks):
    for rank in range(2):
        position, same_rng = two_ranks[rank]["resume"]
        assert position == 8 and same_rng


@pytest.mark.parametrize("parallel", ["ddp", "fsdp"])
def test_checkpoint_resumes_the_update_exactly(two_ranks, parallel):
    """Save after one update, resume in a fresh trainer on every rank: the weights come back and
    the next update (AdamW state restored) gives the weights of the run that went on. Rank 0's
    ``full_policy`` (what the example exports; gathered under FSDP) holds the saved weights."""
    exported, restored, straight, resumed = two_ranks[0][f"resume-{parallel}"]
    assert two_ranks[1][f"resume-{parallel}"][0] is None  # rank 0 alone gets the full policy
    assert all(torch.equal(a, b) for a, b in zip(exported, restored, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(straight, resumed, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(restored, resumed, strict=True))


@pytest.mark.integration
def test_fsdp_refuses_what_it_does_not_shard(tmp_path):
    """FSDP's limits are errors, raised before any collective could hang."""
    two = Distributed(rank=0, world_size=2)
    with pytest.raises(ValueError, match="float32 weights"):
        _trainer(tmp_path, {"parallel": "fsdp", "weight_dtype": "bfloat16"}, two)
    with pytest.raises(ValueError, match="HF backend only"):
        _trainer(tmp_path, {"backend": "vllm"}, two)
    with pytest.raises(ValueError, match="parallel must be one of"):
        TrainConfig(parallel="tp")


def test_world_size_one_is_a_no_op():
    d = Distributed()
    assert (d.sum([1.0, 2.0]), d.max([3.0]), d.gather("x")) == ([1.0, 2.0], [3.0], ["x"])
    assert d.reduce_metrics({"groups": 2.0, "success_rate": 0.5}) == {
        "groups": 2.0,
        "success_rate": 0.5,
    }
    parts = [Distributed(rank=r, world_size=3).shard(list(range(7))) for r in range(3)]
    assert parts == [[0, 1, 2], [3, 4], [5, 6]]


def test_bad_torchrun_environment_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(ValueError, match="launch with torchrun"):
        Distributed.from_env("cpu")
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="WORLD_SIZE must be an integer"):
        Distributed.from_env("cpu")


@pytest.mark.slow  # ~30 s on 2 idle cores; the fast cases above run the same trainer code
def test_torchrun_trains_the_example_on_two_ranks(tmp_path):
    """``torchrun --nproc_per_node 2 examples/train_llm.py --model tiny``: 2 iterations finish,
    rank 0 alone writes metrics.csv (one row per iteration), both ranks played (4 groups per
    iteration) and the cursor advanced by 2 ranks x 2 groups per iteration."""
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
        "--master_port", str(_free_port()), "examples/train_llm.py", "--model", "tiny",
        "--iterations", "2", "--groups", "2", "--group-size", "2", "--warm-start", "format", "--warm-start-steps", "2",
        "--eval-tasks", "3", "--eval-modes", "greedy", "--export", "none", "--threads", "1",
        "--out", str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    with (tmp_path / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [float(r["iteration"]) for r in rows] == [0.0, 1.0, 2.0]
    assert [float(r["groups"]) for r in rows[1:]] == [4.0, 4.0]
    assert done.stdout.count("test success (greedy, 3 tasks)") == 1  # rank 0 reports
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    assert state["cursor"] == 8 and len(state["rank_rng"]) == 2
    if (tmp_path / "trajectories").exists():  # the trajectory store: rank 0 stores every group
        from agentenvs.core.store import read_groups

        stored = [(g.iteration, g.task_id) for g in read_groups(tmp_path / "trajectories")]
        for iteration in (1, 2):
            assert len({task for it, task in stored if it == iteration}) == 4


@pytest.mark.gpu
@pytest.mark.parametrize("parallel", ["ddp", "fsdp"])
def test_torchrun_trains_the_example_on_two_gpus(parallel, tmp_path):
    """The same job with nccl, one GPU per rank (bf16 autocast by default on CUDA); written for a
    machine with 2 GPUs, not run on one yet."""
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        pytest.skip("needs 2 CUDA devices")
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
        "--master_port", str(_free_port()), "examples/train_llm.py", "--model", "tiny",
        "--iterations", "2", "--groups", "2", "--group-size", "2", "--warm-start", "format", "--warm-start-steps", "2",
        "--eval-tasks", "3", "--parallel", parallel, "--out", str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "on cuda:0" in done.stdout
    with (tmp_path / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [float(r["groups"]) for r in rows[1:]] == [4.0, 4.0]
    assert (tmp_path / "policy" / "config.json").exists()
