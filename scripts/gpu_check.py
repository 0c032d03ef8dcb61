"""The learner's GPU acceptance run: real-size models, one PPO update each, measured against the
plan; then the GPU recipe, a random-init model trained by demonstration warm start and RL.

This script holds :func:`qwen2_config` (a published architecture as a ``Qwen2Config``),
:func:`random_policy` (a randomly initialised policy on a device, nothing downloaded),
:func:`measure` (one case: generation, then one PPO update, timed and its peak memory read), the
recipe's steps (:func:`recipe_args`, :func:`recipe_seq_len`, :func:`plan_recipe`, :func:`run_recipe`,
:func:`recipe_figures`, :func:`recipe_table`) and :func:`main`, which writes two markdown tables.
``scripts/gpu_check.sh`` runs it and then ``pytest -m gpu``.

Cases: Qwen2.5-0.5B and 1.5B architectures, random weights in bf16 with fp32 master weights and
gradient checkpointing, LoRA (rank 64) and full fine-tune, HF generation; Qwen2.5-7B is planned
only (:func:`agentenvs.learners.llm.plan.plan_memory`). Each case builds a :class:`~agentenvs.learners.llm.trainer.Trainer`
over Sokoban envs (they only set up the trainer: no episode is played), samples
``--prompts`` random-token prompts of ``--prompt-len`` tokens with the trainer's own generator
(``--new-tokens`` each), and runs the trainer's own ``update`` on those samples with random
advantages. The tokenizer is the tiny test tokenizer: random prompts need no real vocabulary, and
the model's vocabulary (151,936) is the published one, which sets the logits' memory.

Columns: generation tokens/s (sampled tokens over wall time), update tokens/s (tokens run through
the model in forward and backward over wall time, reference pass included), the measured peak
(``torch.cuda.max_memory_allocated`` over generation and update) and the planner's prediction of
the same tensors (its total without the overhead allowance).

The recipe (docs/learner-gpu.md, "GPU recipe") is ``examples/train_llm.py --model random-60m``,
run through the same steps (:mod:`agentenvs.cli.train`): the random 59M-parameter Qwen2 of
``learners/llm/tiny.py`` ``RANDOM_MODELS`` (built on the machine, seconds), the demonstration warm
start (the BFS solver's moves), then GraphGPO on Sokoban rooms that need 2-4 moves, its flags
``RECIPES[("agentenvs/Sokoban-v0", "random-60m")]`` of :mod:`agentenvs.cli.train_flags`. Its table has
test success after the warm start -> after RL per decoding (the learner's report, with the paired
95% interval), generation and update tokens/s, seconds per iteration, the wall time and the peak
memory against the planner's.

``--dry-run`` builds every config and runs the planner without a GPU, builds the recipe's model on
CPU (its parameter count is the planner's) and plans the recipe, training nothing: CI runs it on
CPU. ``--smoke`` runs the recipe in miniature (:data:`SMOKE_FLAGS`) on any device, CPU included:
the code path end to end, not the recipe's figures.

    python scripts/gpu_check.py --dry-run
    python scripts/gpu_check.py --out gpu_check.md        # on a CUDA machine
    python scripts/gpu_check.py --smoke --out smoke.md     # anywhere, minutes on a CPU
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from agentenvs.learners.llm.config import TrainConfig  # noqa: E402
from agentenvs.learners.llm.plan import (  # noqa: E402
    ARCHITECTURES,
    GIB,
    MemoryPlan,
    ModelArch,
    plan_memory,
    train_config_kwargs,  # noqa: E402
)

__all__ = [
    "Case",
    "CASES",
    "PLAN_ONLY",
    "RECIPE_MODEL",
    "SMOKE_FLAGS",
    "qwen2_config",
    "plan_case",
    "random_policy",
    "measure",
    "recipe_args",
    "recipe_seq_len",
    "plan_recipe",
    "run_recipe",
    "recipe_figures",
    "recipe_table",
    "main",
]


@dataclass(frozen=True)
class Case:
    """One measured configuration: an architecture of :data:`ARCHITECTURES` and a LoRA rank."""

    model: str
    lora_rank: int

    @property
    def label(self) -> str:
        mode = f"LoRA r{self.lora_rank}" if self.lora_rank else "full"
        return f"{self.model.removesuffix('-Instruct')}, {mode}"


#: The measured cases, smallest first (a failure in one does not stop the next).
CASES = [Case(m, r) for m in ("Qwen2.5-0.5B-Instruct", "Qwen2.5-1.5B-Instruct") for r in (64, 0)]
#: Architectures planned but not built (too slow to initialise and update within the budget).
PLAN_ONLY = [Case("Qwen2.5-7B-Instruct", r) for r in (64, 0)]

#: The GPU recipe's ``--model``: a name of ``agentenvs.learners.llm.tiny.RANDOM_MODELS`` and of the
#: planner's architectures, and with Sokoban a key of ``agentenvs.cli.train_flags.RECIPES``.
RECIPE_MODEL = "random-60m"

#: ``--smoke``: the recipe in miniature (2 warm-start steps, one iteration of 2 groups of 2, 4 test
#: rooms), so that a CPU runs the code path end to end in minutes.
SMOKE_FLAGS = (
    "--warm-start-steps", "2", "--iterations", "1", "--groups", "2", "--group-size", "2",
    "--eval-tasks", "4",
)  # fmt: skip


def qwen2_config(arch: ModelArch):
    """The ``transformers.Qwen2Config`` of a published Qwen2 architecture (SDPA attention)."""
    from transformers import Qwen2Config

    return Qwen2Config(
        vocab_size=arch.vocab_size,
        hidden_size=arch.hidden_size,
        intermediate_size=arch.intermediate_size,
        num_hidden_layers=arch.num_layers,
        num_attention_heads=arch.num_heads,
        num_key_value_heads=arch.num_kv_heads,
        tie_word_embeddings=arch.tie_word_embeddings,
        max_position_embeddings=32768,
        attn_implementation="sdpa",
    )


def train_config(case: Case, args: argparse.Namespace) -> TrainConfig:
    """The learner's configuration of ``case``: bf16 weights, fp32 masters, checkpointing."""
    return TrainConfig(
        lora_rank=case.lora_rank,
        weight_dtype="bfloat16",
        master_weights=True,
        gradient_checkpointing=True,
        micro_batch_size=args.micro_batch,
        gen_batch_size=args.prompts,
        max_new_tokens=args.new_tokens,
        min_shared_prefix=0,  # random prompts share no prefix
        logprob_check_samples=0,
    )


