"""``agentenvs train``: the LLM learner's command line, its flags generated from :class:`TrainConfig`.

This module holds :class:`TrainArgs` (the flags that are not ``TrainConfig`` fields: env, credit,
groups, model, outputs), :data:`RECIPES` (per-(env, model) defaults), :data:`FLAG_NAMES`,
:func:`import_user_modules`, :func:`parse_args`, the run's steps (:func:`make_envs`,
:func:`make_eval_envs`, :func:`make_policy`, :func:`warm_start`, :func:`train`,
:func:`report_lines`, :func:`report`) and :func:`main`, which runs them in order (``examples/train_llm.py`` writes the
same steps out as a script to read and copy).

Every ``TrainConfig`` field is a flag of the same name with dashes (``kl_coef`` -> ``--kl-coef``,
a bool ``--x`` / ``--no-x``, ``None`` for an optional value), its type and help text read from the
dataclass by `tyro <https://brentyi.github.io/tyro/>`_; :data:`FLAG_NAMES` keeps the two older
spellings (``--prompt``, ``--threads``), ``--eval-modes`` / ``--eval-splits`` take comma-separated
names and ``lora_rank`` comes from ``--lora`` / ``--lora-rank``. A field whose type tyro cannot
parse raises :class:`TypeError` when the parser is built (it is never guessed).

>>> args = parse_args(["--iterations", "2", "--prompt", "reference", "--eval-modes", "greedy"])
>>> args.config.iterations, args.config.prompt_style, args.config.eval_modes, args.groups
(2, 'reference', ('greedy',), 8)
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import importlib.metadata
import json
import os
import sys
import time
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import gymnasium as gym
import tyro
from agentenvs.learners.llm.config import TrainConfig
from agentenvs.learners.llm.metrics import eval_label
from agentenvs.wrappers import METHODS, CreditState, CreditWrapper, VectorCreditWrapper, make_config
from tyro.constructors import (
    ConstructorRegistry,
    PrimitiveConstructorSpec,
    PrimitiveTypeInfo,
    UnsupportedTypeAnnotationError,
)

import agentenvs

__all__ = [
    "MAIN_JOB_ENV",
    "ALFWORLD_ENV",
    "RECIPES",
    "FLAG_NAMES",
    "RENAMED",
    "ConfigFlags",
    "config_flags",
    "PLUGIN_GROUP",
    "TrainArgs",
    "import_user_modules",
    "parse_args",
    "run_dir",
    "make_envs",
    "make_eval_envs",
    "make_policy",
    "warm_start",
    "train",
    "report_lines",
    "report",
    "main",
]

#: The main job's env; with it, ``--model tiny`` / ``smollm2`` get the recipes below.
MAIN_JOB_ENV = "agentenvs/Sokoban-v0"

#: The ALFWorld line's env: ``--model tiny`` gets the recipe below.
ALFWORLD_ENV = "agentenvs/ALFWorld-v0"

#: Recipes keyed by ``(env id, model)``: defaults of the flags they name when the user names that
#: ``--env`` (or none, for the main job's env) and ``--model`` (any flag overrides them; keys are
#: :class:`TrainArgs` or ``TrainConfig`` fields). The table lives here, not in the envs, because
#: its numbers are the learner's budget (steps, groups, iterations) for one model on one env.
#:
#: * Sokoban. ``tiny`` (the main job, a randomly initialised model): rooms whose shortest solution
#:   takes 2-4 moves (the env's curriculum options), 6-step episodes, the env's offsets
#:   observation (a form the tiny model can read: docs/learner-capacity.md), a small
#:   demonstration warm start (400 steps of the BFS solver's moves), then 40 iterations of
#:   GraphGPO with 4 epochs x 4 mini-batches, lr warmup and KL 0.05 to the warm-started policy
#:   (chosen on the ``validation`` split: docs/learner-recipe.md). ``smollm2``: LoRA on two-step
#:   episodes in one-push rooms at temperature 0.7 (measured in docs/learner.md: it does not reach a significant gain in 15 minutes
#:   on 2 cores).
#: * ALFWorld ``tiny`` (the ALFWorld line, sized to end within 15 minutes on 2 cores): the same
#:   format warm start on uniformly random admissible commands (``help`` left out: ``drop_help``),
#:   then GraphGPO on 8-step episodes, and 12 tasks of each test split per decoding on the
#:   untrained model (``eval_untrained``), before RL and after (``--eval-tasks 140`` plays all
#:   140 + 60).
#: * Sokoban ``random-60m`` (the GPU recipe, docs/learner-gpu.md; sized for about 5 minutes on one
#:   H100/H200, untuned: it has not run on a GPU yet): the main job's rooms and update (rooms
#:   that need 2-4 moves, 6 steps, history 0; 4 epochs x 4 mini-batches, warmup 16, KL 0.05) on
#:   the grid observation, which a 59M model is meant to read and the tiny one cannot, with a demonstration warm start of 300 steps at lr 5e-4, then GraphGPO on 16 groups of
#:   8 for 30 iterations at lr 1e-4, all 64 test rooms per decoding.
RECIPES: dict[tuple[str, str], dict[str, Any]] = {
    (MAIN_JOB_ENV, "tiny"): {
        "env_kwargs": {
            "max_solution_steps": 4,
            "min_solution_steps": 2,
            "max_steps": 6,
            "observation": "offsets",
        },
        "warm_start": "demo",
        "warm_start_steps": 400,
        "history_length": 0,
        "groups": 8,
        "group_size": 8,
        "iterations": 40,
        "lr": 3e-4,
        "warmup_steps": 16,
        "kl_coef": 0.05,
        "ppo_epochs": 4,
        "mini_batches": 4,
        "micro_batch_size": 32,
        "max_new_tokens": 16,  # the longest move, </think><action>down</action>, is 13 tokens
        "torch_threads": 1,  # one thread: the README's table on any core count (2 change digits)
    },
    (MAIN_JOB_ENV, "smollm2"): {
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
    (ALFWORLD_ENV, "tiny"): {
        "env_kwargs": {"max_steps": 8, "drop_help": True},
        "warm_start": "format",
        "warm_start_steps": 120,
        "groups": 4,
        "group_size": 4,
        "iterations": 5,
        "lr": 1e-3,
        "kl_coef": 0.0,
        "max_new_tokens": 48,  # 'take creditcard 1 from countertop 1' in tags is 34 tokens
        "eval_tasks": 12,
        "eval_untrained": True,
    },
    (MAIN_JOB_ENV, "random-60m"): {
        "env_kwargs": {"max_solution_steps": 4, "min_solution_steps": 2, "max_steps": 6},
        "warm_start": "demo",
        "warm_start_steps": 300,
        "warm_start_lr": 5e-4,
        "history_length": 0,
        "groups": 16,
        "group_size": 8,
        "iterations": 30,
        "lr": 1e-4,
        "warmup_steps": 16,
        "kl_coef": 0.05,
        "ppo_epochs": 4,
        "mini_batches": 4,
        "micro_batch_size": 32,
        "gen_batch_size": 128,  # one generate call per turn for every episode of the batch
        "max_new_tokens": 16,
        "eval_tasks": 64,
    },
}

#: ``TrainConfig`` fields whose flag is not the field's name (the spellings the script always had).
FLAG_NAMES = {"prompt_style": "prompt", "torch_threads": "threads"}

#: The entry-point group of installed packages' credit methods (each entry names a module, which
#: registers its methods when imported).
PLUGIN_GROUP = "agentenvs.credit_methods"


def _json_object(text: str) -> dict[str, Any]:
    """The JSON object ``text`` (a flag's value); anything else raises ValueError."""
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object like '{{\"key\": 1}}', got {text!r}")
    return value


#: A flag that reads a JSON object (``None`` for an optional one).
_JSON = PrimitiveConstructorSpec(
    nargs=1,
    metavar="JSON",
    instance_from_str=lambda words: _json_object(words[0]),
    is_instance=lambda value: value is None or isinstance(value, dict),
    str_from_instance=lambda value: [json.dumps(value)],
)


def _comma_tuple(optional: bool) -> PrimitiveConstructorSpec:
    """A flag that reads ``a,b`` as ``("a", "b")`` (and ``None`` as None when ``optional``)."""
    return PrimitiveConstructorSpec(
        nargs=1,
        metavar="A,B" + ("|None" if optional else ""),
        instance_from_str=lambda words: (
            None if optional and words[0] == "None" else tuple(s for s in words[0].split(",") if s)
        ),
        is_instance=lambda value: isinstance(value, tuple) or (optional and value is None),
        str_from_instance=lambda value: ["None" if value is None else ",".join(value)],
    )


def config_flags(config_class: type = TrainConfig) -> type:
    """``config_class`` (a dataclass) with its fields annotated for tyro: a subclass with the
    same fields, where :data:`FLAG_NAMES` rename flags, ``eval_modes`` / ``eval_splits`` read
    comma-separated names and ``lora_rank`` is hidden.

    Raises:
        TypeError: a field whose type tyro cannot parse from text (nothing is guessed).
    """
    hints = typing.get_type_hints(config_class)
    markers: dict[str, Any] = {name: tyro.conf.arg(name=flag) for name, flag in FLAG_NAMES.items()}
    markers |= {"eval_modes": _comma_tuple(False), "eval_splits": _comma_tuple(True)}
    markers["lora_rank"] = tyro.conf.Suppress  # --lora / --lora-rank
    for name, hint in hints.items():
        spec = ConstructorRegistry.get_primitive_spec(PrimitiveTypeInfo.make(hint, set()))
        if name not in markers and isinstance(spec, UnsupportedTypeAnnotationError):
            raise TypeError(
                f"{config_class.__name__}.{name}: no command-line parser for {hint}; give it a "
                "constructor in learners/llm/cli.py"
            )
    defaults = config_class()
    specs = [
        (name, Annotated[hints[name], marker], field(default=getattr(defaults, name)))
        for name, marker in markers.items()
        if name in hints
    ]
    return dataclasses.make_dataclass(config_class.__name__, specs, bases=(config_class,))


#: ``TrainConfig`` as the flags see it (:func:`config_flags`).
ConfigFlags = config_flags()


@dataclass
class TrainArgs:
    """Train an LLM agent with multi-turn PPO on per-step advantages from a credit wrapper.

    The flags besides TrainConfig's (``config``, whose fields follow).

    Attributes:
        imports: import MODULE first (repeatable; the current directory is searched): a module
            that registers a credit method or an env makes it a --credit / --env choice.
        env: registered env id, or 'module:Id' (Gymnasium imports module, which registers Id).
        env_kwargs: JSON options for gym.make (default: the recipe of (env, model) in RECIPES,
            {} otherwise).
        max_steps: env step budget, passed as gym.make(..., max_steps=N): the env must take a
            max_steps argument (default: the env's budget).
        credit: credit method: a registered name or alias (agentenvs list shows them).
        state_keys: none: let a state-matching method (gigpo, graphgpo, rtmc) run on an env
            without info['state_key'] (it then gives GRPO's advantages, with a warning); default:
            an error.
        credit_config: JSON options of the credit method's config, e.g. '{"lam": 0.4}' (default:
            its defaults); parse_args replaces them by the built config object.
        judge: the model a model-based credit method consults (its config's judge option):
            'oracle', a local HF model directory or an OpenAI-compatible http(s) URL.
        groups: tasks (credited groups) per iteration.
        group_size: rollouts per task.
        rollout: parallel: a group's members play at once (a grouped vector env); sequential: one
            env per group plays its members one after another.
        vectorization: parallel rollout's sub-envs: in this process, in subprocesses, or in Ray
            actors.
        ray_address: with --vectorization ray: the cluster to join ('auto', 'ray://host:10001';
            default: a local Ray instance).
        model: 'tiny', 'random-60m' (a random 59M-parameter Qwen2 built in code: the GPU recipe),
            'smollm2' or a local HF model dir.
        warm_start: supervised steps before RL, at every turn, with the prompts the learner shows
            (learners/llm/warm_start.py): format, uniformly random admissible actions at the
            states of random walks (the env's action syntax only); demo, the env's expert's
            moves at the states of its own episodes (the env's expert_action hook); none.
        warm_start_steps: the warm start's optimizer steps (the tiny recipe: 200).
        warm_start_lr: the warm start's AdamW learning rate (3e-3 suits the tiny model).
        eval_untrained: evaluate the policy once more before the warm start (HF generation, the
            same tasks and decodings, outcomes in --out/untrained) and report, per split and
            decoding, the change from the untrained policy to the trained one.
        progress: tqdm bars on stderr: warm start (states, steps), every rollout and evaluation
            (episodes done / total, ETA) and the iterations; --no-progress: none (stdout's
            report is the same either way).
        lora: train a LoRA adapter (peft) only.
        lora_rank: the adapter's rank with --lora.
        out: the run directory (metrics, checkpoint, trajectories, exported policy); default: a
            new runs/<env>-<model>-<date>-<time> (see run_dir), so runs never overwrite each
            other.
        resume: continue from --out/checkpoint.pt.
        overwrite: train into an --out that already holds a run (its files are replaced).
        export: write the trained policy to --out/policy: merged (an HF model dir, LoRA merged
            in), adapter (the LoRA adapter alone; needs --lora) or none.
        eval_envs: plain envs that play the test tasks at once (fewer for heavy envs).
        config: the learner's configuration, every field a flag (parse_args makes it a plain
            TrainConfig).
    """

    imports: Annotated[list[str], tyro.conf.arg(name="import"), tyro.conf.UseAppendAction] = field(
        default_factory=list
    )
    env: str = MAIN_JOB_ENV
    env_kwargs: Annotated[dict[str, Any] | None, _JSON] = None
    max_steps: int | None = None
    credit: str = "graph"
    state_keys: Literal["required", "none"] = "required"
    credit_config: Annotated[Any, _JSON] = field(default_factory=dict)
    judge: str | None = None
    groups: int = 2
    group_size: int = 4
    rollout: Literal["parallel", "sequential"] = "parallel"
    vectorization: Literal["sync", "async", "ray"] = "sync"
    ray_address: str | None = None
    model: str = "tiny"
    warm_start: Literal["format", "demo", "none"] = "none"
    warm_start_steps: int = 200
    warm_start_lr: float = 3e-3
    eval_untrained: bool = False
    progress: bool = True
    lora: bool = False
    lora_rank: int = 16
    out: str | None = None
    resume: bool = False
    overwrite: bool = False
    export: Literal["merged", "adapter", "none"] = "merged"
    eval_envs: int = 64
    config: Annotated[ConfigFlags, tyro.conf.OmitArgPrefixes] = field(default_factory=ConfigFlags)


def import_user_modules(argv: Sequence[str]) -> list[str]:
    """Import the modules of installed packages' :data:`PLUGIN_GROUP` entry points, then every
    ``--import MODULE`` of ``argv``, in order, before the other options are checked: a module that
    calls ``agentenvs.wrappers.register_method`` or ``gymnasium.register`` makes its credit method a
    ``--credit`` choice and its env a valid ``--env``. The current directory is searched too (also
    for the module of an ``--env module:Id``, which Gymnasium imports). Returns the module names."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--import", dest="imports", action="append", default=[])
    pre.add_argument("--env", default="")
    known = pre.parse_known_args(argv)[0]
    plugins = [ep.module for ep in importlib.metadata.entry_points(group=PLUGIN_GROUP)]
    names = plugins + known.imports
    if (names or ":" in known.env) and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as error:
            pre.error(f"--import {name}: {error}")
    return names


def _defaults(argv: Sequence[str]) -> TrainArgs:
    """The flags' defaults: the recipe of ``(--env, --model)`` in :data:`RECIPES`, else the
    fields'."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--env", default=MAIN_JOB_ENV)
    pre.add_argument("--model", default="tiny")
    first = pre.parse_known_args(argv)[0]
    recipe = RECIPES.get((first.env, first.model), {})
    names = {f.name for f in dataclasses.fields(TrainArgs)}
    config = ConfigFlags(**{k: v for k, v in recipe.items() if k not in names})
    return TrainArgs(**{k: v for k, v in recipe.items() if k in names}, config=config)


def _error(prog: str, message: str) -> typing.NoReturn:
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


#: Flags that were renamed: the old spelling -> the error that names the new one.
RENAMED = {
    "--format-warm-start": "--format-warm-start N is now --warm-start format --warm-start-steps N "
    "(--warm-start {format,demo,none})",
}


def parse_args(argv: Sequence[str] | None = None, prog: str = "agentenvs train") -> TrainArgs:
    """The flags of ``argv`` (default ``sys.argv[1:]``) after :func:`import_user_modules`;
    ``config`` is a plain :class:`TrainConfig` (``lora_rank`` 0 without ``--lora``) and
    ``credit_config`` the built credit config. A usage error (a :data:`RENAMED` flag among them,
    or ``--warm-start demo`` on an env without an expert) prints one line and exits with 2;
    ``--help`` lists every flag with its default."""
    argv = list(sys.argv[1:] if argv is None else argv)
    for word in argv:
        if word.split("=")[0] in RENAMED:
            _error(prog, RENAMED[word.split("=")[0]])
    import_user_modules(argv)
    args = tyro.cli(TrainArgs, args=argv, default=_defaults(argv), prog=prog)
    if not args.progress:  # transformers' and the hub's own bars (loading, writing) too
        import huggingface_hub.utils
        import transformers

        transformers.utils.logging.disable_progress_bar()
        huggingface_hub.utils.disable_progress_bars()
    values = {f.name: getattr(args.config, f.name) for f in dataclasses.fields(TrainConfig)}
    args.config = TrainConfig(**{**values, "lora_rank": args.lora_rank if args.lora else 0})
    if args.credit not in METHODS:
        _error(prog, f"--credit {args.credit!r}: not a registered method ({', '.join(METHODS)})")
    if args.export == "adapter" and not args.lora:
        _error(prog, "--export adapter needs --lora")
    options = {**args.credit_config, **({} if args.judge is None else {"judge": args.judge})}
    try:
        args.credit_config = make_config(args.credit, **options)
    except (TypeError, ValueError) as error:
        _error(prog, f"--credit {args.credit}: {error}")
    if getattr(args.credit_config, "advantage", None) == "rewards":
        _error(prog, f"--credit {args.credit}: advantage 'rewards' needs a learner with a critic "
               "(agentenvs.learners.sb3.CreditPPO); this learner takes each turn's value as its advantage, "
               "so use 'group_relative'")  # fmt: skip
    if args.warm_start_steps < 0:
        _error(prog, f"--warm-start-steps {args.warm_start_steps}: must be >= 0")
    if args.warm_start == "demo":
        _check_expert(args, prog)
    return args


def _check_expert(args: TrainArgs, prog: str) -> None:
    """Exit with one line when ``--env`` declares no expert for ``--warm-start demo``."""
    from agentenvs.learners.llm.warm_start import expert_of

    env = gym.make(args.env, **_env_kwargs(args))
    try:
        expert_of(env)
    except ValueError as error:
        _error(prog, f"--warm-start demo: {error}")
    finally:
        env.close()


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
        _error(prog, "--resume needs --out, the run directory to continue")
    if args.out is not None:
        if (Path(args.out) / "metrics.csv").exists() and not (args.resume or args.overwrite):
            _error(prog, f"--out {args.out} holds a run: --resume continues it, --overwrite "
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


def _env_kwargs(args: TrainArgs) -> dict[str, Any]:
    return {
        **(args.env_kwargs or {}),
        **({} if args.max_steps is None else {"max_steps": args.max_steps}),
    }


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
            env = gym.make(args.env, **_env_kwargs(args))
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
        **_env_kwargs(args),
    )
    return VectorCreditWrapper(grouped, args.credit, args.credit_config, state_keys=args.state_keys)


def make_eval_envs(args: TrainArgs) -> list[typing.Callable[[], gym.Env]]:
    """Factories of the plain (uncredited) envs that play the test tasks, ``--eval-envs`` at most."""
    env_kwargs = _env_kwargs(args)
    return [lambda: gym.make(args.env, **env_kwargs)] * max(
        1, min(args.eval_envs, args.config.eval_tasks)
    )


def make_policy(args: TrainArgs, dist: Any, prog: str) -> tuple[Any, str]:
    """The policy of ``--model`` (a local HF directory; ``tiny`` and ``smollm2`` are built offline
    once, on rank 0) on this rank's device, and its directory. A missing model exits with one line
    naming ``prog``."""
    import torch
    from agentenvs.learners.llm.models import resolve_model
    from agentenvs.learners.llm.policy import load_policy
    from agentenvs.learners.llm.precision import DTYPES

    try:
        model_dir = resolve_model(args.model) if dist.is_main else None
        dist.barrier()
        model_dir = model_dir or resolve_model(args.model)
    except FileNotFoundError as error:  # e.g. --model smollm2 without its wheel: say how, no trace
        raise SystemExit(f"{prog}: {error}") from None
    if args.config.torch_threads:  # from the start: the warm start runs before the trainer
        torch.set_num_threads(args.config.torch_threads)
    device = dist.device if dist.enabled else "cuda" if torch.cuda.is_available() else "cpu"
    dtype = DTYPES[args.config.weight_dtype]
    policy = load_policy(model_dir, device=device, dtype=dtype, lora_rank=args.config.lora_rank)
    if dist.is_main:
        print(
            f"model {model_dir} on {device}; env {args.env} {_env_kwargs(args)}; credit {args.credit}"
        )
    return policy, str(model_dir)


def warm_start(args: TrainArgs, policy: Any) -> list[float]:
    """``--warm-start-steps`` supervised steps (``--warm-start-lr``) of the ``--warm-start``
    teacher at the states of its walks over the env's train tasks, every turn, with the learner's
    prompts (format: uniformly random admissible actions, the env's action syntax only; demo: the
    env's expert); prints the loss and the time taken and returns the loss of each step (nats per
    response token). ``--warm-start none`` (or 0 steps) does nothing and returns ``[]``."""
    import time

    from agentenvs.learners.llm.warm_start import supervised_warm_start

    if args.warm_start == "none" or args.warm_start_steps < 1:
        return []
    start = time.perf_counter()
    env = gym.make(args.env, **_env_kwargs(args))
    losses = supervised_warm_start(
        policy,
        env,
        env.unwrapped.tasks.ids("train"),
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
        logger = MetricsLogger(Path(args.out) / "untrained", tensorboard=False)
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
        args.out,
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
    run = MetricsLogger(args.out, tensorboard=False)
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

        path = export_policy(trained, os.path.join(args.out, "policy"), args.export == "merged")
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
