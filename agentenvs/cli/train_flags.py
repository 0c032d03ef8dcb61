"""``agentenvs train``'s flags: the recipes, :class:`TrainArgs` and the argparse parser.

This module holds :data:`MAIN_JOB_ENV`, :data:`ALFWORLD_ENV`, :data:`VISUAL_ENV`, :data:`RECIPES` (per-(env, model)
defaults), :data:`GROUPS` and :data:`FLAGS` (each flag's help group and one-line help),
:data:`FLAG_NAMES`, :data:`RENAMED`, :data:`PLUGIN_GROUP`, :class:`TrainArgs`,
:func:`import_user_modules`, :func:`build_parser`, :func:`parse_args`, :func:`env_kwargs` and
:func:`usage_error`.

The command line is ``agentenvs train [ENV_ID] [FLAGS]`` (``python examples/train_llm.py [ENV_ID]
[FLAGS]`` the same): ENV_ID is positional, as in ``play``, ``bench`` and ``serve``. Every
:class:`TrainArgs` field and every ``TrainConfig`` field is a flag of the same name with dashes
(``kl_coef`` -> ``--kl-coef``; :data:`FLAG_NAMES` keeps two shorter spellings), built by
:func:`build_parser` from the field's type: a bool is ``--x`` / ``--no-x``, a ``Literal`` lists
its choices, an optional value also takes ``None``, a tuple reads comma-separated names, a dict
reads JSON. A field whose type has no rule here, or with no entry in :data:`FLAGS`, raises
:class:`TypeError` when the parser is built (nothing is guessed). Layering: this module imports
``agentenvs.learners`` only inside :func:`build_parser` / :func:`parse_args`, which ``agentenvs
train`` calls when it runs.

>>> args = parse_args(["--iterations", "2", "--prompt", "reference", "--eval-modes", "greedy"])
>>> args.env, args.config.iterations, args.config.prompt_style, args.config.eval_modes, args.groups
('agentenvs/Sokoban-v0', 2, 'reference', ('greedy',), 8)
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.metadata
import json
import os
import sys
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agentenvs.vector import DEFAULT_GROUP_SIZE
from agentenvs.wrappers import make_config
from agentenvs.wrappers.registry import METHODS

if TYPE_CHECKING:
    from agentenvs.learners.llm.config import TrainConfig

__all__ = [
    "MAIN_JOB_ENV",
    "ALFWORLD_ENV",
    "DEFAULT_CREDIT",
    "RECIPES",
    "VISUAL_ENV",
    "GROUPS",
    "FLAGS",
    "FLAG_NAMES",
    "RENAMED",
    "PLUGIN_GROUP",
    "TrainArgs",
    "import_user_modules",
    "build_parser",
    "parse_args",
    "env_kwargs",
    "usage_error",
]

#: The main job's env, and the default ENV_ID; with it, ``--model tiny`` / ``smollm2`` /
#: ``random-60m`` get the recipes below.
MAIN_JOB_ENV = "agentenvs/Sokoban-v0"

#: The ALFWorld line's env: ``--model tiny`` gets the recipe below.
ALFWORLD_ENV = "agentenvs/ALFWorld-v0"

#: The visual board: ``--model tiny-vl`` gets the recipe below.
VISUAL_ENV = "agentenvs/SokobanVisual-v0"

#: The credit method when neither ``--credit`` nor a recipe names one: the wrappers' default
#: (``CreditWrapper.method``, ``VectorCreditWrapper``'s ``method``), since it runs on every env (it
#: needs the outcome only, no ``info["state_key"]``). The recipes name the method they were tuned
#: with (GraphGPO).
DEFAULT_CREDIT = "grpo"

#: Recipes keyed by ``(env id, model)``: defaults of the flags they name when the user names that
#: ENV_ID (or none, for the main job's env) and ``--model`` (any flag overrides them; keys are
#: :class:`TrainArgs` or ``TrainConfig`` fields). ``--help`` shows "recipe" for these flags. The
#: table lives in the command, not in the envs, because its numbers are the learner's budget
#: (steps, groups, iterations) for one model on one env.
#:
#: * Sokoban ``tiny`` (the main job, a randomly initialised model): rooms whose shortest solution
#:   takes 2-4 moves, 6-step episodes, the offsets observation (a form the tiny model can read:
#:   docs/learner-capacity.md), a demonstration warm start of 400 steps of the BFS solver's
#:   moves, then 40 iterations of GraphGPO with 4 epochs x 4 mini-batches, lr warmup and KL 0.05
#:   to the warm-started policy (chosen on the ``validation`` split: docs/learner-recipe.md).
#: * Sokoban ``smollm2``: LoRA on two-step episodes in one-push rooms at temperature 0.7.
#: * ALFWorld ``tiny`` (the ALFWorld line): a format warm start on uniformly random admissible
#:   commands (``help`` left out), then GraphGPO on 8-step episodes, 12 tasks of each test split
#:   per decoding, the untrained model evaluated too.
#: * Sokoban ``random-60m`` (the GPU recipe, docs/learner-gpu.md): the main job's rooms and update
#:   on the grid observation, a demonstration warm start of 300 steps at lr 5e-4, then GraphGPO
#:   on 16 groups of 8 for 30 iterations at lr 1e-4, all 64 test rooms per decoding.
#: * SokobanVisual ``tiny-vl`` (docs/visual-agents.md): the main job's rooms and update on the
#:   board image, a demonstration warm start of 3,500 steps at lr 1e-3 (the tiny VLM's capacity
#:   check needs about 3,000 to read the board), then 60 iterations of GraphGPO (chosen on the
#:   ``validation`` split over 30: docs/visual-agents.md).
RECIPES: dict[tuple[str, str], dict[str, Any]] = {
    (MAIN_JOB_ENV, "tiny"): {
        "env_kwargs": {
            "max_solution_steps": 4,
            "min_solution_steps": 2,
            "max_steps": 6,
            "observation": "offsets",
        },
        "credit": "graph",
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
        "cpu_kernels": "avx2",  # and on other x86-64 CPUs (docs/learner-recipe.md)
    },
    (MAIN_JOB_ENV, "smollm2"): {
        "env_kwargs": {"max_solution_steps": 1, "max_steps": 2},
        "credit": "graph",
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
        "credit": "graph",
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
        "credit": "graph",
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
    (VISUAL_ENV, "tiny-vl"): {
        "env_kwargs": {"max_solution_steps": 4, "min_solution_steps": 2, "max_steps": 6},
        "credit": "graph",
        "warm_start": "demo",
        "warm_start_steps": 3500,
        "warm_start_lr": 1e-3,
        "history_length": 0,
        "groups": 8,
        "group_size": 8,
        "iterations": 60,
        "lr": 3e-4,
        "warmup_steps": 16,
        "kl_coef": 0.05,
        "ppo_epochs": 4,
        "mini_batches": 4,
        "micro_batch_size": 32,
        "max_new_tokens": 16,
        "torch_threads": 1,
    },
}

#: The help groups of ``--help``, in order: key -> title.
GROUPS = {
    "env": "env",
    "credit": "credit",
    "model": "model and warm start",
    "rollout": "rollout",
    "optim": "optimisation",
    "eval": "evaluation",
    "backend": "backend and GPU",
    "output": "output",
}

#: Every flag's help group (a :data:`GROUPS` key) and one-line help, keyed by field name (a
#: :class:`TrainArgs` or ``TrainConfig`` field). The long explanations are in docs/ (the field
#: docstrings of ``TrainConfig`` and docs/cli.md).
FLAGS: dict[str, tuple[str, str]] = {
    # TrainArgs
    "imports": ("env", "import MODULE first, e.g. one that registers envs (repeatable)"),
    "env_kwargs": ("env", "JSON options for gym.make"),
    "max_steps": ("env", "env step budget, passed as max_steps=N (default: the env's)"),
    "credit": ("credit", "credit method: a name or alias (`agentenvs list`)"),
    "state_keys": ("credit", "none: allow an env without info['state_key']"),
    "credit_config": ("credit", "JSON options of the credit method's config"),
    "judge": ("credit", "judge of a model-based method: oracle, HF dir or URL"),
    "groups": ("rollout", "credited groups (tasks) per iteration"),
    "group_size": ("rollout", "episodes per group"),
    "rollout": ("rollout", "parallel: one grouped vector env; sequential: envs"),
    "vectorization": ("rollout", "where parallel rollout's sub-envs run"),
    "ray_address": ("rollout", "Ray cluster with --vectorization ray (default: a local one)"),
    "model": ("model", "tiny, tiny-vl, random-60m, smollm2 or an HF model dir"),
    "warm_start": ("model", "supervised steps before RL (demo: the env's expert)"),
    "warm_start_steps": ("model", "the warm start's optimizer steps"),
    "warm_start_lr": ("model", "the warm start's learning rate"),
    "lora": ("model", "train a LoRA adapter only"),
    "lora_rank": ("model", "the adapter's rank with --lora"),
    "train_vision": ("model", "also train a vision-language model's vision tower"),
    "eval_untrained": ("eval", "also evaluate the untrained policy"),
    "eval_envs": ("eval", "plain envs that play the test tasks at once"),
    "progress": ("output", "progress bars on stderr"),
    "out": ("output", "run directory (default: a new runs/<env>-<model>-<date>-<time>)"),
    "resume": ("output", "continue the run in --out from its checkpoint"),
    "overwrite": ("output", "train into an --out that already holds a run"),
    "export": ("output", "write the trained policy to --out/policy: merged, adapter or none"),
    # TrainConfig
    "train_tasks": ("rollout", "task ids to train on (default: the env's train split)"),
    "test_tasks": ("eval", "task ids to evaluate on, as one split 'test'"),
    "iterations": ("optim", "training iterations (a rollout and an update each)"),
    "lr": ("optim", "AdamW learning rate"),
    "warmup_steps": ("optim", "linear lr warmup over this many optimizer steps"),
    "weight_decay": ("optim", "AdamW weight decay"),
    "grad_clip": ("optim", "max global gradient norm"),
    "clip_ratio": ("optim", "PPO clip epsilon"),
    "clip_ratio_high": ("optim", "upper PPO clip epsilon (None: --clip-ratio)"),
    "clip_ratio_c": ("optim", "dual-clip bound for negative advantages (> 1; None: off)"),
    "loss_agg_mode": ("optim", "how per-token losses become one number"),
    "kl_coef": ("optim", "weight of the KL to the reference policy (0: no reference)"),
    "entropy_coef": ("optim", "entropy bonus weight"),
    "ppo_epochs": ("optim", "passes over each rollout batch"),
    "mini_batches": ("optim", "optimizer steps per epoch"),
    "micro_batch_size": ("optim", "step-samples per forward/backward"),
    "micro_batch_tokens": ("optim", "token budget per forward/backward instead (None: off)"),
    "recompute_old_logprobs": ("optim", "recompute the PPO old log-probs with the trainer"),
    "max_new_tokens": ("rollout", "response tokens per step (None: the env's)"),
    "temperature": ("rollout", "sampling temperature"),
    "top_p": ("rollout", "nucleus sampling"),
    "stop_at_action_end": ("rollout", "stop a response after the env's stop string"),
    "mask_truncated": ("rollout", "no loss on responses cut by the token budget"),
    "history_length": ("rollout", "turns shown in the prompt (None: the env's)"),
    "prompt_style": ("rollout", "compact prompts, or the reference stack's texts"),
    "seed": ("rollout", "seeds the tasks, the sampler and the shuffles"),
    "eval_every": ("eval", "evaluate every N iterations (0: before and after only)"),
    "eval_splits": ("eval", "splits to evaluate (None: every test / test_* split)"),
    "eval_tasks": ("eval", "tasks per split and evaluation"),
    "eval_modes": ("eval", "decodings every evaluation runs"),
    "backend": ("backend", "generation: transformers (hf) or vLLM"),
    "gen_batch_size": ("backend", "prompts per HF generate call"),
    "min_shared_prefix": ("backend", "run a shared prompt prefix once from this many tokens"),
    "vllm_gpu_memory_utilization": ("backend", "share of GPU memory the vLLM engine may take"),
    "vllm_max_model_len": ("backend", "vLLM context length (None: the model's)"),
    "vllm_kv_cache_bytes": ("backend", "vLLM KV cache in bytes (None: from the share above)"),
    "vllm_sleep": ("backend", "free vLLM's GPU memory during each update"),
    "vllm_max_lora_rank": ("backend", "vLLM max_lora_rank (None: the smallest that fits)"),
    "logprob_check_samples": ("backend", "samples scored after each weight sync (0: off)"),
    "weight_dtype": ("backend", "the model's weight dtype"),
    "master_weights": ("backend", "float32 master weights with low-precision weights"),
    "autocast": ("backend", "the forward's autocast dtype"),
    "gradient_checkpointing": ("backend", "recompute activations in backward"),
    "ref_offload": ("backend", "keep the reference model in CPU memory"),
    "torch_threads": ("backend", "CPU threads for torch (0: torch's default)"),
    "cpu_kernels": ("backend", "avx2: the same CPU kernels on every x86-64 CPU with AVX2"),
    "parallel": ("backend", "data parallelism under torchrun"),
    "checkpoint_every": ("output", "save a checkpoint every N iterations (0: at the end)"),
    "store": ("output", "trajectory store of every credited group"),
    "store_extras": ("output", "also store token ids and log-probs"),
}

#: Metavars that say more than the type's (``N``, ``X``, ``TEXT``).
METAVARS = {
    "imports": "MODULE",
    "judge": "JUDGE",
    "ray_address": "ADDRESS",
    "model": "MODEL",
    "out": "DIR",
    "vllm_kv_cache_bytes": "BYTES",
}

#: Fields whose flag is not the field's name (shorter spellings the script always had).
FLAG_NAMES = {"prompt_style": "prompt", "torch_threads": "threads"}

#: ``TrainConfig`` fields with no flag of their own (``lora_rank`` is set by ``--lora`` /
#: ``--lora-rank``, the :class:`TrainArgs` fields).
HIDDEN = {"lora_rank"}

#: Old spellings -> the one-line error that names the new one (``{prog}``: the command).
RENAMED = {
    "--env": "the env id is positional now: {prog} ENV_ID [FLAGS] (e.g. {prog} "
    "agentenvs/ALFWorld-v0 --model tiny)",
    "--format-warm-start": "--format-warm-start N is now --warm-start format --warm-start-steps N",
}

#: The entry-point group of installed packages' credit methods (each entry names a module, which
#: registers its methods when imported).
PLUGIN_GROUP = "agentenvs.credit_methods"


def _train_config() -> TrainConfig:
    from agentenvs.learners.llm.config import TrainConfig

    return TrainConfig()


@dataclass
class TrainArgs:
    """The run's settings: env, credit, groups, model, outputs, and ``config``, the learner's
    ``TrainConfig`` (one line of help per field: :data:`FLAGS`; in full: docs/cli.md)."""

    env: str = MAIN_JOB_ENV
    imports: list[str] = field(default_factory=list)
    env_kwargs: dict[str, Any] | None = None
    max_steps: int | None = None
    credit: str = DEFAULT_CREDIT
    state_keys: Literal["required", "none"] = "required"
    credit_config: Any = field(default_factory=dict)
    judge: str | None = None
    groups: int = 2
    group_size: int = DEFAULT_GROUP_SIZE
    rollout: Literal["parallel", "sequential"] = "parallel"
    vectorization: Literal["sync", "async", "ray"] = "sync"
    ray_address: str | None = None
    model: str = "tiny"
    warm_start: Literal["format", "demo", "none"] = "none"
    warm_start_steps: int = 200
    warm_start_lr: float = 3e-3
    cpu_kernels: Literal["native", "avx2"] = "native"
    eval_untrained: bool = False
    progress: bool = True
    lora: bool = False
    lora_rank: int = 16
    train_vision: bool = False
    out: str | None = None
    resume: bool = False
    overwrite: bool = False
    export: Literal["merged", "adapter", "none"] = "merged"
    eval_envs: int = 64
    config: TrainConfig = field(default_factory=_train_config)

    @property
    def run_path(self) -> str:
        """``out`` once the run directory is chosen (``agentenvs.cli.train.main`` sets it)."""
        if self.out is None:
            raise RuntimeError("the run directory is not chosen yet")
        return self.out


# -- the parser builder --------------------------------------------------------------------------


def _json_object(text: str) -> dict[str, Any]:
    """The JSON object ``text``; anything else is a usage error."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc.msg}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object like '{{\"key\": 1}}': {text!r}")
    return value