def plan_case(case: Case, args: argparse.Namespace, device_bytes: int | None = None) -> MemoryPlan:
    """The planner's estimate of ``case`` on a CUDA device."""
    kwargs = train_config_kwargs(
        train_config(case, args),
        seq_len=args.prompt_len + args.new_tokens,
        response_len=args.new_tokens,
        device="cuda",
    )
    return plan_memory(ARCHITECTURES[case.model], device_bytes=device_bytes, **kwargs)


def random_policy(case: Case, device: str):
    """A :class:`~agentenvs.learners.llm.policy.Policy` of ``case``'s architecture, random bf16 weights on
    ``device`` (initialised there: seconds, where a CPU init of 1.5B takes minutes)."""
    import torch
    from agentenvs.learners.llm.policy import Policy
    from agentenvs.learners.llm.tiny import build_tiny_tokenizer
    from transformers import Qwen2ForCausalLM

    tokenizer = build_tiny_tokenizer()
    config = qwen2_config(ARCHITECTURES[case.model])
    config.eos_token_id, config.pad_token_id = tokenizer.eos_token_id, tokenizer.pad_token_id
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    if case.lora_rank:
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(r=case.lora_rank, lora_alpha=32, target_modules="all-linear")
        model = get_peft_model(model, lora)
    return Policy(model.eval(), tokenizer, device)


