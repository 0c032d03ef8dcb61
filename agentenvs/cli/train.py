"""``agentenvs train [ENV_ID] [FLAGS]``: train an LLM agent with multi-turn PPO on credit-wrapped envs.

This module holds the subcommand's :func:`add_parser` / :func:`run`, the run's steps
(:func:`run_dir`, :func:`make_envs`, :func:`make_eval_envs`, :func:`make_policy`,
:func:`evaluate_untrained`, :func:`warm_start`, :func:`train`, :func:`untrained_changes`,
:func:`report_lines`, :func:`report`) and :func:`main`, which parses the flags
(:mod:`agentenvs.cli.train_flags`) and runs the steps in order. ``examples/train_llm.py`` writes the
same steps out as a script to read and copy; ``agentenvs train`` with no flags is the README's main
job, the same run as ``python examples/train_llm.py``.

Layering: the learner (``agentenvs.learners``, and with it torch) is imported inside the steps
only, so the other subcommands import neither.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import sys
import time
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

import agentenvs
from agentenvs.cli.train_flags import TrainArgs, env_kwargs, parse_args, usage_error
from agentenvs.wrappers import CreditState, CreditWrapper, VectorCreditWrapper
from agentenvs.wrappers.registry import METHODS

__all__ = [
    "add_parser",
    "run",
    "main",
    "parse_args",
    "run_dir",
    "make_envs",
    "make_eval_envs",
    "make_policy",
    "evaluate_untrained",
    "warm_start",
    "train",
    "untrained_changes",
    "report_lines",
    "report",
]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train an LLM agent on credit-wrapped envs (the main job; --help: every flag)",
        add_help=False,  # --help is the command's own (agentenvs.cli.train_flags), grouped
    )
    parser.set_defaults(passthrough=True)  # main() hands the rest of the line over as args.argv


def run(args: argparse.Namespace) -> int:
    try:
        return main(args.argv, prog="agentenvs train")
    except SystemExit as exc:  # --help (0), a usage error (2, printed) or a one-line message
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            return 1
        return int(exc.code or 0)


def run_dir(
    args: TrainArgs, dist: Any = None, root: str | Path = "runs", prog: str = "agentenvs train"
) -> str:
    """The run directory: ``--out`` when given, else a new ``root/<env>-<model>-<date>-<time>``
    (``-2``, ``-3``, ... when a run of the same second exists), created here and the same on
    every rank (rank 0's name, via ``dist.gather``). An ``--out`` that holds a run
    (``metrics.csv``) needs ``--resume`` or ``--overwrite``: a one-line usage error otherwise.

    >>> import tempfile
    >>> args = TrainArgs(env="agentenvs/Sokoban-v0", model="tiny")
    >>> with tempfile.TemporaryDirectory() as root:
    ...     a, b = run_dir(args, root=root), run_dir(args, root=root)
    ...     a != b and Path(a).name.startswith("Sokoban-v0-tiny-")
    True
    """
    if args.out is None and args.resume:
        usage_error(prog, "--resume needs --out, the run directory to continue")
    if args.out is not None:
        if (Path(args.out) / "metrics.csv").exists() and not (args.resume or args.overwrite):
            usage_error(prog, f"--out {args.out} holds a run: --resume continues it, --overwrite "
                        "replaces it, or leave --out out for a new run directory")  # fmt: skip
        return args.out
    env = args.env.rsplit(":", 1)[-1].rsplit("/", 1)[-1]
    stem = Path(root) / f"{env}-{Path(args.model).name}-{time.strftime('%Y%m%d-%H%M%S')}"
    path, n = stem, 1
    while path.exists():
        n += 1
        path = stem.with_name(f"{stem.name}-{n}")
    if dist is not None and dist.enabled:
        path = Path(dist.gather(str(path))[0])
    if dist is None or dist.is_main:
        path.mkdir(parents=True, exist_ok=True)
    return str(path)


def make_envs(args: TrainArgs) -> VectorCreditWrapper | list[typing.Callable[[], gym.Env]]:
    """The training envs, each wrapped in the ``--credit`` wrapper: a grouped vector env under
    :class:`VectorCreditWrapper` (``--rollout parallel``) or one factory per group."""
    if args.rollout == "sequential":
        # --credit graph: GraphCreditWrapper (a method registered without a class: CreditWrapper)
        wrapper = METHODS[args.credit].wrapper or functools.partial(
            CreditWrapper, method=args.credit
        )

        shared = CreditState()  # one online state for the run: one estimator learns every group

        def make_env() -> gym.Env:  # every env shares the one config and the one credit state
            env = gym.make(args.env, **env_kwargs(args))
            return wrapper(
                env,
                group_size=args.group_size,
                config=args.credit_config,
                state_keys=args.state_keys,
                state=shared,
            )

        return [make_env] * args.groups
    vector_kwargs = {"address": args.ray_address} if args.vectorization == "ray" else None
    grouped = agentenvs.make_group_vec_env(
        args.env,
        args.groups,
        args.group_size,
        args.vectorization,
        vector_kwargs=vector_kwargs,
        **env_kwargs(args),
    )
    return VectorCreditWrapper(grouped, args.credit, args.credit_config, state_keys=args.state_keys)


def make_eval_envs(args: TrainArgs) -> list[typing.Callable[[], gym.Env]]:
    """Factories of the plain (uncredited) envs that play the test tasks, ``--eval-envs`` at most."""
    kwargs = env_kwargs(args)
    return [lambda: gym.make(args.env, **kwargs)] * max(
        1, min(args.eval_envs, args.config.eval_tasks)
    )


def make_policy(args: TrainArgs, dist: Any, prog: str) -> tuple[Any, str]:
    """The policy of ``--model`` (a local HF directory; ``tiny`` and ``smollm2`` are built offline
    once, on rank 0) on this rank's device, and its directory. A missing model exits with one line
    naming ``prog``."""
    import torch

    from agentenvs.learners.llm.kernels import pin_cpu_kernels
    from agentenvs.learners.llm.models import resolve_model
    from agentenvs.learners.llm.policy import load_policy
    from agentenvs.learners.llm.precision import DTYPES
    from agentenvs.learners.llm.vision import check_modalities

    pin_cpu_kernels(args.cpu_kernels)  # before any torch operation: they pick their kernels once
    if args.config.torch_threads:  # from the start: the warm start runs before the trainer
        torch.set_num_threads(args.config.torch_threads)
    try:
        model_dir = resolve_model(args.model) if dist.is_main else None
        dist.barrier()
        model_dir = model_dir or resolve_model(args.model)
    except FileNotFoundError as error:  # e.g. --model smollm2 without its wheel: say how, no trace
        raise SystemExit(f"{prog}: {error}") from None
    device = dist.device if dist.enabled else "cuda" if torch.cuda.is_available() else "cpu"
    dtype = DTYPES[args.config.weight_dtype]
    policy = load_policy(
        model_dir,
        device=device,
        dtype=dtype,
        lora_rank=args.config.lora_rank,
        train_vision=args.train_vision,
    )
    probe = gym.make(args.env, **env_kwargs(args))  # a VLM for image envs, a text model for text
    try:
        check_modalities(args.env, probe.observation_space, args.model, policy.images is not None)
    except ValueError as error:
        raise SystemExit(f"{prog}: {error}") from None
    finally:
        probe.close()
    if dist.is_main:
        print(
            f"model {model_dir} on {device}; env {args.env} {env_kwargs(args)}; credit {args.credit}"
        )
    return policy, str(model_dir)


def warm_start(args: TrainArgs, policy: Any) -> list[float]:
    """``--warm-start-steps`` supervised steps (``--warm-start-lr``) of the ``--warm-start``
    teacher at the states of its walks over the env's train tasks, every turn, with the learner's
    prompts (format: uniformly random admissible actions, the env's action syntax only; demo: the
    env's expert); prints the loss and the time taken and returns the loss of each step (nats per
    response token). ``--warm-start none`` (or 0 steps) does nothing and returns ``[]``."""
    from agentenvs.learners.llm.warm_start import supervised_warm_start

    if args.warm_start == "none" or args.warm_start_steps < 1:
        return []
    start = time.perf_counter()
    env = gym.make(args.env, **env_kwargs(args))
    losses = supervised_warm_start(
        policy,
        env,
        env.unwrapped.tasks.ids("train"),  # type: ignore[attr-defined]  # every env of ours has a panel
        args.warm_start,
        steps=args.warm_start_steps,
        lr=args.warm_start_lr,
        prompt_style=args.config.prompt_style,
        history_length=args.config.history_length,
        seed=args.config.seed,
        progress=args.progress,
    )
    env.close()
    print(
        f"{args.warm_start} warm start: {len(losses)} steps, loss {losses[0]:.3f} -> "
        f"{losses[-1]:.3f} ({time.perf_counter() - start:.0f} s)"
    )
    return losses


def _gain(row: Mapping[str, float], key: str) -> str:
    """``, gain +0.100 (95% interval +0.020 to +0.180)`` when ``row`` holds ``key``, else ``""``."""
    if key not in row:
        return ""
    return (
        f", gain {row[key]:+.3f} (95% interval {row[key + '_low']:+.3f} to "
        f"{row[key + '_high']:+.3f})"
    )


def _changes(first: Mapping[str, float], last: Mapping[str, float], key: str) -> str:
    """``0.000 -> 0.250, gain ...; valid actions ...[; goal-directed episodes ...]`` of the
    metrics under ``key`` (``eval/<label>/``) from ``first`` to ``last`` (which holds the gains)."""
    text = (
        f"{first[key + 'success_rate']:.3f} -> {last[key + 'success_rate']:.3f}"
        f"{_gain(last, key + 'success_gain')}; valid actions "
        f"{first[key + 'valid_action_rate']:.3f} -> {last[key + 'valid_action_rate']:.3f}"
        f"{_gain(last, key + 'valid_action_gain')}"
    )
    if key + "goal_directed_rate" in last:
        text += (
            f"; goal-directed episodes {first[key + 'goal_directed_rate']:.3f} -> "
            f"{last[key + 'goal_directed_rate']:.3f}{_gain(last, key + 'goal_directed_gain')}"
        )
    return text


def report_lines(
    rows: Sequence[Mapping[str, float]],
    splits: Mapping[str, Sequence[str]],
    modes: Sequence[str],
    untrained: Mapping[str, float] | None = None,
) -> list[str]:
    """One line per evaluated split (name -> task ids) and decoding mode with an evaluation in
    ``rows`` (the trainer's metric rows): success and the valid-action rate at the first and last
    evaluation, each with its paired gain and 95% interval when logged, and the same for the share
    of goal-directed episodes where the env marks them. With ``untrained`` (the metrics of
    ``--eval-untrained`` and their gains to the last evaluation), a second line per split and
    decoding compares the untrained policy with the trained one."""
    from agentenvs.learners.llm.metrics import eval_label

    lines = []
    for split, tasks in splits.items():
        for mode in modes:
            key = f"eval/{eval_label(split, mode)}/"
            evals = [r for r in rows if key + "success_rate" in r]
            if not evals:
                continue
            head = f"{split} success ({mode}, {len(tasks)} tasks)"
            lines.append(f"{head}: {_changes(evals[0], evals[-1], key)}")
            if untrained is not None and key + "success_rate" in untrained:
                last = {**evals[-1], **{k: v for k, v in untrained.items() if "_gain" in k}}
                lines.append(f"{head}, untrained -> trained: {_changes(untrained, last, key)}")
    return lines


def evaluate_untrained(args: TrainArgs, policy: Any, dist: Any) -> Any:
    """``--eval-untrained``: one evaluation of ``policy`` as it is (before the warm start) on the
    splits and decodings the trainer will evaluate, with HF generation, its outcomes in
    ``--out/untrained`` (rank 0). Every rank calls it; returns rank 0's
    :class:`~agentenvs.learners.llm.metrics.MetricsLogger` (``None`` on other ranks) and the metrics."""
    import contextlib

    from agentenvs.learners.llm.env_source import CreditedEnvs, choose_tasks
    from agentenvs.learners.llm.evaluation import Evaluator
    from agentenvs.learners.llm.metrics import MetricsLogger
    from agentenvs.learners.llm.trainer import build_generator

    config = args.config
    source = CreditedEnvs(make_eval_envs(args), None, config.prompt_style, config.history_length)
    _, splits = choose_tasks(config, source)
    tokens = config.max_new_tokens or max(p.max_new_tokens for p in source.prompts)
    generator = build_generator(dataclasses.replace(config, backend="hf"), policy, tokens)
    logger = None
    if dist.is_main:  # a fresh record each run
        logger = MetricsLogger(Path(args.run_path) / "untrained", tensorboard=False)
        logger.truncate(-1)
    evaluator = Evaluator(
        config, policy, generator, dist, source.eval_envs, source.eval_prompts,
        contextlib.nullcontext, progress=args.progress and dist.is_main,
    )  # fmt: skip
    metrics = evaluator.evaluate(splits, 0, logger)
    if logger is not None:
        logger.log(0, metrics)
    source.close()
    return logger, metrics


def train(
    args: TrainArgs, envs: Any, policy: Any, model_dir: str, dist: Any
) -> tuple[list[dict[str, float]], dict[str, list[str]], Any]:
    """Train ``policy`` on the credited groups of ``envs`` with the learner's
    :class:`~agentenvs.learners.llm.trainer.Trainer` (evaluating on plain envs, checkpointing in ``--out``;
    ``--resume`` continues its checkpoint). Returns the metric rows, the evaluated splits (name ->
    task ids) and the trained policy to export (``None`` with ``--export none``; under FSDP
    gathered from every rank)."""
    from agentenvs.learners.llm.trainer import Trainer

    trainer = Trainer(
        args.config,
        policy,
        args.run_path,
        envs,
        eval_envs=make_eval_envs(args),
        model_path=model_dir,
        progress=args.progress,
        distributed=dist,
    )
    if args.resume:
        trainer.load_checkpoint()
    rows = trainer.train()
    trained = trainer.full_policy() if args.export != "none" else None
    trainer.close()
    return rows, trainer.eval_splits, trained


def untrained_changes(
    args: TrainArgs, splits: Mapping[str, Sequence[str]], untrained: tuple[Any, dict[str, float]]
) -> dict[str, float]:
    """:func:`evaluate_untrained`'s metrics with the per-task gains from its outcomes to the last
    evaluation of the run in ``--out`` (:func:`~agentenvs.learners.llm.evaluation.outcome_gains`)."""
    from agentenvs.learners.llm.evaluation import outcome_gains
    from agentenvs.learners.llm.metrics import MetricsLogger

    before, metrics = untrained
    run = MetricsLogger(args.run_path, tensorboard=False)
    last = max(r["iteration"] for r in run.outcomes)
    modes = args.config.eval_modes
    return {**metrics, **outcome_gains(run, last, list(splits), modes, baseline=before)}


def report(
    args: TrainArgs,
    rows: Sequence[Mapping[str, float]],
    splits: Mapping[str, Sequence[str]],
    trained: Any,
    untrained: tuple[Any, dict[str, float]] | None = None,
) -> None:
    """Print :func:`report_lines` (with ``untrained``, what :func:`evaluate_untrained` returned:
    the change from the untrained policy too) and where the curve and episodes are; export
    ``trained`` to ``--out/policy`` (an HF model directory with any LoRA merged, or the adapter
    alone) unless it is ``None``."""
    changes = untrained_changes(args, splits, untrained) if untrained is not None else None
    for line in report_lines(rows, splits, args.config.eval_modes, changes):
        print(line)
    print(f"curve in {args.out}/learning_curve.png, episodes in {args.out}/eval_outcomes.jsonl")
    if trained is not None:
        from agentenvs.learners.llm.export import export_policy

        path = export_policy(
            trained, os.path.join(args.run_path, "policy"), args.export == "merged"
        )
        print(f"policy exported ({args.export}) to {path}")


def main(argv: Sequence[str] | None = None, prog: str = "agentenvs train") -> int:
    """Parse ``argv``, then build the envs and the policy, evaluate it untrained
    (``--eval-untrained``), warm-start, train, report and export (the steps of
    ``examples/train_llm.py``); returns 0."""
    from agentenvs.learners.llm.distributed import Distributed

    args = parse_args(argv, prog)
    dist = Distributed.from_env()  # under torchrun: this rank's place; else one process
    args.out = run_dir(args, dist, prog=prog)
    if dist.is_main:
        print(f"run directory: {args.out}")
    envs = make_envs(args)
    policy, model_dir = make_policy(args, dist, prog)
    untrained = evaluate_untrained(args, policy, dist) if args.eval_untrained else None
    if dist.is_main:  # the trainer gives rank 0's weights to every rank
        warm_start(args, policy)
    rows, splits, trained = train(args, envs, policy, model_dir, dist)
    dist.destroy()
    if dist.is_main:  # rank 0 reports and exports
        report(args, rows, splits, trained, untrained)
    return 0