def _named(name: str, parse: Callable[[str], Any]) -> Callable[[str], Any]:
    parse.__name__ = name  # argparse names the type in "invalid NAME value"
    return parse


def _optional(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    return _named(parse.__name__, lambda text: None if text == "None" else parse(text))


def _names(choices: Sequence[str] | None) -> Callable[[str], tuple[str, ...]]:
    """``a,b`` -> ``("a", "b")``, each among ``choices`` when given."""

    def parse(text: str) -> tuple[str, ...]:
        names = tuple(s for s in text.split(",") if s)
        bad = [n for n in names if choices is not None and n not in choices]
        if bad:
            raise argparse.ArgumentTypeError(f"{bad[0]!r} is not one of {','.join(choices or ())}")
        return names

    return _named("names", parse)


class _Switch(argparse.Action):
    """``--x`` sets True, ``--no-x`` False."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        name = option_strings[0]
        super().__init__([name, "--no-" + name[2:]], dest, nargs=0, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option: str | None = None) -> None:
        setattr(namespace, self.dest, not (option or "").startswith("--no-"))

    def format_usage(self) -> str:
        return " | ".join(self.option_strings)


def _literal(hint: Any) -> tuple[str, ...] | None:
    return typing.get_args(hint) if typing.get_origin(hint) is Literal else None


def _argument(name: str, hint: Any) -> dict[str, Any]:
    """``add_argument`` keywords for a field of type ``hint``.

    Raises:
        TypeError: a type with no command-line rule here.
    """
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    optional = typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1
    inner = args[0] if optional else hint
    if inner is bool and not optional:
        return {"action": _Switch}
    if (choices := _literal(inner)) is not None:
        if not optional:
            return {"choices": list(choices), "metavar": None}
        return {"choices": [*choices, None], "type": _optional(str), "metavar": None}
    parsers: dict[Any, tuple[Callable[[str], Any], str]] = {
        int: (int, "N"),
        float: (float, "X"),
        str: (str, "TEXT"),
    }
    if inner in parsers:
        parse, metavar = parsers[inner]
        return {"type": _optional(parse) if optional else parse, "metavar": metavar}
    origin, items = typing.get_origin(inner), typing.get_args(inner)
    if origin is dict:
        return {"type": _optional(_json_object) if optional else _json_object, "metavar": "JSON"}
    if origin is tuple and len(items) == 2 and items[1] is Ellipsis:
        if items[0] is str or _literal(items[0]) is not None:
            choices = _literal(items[0])
            parse = _names(choices)
            metavar = ",".join(choices) if choices else "A,B"
            return {"type": _optional(parse) if optional else parse, "metavar": metavar}
    if origin is list and items == (str,):
        return {"nargs": "+", "metavar": "ID"}
    raise TypeError(
        f"{name}: no command-line parser for {hint}; give it a rule in agentenvs/cli/train_flags.py"
    )


def _recipe_fields() -> set[str]:
    return {key for recipe in RECIPES.values() for key in recipe}


def _default_text(text: str, default: Any, recipe: bool) -> str:
    """`` (default: X)`` after a flag's help, ``(default: recipe, else X)`` for a flag a recipe
    sets; nothing when the help says its default itself (``default: ...`` or ``None: ...``)."""
    if "default:" in text or (default is None and "None:" in text and not recipe):
        return ""
    if isinstance(default, bool):
        shown = "on" if default else "off"
    elif isinstance(default, tuple):
        shown = ",".join(default)
    elif isinstance(default, dict | list):
        shown = json.dumps(default) if default else "none"
    else:
        shown = "none" if default is None else str(default)
    return f" (default: recipe, else {shown})" if recipe else f" (default: {shown})"


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=34, width=100)


EPILOG = """\
ENV_ID: a registered env id (`agentenvs list`) or module:Id (Gymnasium imports module, which
registers Id); default {main}.
"recipe, else X": the default comes from the recipe of (ENV_ID, --model) when there is one, else
it is X. The recipes (their values: docs/cli.md):
{recipes}
Every flag in full: docs/cli.md."""


def build_parser(
    prog: str = "agentenvs train", config_class: type | None = None
) -> argparse.ArgumentParser:
    """The parser of ``agentenvs train``: ENV_ID, then one flag per :class:`TrainArgs` field and
    per field of ``config_class`` (default ``TrainConfig``), in the help groups of :data:`GROUPS`.

    Raises:
        TypeError: a field whose type has no parser rule, or with no entry in :data:`FLAGS`.
    """
    if config_class is None:
        from agentenvs.learners.llm.config import TrainConfig

        config_class = TrainConfig
    recipes = "\n".join(f"  {prog} {env} --model {model}" for env, model in RECIPES)
    parser = argparse.ArgumentParser(
        prog=prog,
        usage="%(prog)s [ENV_ID] [FLAGS]",
        description="Train an LLM agent with multi-turn PPO on the per-step advantages of a "
        "credit wrapper.",
        epilog=EPILOG.format(main=MAIN_JOB_ENV, recipes=recipes),
        formatter_class=_Formatter,
    )
    groups = {key: parser.add_argument_group(title) for key, title in GROUPS.items()}
    groups["env"].add_argument(
        "env", nargs="?", default=MAIN_JOB_ENV, metavar="ENV_ID", help="the env (see below)"
    )
    in_recipes = _recipe_fields()
    fields: list[tuple[dataclasses.Field[Any], type]] = [
        (f, TrainArgs) for f in dataclasses.fields(TrainArgs) if f.name not in ("env", "config")
    ]
    fields += [(f, config_class) for f in dataclasses.fields(config_class)]
    hints = {
        TrainArgs: typing.get_type_hints(TrainArgs, localns={"TrainConfig": config_class}),
        config_class: typing.get_type_hints(config_class),
    }
    for f, owner in fields:
        if owner is config_class and f.name in HIDDEN:
            continue
        hint = hints[owner][f.name]
        if f.name == "credit_config":  # JSON here; parse_args replaces it by the built config
            kwargs: dict[str, Any] = {"type": _json_object, "metavar": "JSON"}
        else:
            kwargs = _argument(f"{owner.__name__}.{f.name}", hint)
        if f.name not in FLAGS:
            raise TypeError(
                f"{owner.__name__}.{f.name}: no help line; give it a group and one line in FLAGS "
                "(agentenvs/cli/train_flags.py)"
            )
        group, text = FLAGS[f.name]
        default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        if f.name == "credit":
            kwargs["choices"] = sorted(METHODS)  # names and aliases
            kwargs["metavar"] = "METHOD"
        if f.name == "imports":
            kwargs = {"action": "append", "dest": "imports", "metavar": "MODULE"}
            flag = "--import"
        else:
            flag = "--" + FLAG_NAMES.get(f.name, f.name).replace("_", "-")
        if "metavar" in kwargs and f.name in METAVARS:
            kwargs["metavar"] = METAVARS[f.name]
        if f.name != "imports":
            text += _default_text(text, default, f.name in in_recipes)
        kwargs.setdefault("dest", f.name)
        groups[group].add_argument(flag, default=default, help=text, **kwargs)
    return parser


def import_user_modules(argv: Sequence[str]) -> list[str]:
    """Import the modules of installed packages' :data:`PLUGIN_GROUP` entry points, then every
    ``--import MODULE`` of ``argv``, in order, before the other options are checked: a module that
    calls ``agentenvs.wrappers.register_method`` or ``gymnasium.register`` makes its credit method a
    ``--credit`` choice and its env a valid ENV_ID. The current directory is searched too (also
    for the module of an ENV_ID ``module:Id``, which Gymnasium imports). Returns the module names."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--import", dest="imports", action="append", default=[])
    known = pre.parse_known_args(argv)[0]
    plugins = [ep.module for ep in importlib.metadata.entry_points(group=PLUGIN_GROUP)]
    names = plugins + known.imports
    module_id = any(":" in w and not w.startswith(("-", "{")) for w in argv)
    if (names or module_id) and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as error:
            pre.error(f"--import {name}: {error}")
    return names