def measure(case: Case, args: argparse.Namespace, device: str = "cuda") -> dict[str, float]:
    """Build ``case``'s trainer, sample, update once: tokens/s, the loss and the peak memory
    (bytes; NaN off CUDA, where the tests run this on the tiny architecture)."""
    import gc

    import gymnasium as gym
    import numpy as np
    import torch
    from agentenvs.learners.llm.trainer import Trainer
    from agentenvs.wrappers import GraphCreditWrapper

    from agentenvs.core import Step

    cuda = device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    policy = random_policy(case, device)
    envs = [lambda: GraphCreditWrapper(gym.make("agentenvs/Sokoban-v0"), group_size=2)] * 2
    out = tempfile.mkdtemp(prefix="gpu_check_")
    trainer = Trainer(
        train_config(case, args), policy, out, envs, tensorboard=False, progress=False
    )
    rng = np.random.default_rng(0)
    vocab = len(policy.tokenizer)
    prompts = rng.integers(3, vocab, size=(args.prompts, args.prompt_len)).tolist()
    trainer.generator.generate(prompts[:2])  # warm-up: kernels, cuBLAS handles
    sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    samples = trainer.generator.generate(prompts)
    sync()
    gen_time = time.perf_counter() - start
    gen_tokens = sum(len(s.token_ids) for s in samples)
    steps = [
        Step(
            observation="",
            action=s.text,
            reward=0.0,
            advantage=float(rng.standard_normal()),
            extras={
                "prompt_ids": np.asarray(p),
                "response_ids": np.asarray(s.token_ids),
                "logprobs": np.asarray(s.logprobs, dtype=np.float32),
            },
        )
        for p, s in zip(prompts, samples, strict=True)
    ]
    start = time.perf_counter()
    stats = trainer.update(steps)
    sync()
    update_time = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated() if cuda else float("nan")
    trainer.close()
    del trainer, policy
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return {
        "gen_tok_s": gen_tokens / gen_time,
        "update_tok_s": stats["update_tokens"] / update_time,
        "peak": peak,
        "loss": stats["loss"],
    }


def recipe_args(out: str | Path, extra: Sequence[str] = ()):
    """The recipe's :class:`~agentenvs.cli.train_flags.TrainArgs`: ``examples/train_llm.py --model
    random-60m`` (its ``RECIPES`` entry), writing to ``out`` (no progress bars, no stored
    trajectories, no export); ``extra`` flags override the recipe's."""
    from agentenvs.cli.train_flags import parse_args

    flags = ["--model", RECIPE_MODEL, "--out", str(out), "--no-progress", "--store", "none"]
    return parse_args([*flags, "--export", "none", *extra], prog="gpu_check.py")


def recipe_seq_len(args) -> int:
    """The longest prompt + response of the recipe's (``args``) episodes in tokens of the random
    models' tokenizer: the longest prompt of 256 states of uniformly random walks through the
    recipe's env, at every turn (the walks read the tokenizer only), plus the response budget."""
    import gymnasium as gym
    from agentenvs.learners.llm.policy import Policy
    from agentenvs.learners.llm.tiny import build_tiny_tokenizer
    from agentenvs.learners.llm.warm_start import collect_states

    from agentenvs.cli.train_flags import env_kwargs

    env = gym.make(args.env, **env_kwargs(args))
    states = collect_states(
        Policy(None, build_tiny_tokenizer()), env, env.unwrapped.tasks.ids("train"), "format",
        max_states=256, prompt_style=args.config.prompt_style,
        history_length=args.config.history_length,
    )  # fmt: skip
    env.close()
    return max(len(s.prompt_ids) for s in states) + args.config.max_new_tokens


def plan_recipe(args, device_bytes: int | None = None) -> MemoryPlan:
    """The planner's estimate of the recipe (``args``) on a CUDA device, its sequences
    :func:`recipe_seq_len` tokens long."""
    kwargs = train_config_kwargs(
        args.config,
        seq_len=recipe_seq_len(args),
        response_len=args.config.max_new_tokens,
        device="cuda",
    )
    return plan_memory(ARCHITECTURES[args.model], device_bytes=device_bytes, **kwargs)


