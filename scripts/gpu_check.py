"""The learner's GPU acceptance run: real-size models, one PPO update each, measured against the plan.

This script holds :func:`qwen2_config` (a published architecture as a ``Qwen2Config``),
:func:`random_policy` (a randomly initialised policy on a device, nothing downloaded),
:func:`measure` (one case: generation, then one PPO update, timed and its peak memory read) and
:func:`main`, which writes one markdown table. ``scripts/gpu_check.sh`` runs it and then
``pytest -m gpu``.

Cases: Qwen2.5-0.5B and 1.5B architectures, random weights in bf16 with fp32 master weights and
gradient checkpointing, LoRA (rank 64) and full fine-tune, HF generation; Qwen2.5-7B is planned
only (:func:`learners.llm.plan.plan_memory`). Each case builds a :class:`~learners.llm.trainer.Trainer`
over Sokoban envs (they only set up the trainer: no episode is played), samples
``--prompts`` random-token prompts of ``--prompt-len`` tokens with the trainer's own generator
(``--new-tokens`` each), and runs the trainer's own ``update`` on those samples with random
advantages. The tokenizer is the tiny test tokenizer: random prompts need no real vocabulary, and
the model's vocabulary (151,936) is the published one, which sets the logits' memory.

Columns: generation tokens/s (sampled tokens over wall time), update tokens/s (tokens run through
the model in forward and backward over wall time, reference pass included), the measured peak
(``torch.cuda.max_memory_allocated`` over generation and update) and the planner's prediction of
the same tensors (its total without the overhead allowance).

``--dry-run`` builds every config and runs the planner without a GPU (and without torch models):
CI runs it on CPU.

    python scripts/gpu_check.py --dry-run
    python scripts/gpu_check.py --out gpu_check.md        # on a CUDA machine
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from learners.llm.config import TrainConfig  # noqa: E402
from learners.llm.plan import (  # noqa: E402
    ARCHITECTURES,
    GIB,
    MemoryPlan,
    ModelArch,
    plan_memory,
    train_config_kwargs,  # noqa: E402
)

__all__ = ["Case", "CASES", "PLAN_ONLY", "qwen2_config", "plan_case", "random_policy", "main"]


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
    """A :class:`~learners.llm.policy.Policy` of ``case``'s architecture, random bf16 weights on
    ``device`` (initialised there: seconds, where a CPU init of 1.5B takes minutes)."""
    import torch
    from transformers import Qwen2ForCausalLM

    from learners.llm.policy import Policy
    from learners.llm.tiny import build_tiny_tokenizer

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

    from agentenvs.core import Step
    from learners.llm.trainer import Trainer
    from wrappers import GraphCreditWrapper

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
    p.add_argument("--out", type=Path, default=Path("gpu_check.md"), help="the markdown table")
    p.add_argument("--prompts", type=int, default=32, help="prompts sampled per case")
    p.add_argument("--prompt-len", type=int, default=512, help="tokens per prompt")
    p.add_argument("--new-tokens", type=int, default=128, help="tokens sampled per prompt")
    p.add_argument("--micro-batch", type=int, default=8, help="sequences per forward/backward")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run (or, with ``--dry-run``, plan) every case; write the table; 1 if a case failed."""
    args = _parser().parse_args(argv)
    failed = False
    if args.dry_run:
        device, device_bytes = "no device (dry run: planner only)", None
        for case in CASES + PLAN_ONLY:
            qwen2_config(ARCHITECTURES[case.model])  # the configs build
    else:
        import torch

        if not torch.cuda.is_available():
            print("no CUDA device: run with --dry-run", file=sys.stderr)
            return 2
        props = torch.cuda.get_device_properties(0)
        device, device_bytes = f"{props.name} ({_gib(props.total_memory)} GiB)", props.total_memory
    rows = []
    for case in CASES + PLAN_ONLY:
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
    args.out.write_text(table(rows, device, args))
    print(f"wrote {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