def usage_error(prog: str, message: str) -> typing.NoReturn:
    """Print ``PROG: error: MESSAGE`` on stderr and exit with status 2 (a usage error)."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def parse_args(argv: Sequence[str] | None = None, prog: str = "agentenvs train") -> TrainArgs:
    """The flags of ``argv`` (default ``sys.argv[1:]``) after :func:`import_user_modules`, on top
    of the recipe of (ENV_ID, ``--model``); ``config`` is a plain ``TrainConfig`` (``lora_rank``
    0 without ``--lora``) and ``credit_config`` the built credit config. A usage error (a
    :data:`RENAMED` spelling among them, a bad value, ``--warm-start demo`` on an env without an
    expert) prints one line and exits with 2; ``--help`` prints the grouped flags and exits with 0.
    """
    from agentenvs.learners.llm.config import TrainConfig

    argv = list(sys.argv[1:] if argv is None else argv)
    for word in argv:
        if word == "--":
            break
        if word.split("=")[0] in RENAMED:
            usage_error(prog, RENAMED[word.split("=")[0]].format(prog=prog))
    import_user_modules(argv)
    parser = build_parser(prog)
    first = parser.parse_args(argv)
    recipe = RECIPES.get((first.env, first.model))
    if recipe:
        parser.set_defaults(**recipe)
    values = vars(parser.parse_args(argv) if recipe else first)
    own = {f.name for f in dataclasses.fields(TrainArgs)} - {"config"}
    config_values = {k: v for k, v in values.items() if k not in own}
    config_values["lora_rank"] = values["lora_rank"] if values["lora"] else 0
    try:
        config = TrainConfig(**config_values)
    except ValueError as error:
        usage_error(prog, str(error))
    args = TrainArgs(**{k: v for k, v in values.items() if k in own}, config=config)
    if not args.progress:  # transformers' and the hub's own bars (loading, writing) too
        import transformers
        from huggingface_hub.utils import disable_progress_bars  # type: ignore[attr-defined]

        transformers.utils.logging.disable_progress_bar()
        disable_progress_bars()
    if args.export == "adapter" and not args.lora:
        usage_error(prog, "--export adapter needs --lora")
    options = {**args.credit_config, **({} if args.judge is None else {"judge": args.judge})}
    try:
        args.credit_config = make_config(args.credit, **options)
    except (TypeError, ValueError) as error:
        usage_error(prog, f"--credit {args.credit}: {error}")
    if getattr(args.credit_config, "advantage", None) == "rewards":
        usage_error(prog, f"--credit {args.credit}: advantage 'rewards' needs a learner with a critic "
               "(agentenvs.learners.sb3.CreditPPO); this learner takes each turn's value as its "
               "advantage, so use 'group_relative'")  # fmt: skip
    if args.warm_start_steps < 0:
        usage_error(prog, f"--warm-start-steps {args.warm_start_steps}: must be >= 0")
    if args.groups < 1 or args.group_size < 1:
        usage_error(
            prog, f"--groups {args.groups} --group-size {args.group_size}: both must be >= 1"
        )
    if args.warm_start == "demo":
        _check_expert(args, prog)
    return args


def _check_expert(args: TrainArgs, prog: str) -> None:
    """Exit with one line when ENV_ID declares no expert for ``--warm-start demo``."""
    import gymnasium as gym

    from agentenvs.learners.llm.warm_start import expert_of

    env = gym.make(args.env, **env_kwargs(args))
    try:
        expert_of(env)
    except ValueError as error:
        usage_error(prog, f"--warm-start demo: {error}")
    finally:
        env.close()


def env_kwargs(args: TrainArgs) -> dict[str, Any]:
    """``gym.make``'s keyword arguments: ``--env-kwargs`` with ``--max-steps`` on top."""
    return {
        **(args.env_kwargs or {}),
        **({} if args.max_steps is None else {"max_steps": args.max_steps}),
    }