def recipe_figures(
    rows: Sequence[Mapping[str, float]], modes: Sequence[str], split: str = "test"
) -> dict[str, float]:
    """The recipe's figures from the trainer's metric rows: per decoding ``mode``, test success at
    the first evaluation (after the warm start) and the last (after RL), with the paired gain and
    its 95% interval (``<mode>_before``, ``_after``, ``_gain``, ``_low``, ``_high``; NaN where not
    logged); generation and update tokens/s over all iterations (tokens over seconds), the mean
    seconds per iteration (rollout, update and sync; evaluation excluded), the iterations and
    those flagged collapsed.

    >>> rows = [{"iteration": 0.0, "eval/greedy/success_rate": 0.25},
    ...         {"iteration": 1.0, "gen_tokens": 300.0, "time_generate": 2.0,
    ...          "update_tokens": 900.0, "time_update": 1.0, "time_iteration": 4.0},
    ...         {"iteration": 2.0, "gen_tokens": 100.0, "time_generate": 2.0,
    ...          "update_tokens": 300.0, "time_update": 1.0, "time_iteration": 6.0,
    ...          "eval/greedy/success_rate": 0.5, "eval/greedy/success_gain": 0.25,
    ...          "eval/greedy/success_gain_low": 0.0, "eval/greedy/success_gain_high": 0.5}]
    >>> f = recipe_figures(rows, ["greedy"])
    >>> f["greedy_before"], f["greedy_after"], f["greedy_gain"], f["greedy_high"]
    (0.25, 0.5, 0.25, 0.5)
    >>> f["gen_tok_s"], f["update_tok_s"], f["s_per_iteration"], f["iterations"]
    (100.0, 600.0, 5.0, 2.0)
    """
    from agentenvs.learners.llm.metrics import eval_label

    its = [r for r in rows if "time_iteration" in r]

    def total(key: str) -> float:
        return sum(r.get(key, 0.0) for r in its)

    out = {
        "iterations": float(len(its)),
        "collapsed": total("collapsed"),
        "gen_tok_s": total("gen_tokens") / total("time_generate") if its else math.nan,
        "update_tok_s": total("update_tokens") / total("time_update") if its else math.nan,
        "s_per_iteration": total("time_iteration") / len(its) if its else math.nan,
    }
    for mode in modes:
        key = f"eval/{eval_label(split, mode)}/success"
        evals = [r for r in rows if key + "_rate" in r]
        last = evals[-1] if evals else {}
        out[f"{mode}_before"] = evals[0][key + "_rate"] if evals else math.nan
        out[f"{mode}_after"] = last.get(key + "_rate", math.nan)
        for name, suffix in (("gain", "_gain"), ("low", "_gain_low"), ("high", "_gain_high")):
            out[f"{mode}_{name}"] = last.get(key + suffix, math.nan)
    return out


def run_recipe(args) -> dict[str, Any]:
    """Run the recipe ``args`` (:func:`recipe_args`) by the steps of ``examples/train_llm.py``:
    build the envs and the model, warm-start, train. Returns :func:`recipe_figures` with the
    parameter count (``params``), the warm start's first and last loss, the seconds of the warm
    start, of RL (evaluations included) and of the whole run (``wall_s``, the model's build
    included), the peak of ``torch.cuda.max_memory_allocated`` (bytes; NaN off CUDA) and the
    learner's report lines (``report``)."""
    import torch
    from agentenvs.learners.llm.distributed import Distributed

    from agentenvs.cli.train import make_envs, make_policy, report_lines, train, warm_start

    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    dist = Distributed.from_env()
    envs = make_envs(args)
    policy, model_dir = make_policy(args, dist, "gpu_check.py")
    params = policy.model.num_parameters()
    warm = time.perf_counter()
    losses = warm_start(args, policy)
    rl = time.perf_counter()
    rows, splits, _ = train(args, envs, policy, model_dir, dist)
    end = time.perf_counter()
    dist.destroy()
    lines = report_lines(rows, splits, args.config.eval_modes)
    return {
        **recipe_figures(rows, args.config.eval_modes),
        "params": float(params),
        "warm_loss_first": losses[0] if losses else math.nan,
        "warm_loss_last": losses[-1] if losses else math.nan,
        "warm_start_s": rl - warm,
        "rl_s": end - rl,
        "wall_s": end - start,
        "peak": float(torch.cuda.max_memory_allocated()) if cuda else math.nan,
        "report": lines,
    }


def _success(got: Mapping[str, Any], mode: str) -> str:
    """``0.250 -> 0.500 (+0.250, +0.000 to +0.500)`` of ``mode`` in :func:`recipe_figures`."""
    text = f"{got[mode + '_before']:.3f} -> {got[mode + '_after']:.3f}"
    if math.isfinite(got[mode + "_gain"]):
        text += (
            f" ({got[mode + '_gain']:+.3f}, {got[mode + '_low']:+.3f} to "
            f"{got[mode + '_high']:+.3f})"
        )
    return text


