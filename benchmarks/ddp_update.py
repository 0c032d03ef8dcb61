"""Benchmark the data-parallel LLM update: ``Trainer.update`` time for 1 vs 2 processes (CPU, gloo).

Every configuration runs in fresh processes on the same fixed batch of synthetic credited
step-samples (groups of ``--group-size`` steps whose prompts share a prefix, as an env's do; one
advantage per step): one process updates on the whole batch; two processes launched by
``torchrun`` update on half of the groups each, with DDP or FSDP2, which is the same update
(``tests/learners/llm/test_llm_ddp.py``). Reported per model size: the median wall time of one update
(for two processes, until both are done), its ratio to one process with one thread, and the median
time of one gloo all-reduce of a float32 buffer as large as the gradient, which is what DDP adds to
every mini-batch. Each configuration runs ``--rounds`` times, the configurations interleaved (so
load from other programs drifts into all of them alike), each run timing ``--repeats`` updates
after a warm-up; the median is over every timed update. The numbers are printed, not asserted.

On a 2-core machine shared with other programs this measures the overhead (the all-reduce, the
synchronisation), not scaling: the times move with the machine's load (the load average is
printed). docs/learner-distributed.md section 6 has the numbers measured here.

    python benchmarks/ddp_update.py                          # tiny and small models, ~3 minutes
    python benchmarks/ddp_update.py --sizes tiny --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

#: name: (hidden size, decoder layers, attention heads) of the random Qwen2 model.
SIZES = {"tiny": (64, 2, 4), "small": (256, 4, 4)}

#: (label, processes, threads per process, TrainConfig.parallel)
CONFIGS = [
    ("1 process, 1 thread", 1, 1, "ddp"),
    ("1 process, 2 threads", 1, 2, "ddp"),
    ("2 processes DDP, 1 thread each", 2, 1, "ddp"),
    ("2 processes FSDP, 1 thread each", 2, 1, "fsdp"),
]


def _batch(groups: int, group_size: int, prompt: int, response: int, vocab: int) -> list:
    """``groups`` credited groups of ``group_size`` step-samples: prompts of ``prompt`` tokens
    sharing their first 3/4, responses of ``response`` tokens, advantages ~ N(0, 1)."""
    import numpy as np

    from agentenvs.core import Step

    rng = np.random.default_rng(0)
    shared = list(rng.integers(10, vocab, prompt * 3 // 4))
    out = []
    for _ in range(groups):
        group = []
        for _ in range(group_size):
            step = Step("o", "a", 0.0, advantage=float(rng.normal()))
            tail = list(rng.integers(10, vocab, prompt - len(shared)))
            step.extras.update(
                prompt_ids=np.asarray(shared + tail, np.int32),
                response_ids=np.asarray(rng.integers(10, vocab, response), np.int32),
                logprobs=np.full(response, -3.0, np.float32),
                truncated=False,
            )
            group.append(step)
        out.append(group)
    return out


def run_child(args: argparse.Namespace, spec: dict) -> dict | None:
    """One process of one configuration: time ``args.repeats`` updates on this rank's groups."""
    import gymnasium as gym
    import torch
    from agentenvs.learners.llm.config import TrainConfig
    from agentenvs.learners.llm.distributed import Distributed
    from agentenvs.learners.llm.policy import Policy
    from agentenvs.learners.llm.tiny import build_tiny_model, build_tiny_tokenizer
    from agentenvs.learners.llm.trainer import Trainer
    from agentenvs.wrappers import GraphCreditWrapper

    import agentenvs  # noqa: F401  (registers the env the trainer is handed)

    dist = Distributed.from_env("cpu", timeout_s=600)
    torch.set_num_threads(spec["threads"])
    hidden, layers, heads = SIZES[spec["size"]]
    tok = build_tiny_tokenizer()
    model = build_tiny_model(tok, hidden_size=hidden, num_layers=layers, num_heads=heads)
    config = TrainConfig(
        eval_tasks=0,
        lr=1e-5,
        micro_batch_size=args.micro_batch_size,
        max_new_tokens=args.response,
        torch_threads=spec["threads"],
        parallel=spec["parallel"],
    )
    envs = [lambda: GraphCreditWrapper(gym.make("agentenvs/Sokoban-v0"), group_size=2)]
    batch = _batch(args.groups, args.group_size, args.prompt, args.response, len(tok))
    steps = [s for group in dist.shard(batch) for s in group]
    with tempfile.TemporaryDirectory() as out:
        trainer = Trainer(
            config, Policy(model, tok), out, envs, tensorboard=False, progress=False,
            distributed=dist,
        )  # fmt: skip
        trainer.update(steps)  # warm-up
        times = []
        for _ in range(args.repeats):
            dist.barrier()
            start = time.perf_counter()
            trainer.update(steps)
            dist.barrier()  # the update is done when every rank is
            times.append(time.perf_counter() - start)
        numel = sum(p.numel() for p in model.parameters() if p.requires_grad)
        reduce_s = []
        if dist.enabled:
            buffer = torch.zeros(numel)
            for _ in range(5):
                dist.barrier()
                start = time.perf_counter()
                torch.distributed.all_reduce(buffer)  # what DDP does to the gradient
                reduce_s.append(time.perf_counter() - start)
        trainer.close()
    dist.destroy()
    if not dist.is_main:
        return None
    return {
        "update_s": times,
        "allreduce_s": reduce_s,
        "params": numel,
        "samples": len(steps) * dist.world_size,
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    p = argparse.ArgumentParser(description="data-parallel update time, 1 vs 2 processes")
    p.add_argument("--sizes", default="tiny,small", help=f"comma-separated of {sorted(SIZES)}")
    p.add_argument("--groups", type=int, default=8, help="credited groups in the batch")
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--prompt", type=int, default=160, help="prompt tokens per step-sample")
    p.add_argument("--response", type=int, default=32, help="response tokens per step-sample")
    p.add_argument("--micro-batch-size", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3, help="timed updates per run (+1 warm-up)")
    p.add_argument("--rounds", type=int, default=2, help="runs of every configuration")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)  # one configuration (JSON)
    args = p.parse_args()
    if args.child is not None:
        result = run_child(args, json.loads(args.child))
        if result is not None:
            print(json.dumps(result))
        return
    sizes = [s for s in args.sizes.split(",") if s]
    if not set(sizes) <= set(SIZES):
        p.error(f"--sizes must name some of {sorted(SIZES)}, got {args.sizes!r}")
    root = Path(__file__).resolve().parents[1]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    print(
        f"Trainer.update on {args.groups} groups x {args.group_size} step-samples "
        f"({args.prompt} prompt + {args.response} response tokens each), micro-batches of "
        f"{args.micro_batch_size}, CPU, {os.cpu_count()} cores; median of {args.rounds} runs x "
        f"{args.repeats} updates; load average before: {os.getloadavg()[0]:.1f}"
    )
    for size in sizes:
        runs: dict[str, list[dict]] = {label: [] for label, *_ in CONFIGS}
        for _ in range(args.rounds):
            for label, procs, threads, parallel in CONFIGS:
                spec = json.dumps({"size": size, "threads": threads, "parallel": parallel})
                launch = [sys.executable]
                if procs > 1:
                    launch += ["-m", "torch.distributed.run", "--nproc_per_node", str(procs)]
                    launch += ["--master_port", str(_free_port())]
                cmd = [*launch, __file__, *sys.argv[1:], "--child", spec]
                done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
                if done.returncode != 0:
                    print(f"{size} / {label}: failed\n{done.stderr[-2000:]}")
                    continue
                runs[label].append(json.loads(done.stdout.strip().splitlines()[-1]))
        rows = [(label, r) for label, r in runs.items() if r]
        if not rows:
            continue
        median = {
            label: statistics.median(t for run in r for t in run["update_s"]) for label, r in rows
        }
        base = median[rows[0][0]]
        print(f"\nmodel {size}: {rows[0][1][0]['params'] / 1e6:.2f}M parameters")
        print(f"{'configuration':<34}{'update s':>10}{'vs 1x1':>8}{'all-reduce ms':>15}")
        for label, r in rows:
            reduce = [t for run in r for t in run["allreduce_s"]]
            reduce_ms = f"{statistics.median(reduce) * 1e3:.1f}" if reduce else ""
            print(f"{label:<34}{median[label]:>10.3f}{median[label] / base:>8.2f}{reduce_ms:>15}")
        print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