def recipe_table(
    args, plan: MemoryPlan, got: Mapping[str, Any] | str | None, device: str, label: str
) -> str:
    """The recipe's markdown table (one row) with its settings, then the learner's report lines:
    ``got`` is :func:`run_recipe`'s figures, a failure's text, or ``None`` (planned only)."""
    from agentenvs.learners.llm.precision import autocast_dtype
    from agentenvs.wrappers.registry import METHODS

    cfg = args.config
    modes = cfg.eval_modes
    credit = METHODS[args.credit].name
    compute = autocast_dtype(cfg.autocast, cfg.weight_dtype, "cuda") or cfg.weight_dtype
    predicted = plan.total - plan.overhead
    if isinstance(got, Mapping):
        cells = [
            f"{got['params']:,.0f}",
            f"{got['warm_loss_first']:.3f} -> {got['warm_loss_last']:.3f}",
            *(_success(got, m) for m in modes),
            f"{got['gen_tok_s']:,.0f}",
            f"{got['update_tok_s']:,.0f}",
            f"{got['s_per_iteration']:.1f}",
            f"{got['wall_s']:.0f} ({got['warm_start_s']:.0f} + {got['rl_s']:.0f})",
            f"{got['collapsed']:.0f} / {got['iterations']:.0f}",
            _gib(got["peak"]) if math.isfinite(got["peak"]) else "-",
        ]
    else:
        cells = [f"{plan.trainable_params:,}", *["-"] * (len(modes) + 7)]
    status = "ran" if isinstance(got, Mapping) else got or "planned only"
    head = [
        f"GPU recipe ({label}) on {device}: `examples/train_llm.py --model {args.model}` "
        f"(agentenvs/cli/train_flags.py RECIPES), Sokoban {args.env_kwargs}; {args.warm_start} warm start "
        f"{args.warm_start_steps} steps (lr {args.warm_start_lr:g}), then {credit} "
        f"{cfg.iterations} iterations x {args.groups} groups x {args.group_size} "
        f"({cfg.ppo_epochs} epochs x {cfg.mini_batches} mini-batches, lr {cfg.lr:g}, warmup "
        f"{cfg.warmup_steps}, KL {cfg.kl_coef:g}); {cfg.prompt_style} prompt, history "
        f"{cfg.history_length}; {cfg.eval_tasks} test rooms per decoding; "
        f"{cfg.weight_dtype} weights, {compute} compute on CUDA; HF generation "
        f"({cfg.gen_batch_size} prompts per call, {cfg.max_new_tokens} new tokens).",
        "",
        "| model | params | warm-start loss | "
        + " | ".join(f"test success {m}: warm start -> RL (gain, 95% interval)" for m in modes)
        + " | generation tok/s | update tok/s | s / iteration | wall s (warm start + RL) | "
        "collapsed iterations | peak GiB | planned GiB (peak phase) | status |",
        "|---|" + "---:|" * (len(cells)) + "---:|---|",
        f"| {args.model} | {' | '.join(cells)} | {_gib(predicted)} ({plan.peak_phase}) | "
        f"{status} |",
    ]
    report = list(got["report"]) if isinstance(got, Mapping) else []
    return "\n".join([*head, *([""] + report if report else [])]) + "\n"


def _gib(n: float) -> str:
    return f"{n / GIB:.1f}"


def _row(case: Case, plan: MemoryPlan, got: dict[str, float] | str | None) -> str:
    predicted = plan.total - plan.overhead
    if isinstance(got, dict):
        ratio = got["peak"] / predicted
        cells = [
            f"{got['gen_tok_s']:,.0f}",
            f"{got['update_tok_s']:,.0f}",
            _gib(got["peak"]),
            f"{ratio:.2f}",
        ]
    else:
        cells = ["-", "-", "-", got or "planned only"]
    return f"| {case.label} | {plan.trainable_params:,} | {' | '.join(cells[:3])} | " + (
        f"{_gib(predicted)} ({plan.peak_phase}) | {cells[3]} |"
    )


def table(rows: Sequence[str], device: str, args: argparse.Namespace) -> str:
    """The markdown table with its header and the settings it ran with."""
    head = [
        f"GPU acceptance run on {device}: bf16 weights + fp32 masters, gradient checkpointing, "
        f"HF generation of {args.prompts} prompts x {args.prompt_len} tokens -> "
        f"{args.new_tokens} new tokens, one PPO update (micro-batch {args.micro_batch}).",
        "",
        "| case | trainable params | generation tok/s | update tok/s | peak GiB | "
        "planned GiB (peak phase) | measured / planned |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    return "\n".join([*head, *rows]) + "\n"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dry-run", action="store_true", help="plan every case; build no model")
    p.add_argument("--out", type=Path, default=Path("gpu_check.md"), help="the markdown tables")
    p.add_argument("--prompts", type=int, default=32, help="prompts sampled per case")
    p.add_argument("--prompt-len", type=int, default=512, help="tokens per prompt")
    p.add_argument("--new-tokens", type=int, default=128, help="tokens sampled per prompt")
    p.add_argument("--micro-batch", type=int, default=8, help="sequences per forward/backward")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--no-recipe", action="store_true", help="skip the GPU recipe")
    what.add_argument("--recipe-only", action="store_true", help="the GPU recipe alone")
    what.add_argument(
        "--smoke", action="store_true", help="the recipe alone, in miniature, on any device"
    )
    p.add_argument(
        "--recipe-out", type=Path, default=Path("runs/gpu_recipe"),
        help="the recipe's run directory (metrics.csv, learning_curve.png, eval_outcomes.jsonl)",
    )  # fmt: skip
    return p


def _cases(args: argparse.Namespace, device: str, device_bytes: int | None) -> tuple[str, bool]:
    """The one-update cases' table (measured unless a dry run) and whether one failed."""
    failed = False
    rows = []
    for case in CASES + PLAN_ONLY:
        if args.dry_run:
            qwen2_config(ARCHITECTURES[case.model])  # the config builds
        plan = plan_case(case, args, device_bytes)
        got: dict[str, float] | str | None = None
        if not args.dry_run and case in CASES:
            try:
                got = measure(case, args)
            except Exception as exc:  # noqa: BLE001 - reported in the table, the next case runs
                failed = True
                got = f"failed: {type(exc).__name__}: {str(exc)[:120]}"
        rows.append(_row(case, plan, got))
        print(rows[-1], flush=True)
    return table(rows, device, args), failed


def _recipe(args: argparse.Namespace, device: str, device_bytes: int | None) -> tuple[str, bool]:
    """The recipe's table (run, in miniature with ``--smoke``, or planned with its model built on
    CPU in a dry run) and whether it failed."""
    from agentenvs.learners.llm.tiny import RANDOM_MODELS, build_tiny_model, build_tiny_tokenizer

    try:
        rargs = recipe_args(args.recipe_out, SMOKE_FLAGS if args.smoke else ())
        plan = plan_recipe(rargs, device_bytes)
    except Exception as exc:  # noqa: BLE001 - reported in the tables (e.g. transformers missing)
        text = f"GPU recipe: failed before it ran: {type(exc).__name__}: {str(exc)[:200]}\n"
        print(text, flush=True)
        return text, True
    got: Mapping[str, Any] | str | None = None
    if args.dry_run:
        built = build_tiny_model(build_tiny_tokenizer(), **RANDOM_MODELS[RECIPE_MODEL])
        if built.num_parameters() != plan.params:
            got = f"failed: built {built.num_parameters():,} params, planned {plan.params:,}"
        label = "dry run: its model built on CPU, planned only"
    else:
        label = "as committed"
        if args.smoke:
            label = "miniature (--smoke): the code path, not the recipe's figures"
        try:
            got = run_recipe(rargs)
        except Exception as exc:  # noqa: BLE001 - reported in the table
            got = f"failed: {type(exc).__name__}: {str(exc)[:120]}"
    text = recipe_table(rargs, plan, got, device, label)
    print(text, flush=True)
    return text, isinstance(got, str)


def main(argv: Sequence[str] | None = None) -> int:
    """Run (or, with ``--dry-run``, plan) every case, then the recipe (``--no-recipe``: not;
    ``--recipe-only`` / ``--smoke``: the recipe alone); write the tables; 1 if something
    failed."""
    args = _parser().parse_args(argv)
    if args.dry_run:
        device, device_bytes = "no device (dry run: planner only)", None
    else:
        import torch

        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(0)
            device = f"{props.name} ({_gib(props.total_memory)} GiB)"
            device_bytes = props.total_memory
        elif args.smoke:
            device, device_bytes = f"CPU ({torch.get_num_threads()} threads)", None
        else:
            print("no CUDA device: run with --dry-run (or --smoke)", file=sys.stderr)
            return 2
    tables, failed = [], False
    parts = ((not (args.recipe_only or args.smoke), _cases), (not args.no_recipe, _recipe))
    for wanted, part in parts:
        if wanted:
            text, bad = part(args, device, device_bytes)
            tables.append(text)
            failed = failed or bad
            args.out.write_text("\n".join(tables))  # each table as soon as it is done
    print(f"wrote {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
