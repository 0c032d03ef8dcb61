"""The memory planner's command line: ``python -m agentenvs.learners.llm.plan --help``.

This module holds :func:`parse_bytes` (``"80GiB"`` -> bytes), :func:`parse_image_size`
(``"448"``, ``"448x336"`` -> pixels) and :func:`main`.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence

from agentenvs.learners.llm.plan.arch import ARCHITECTURES, GIB
from agentenvs.learners.llm.plan.config import count_text
from agentenvs.learners.llm.plan.estimate import max_micro_batch_size, plan_memory

__all__ = ["main", "parse_bytes", "parse_image_size"]

_UNITS = {
    "": GIB,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def parse_bytes(text: str | int | float) -> int:
    """``"80"`` / ``"80GiB"`` (binary), ``"80GB"`` (decimal), ``"81559MiB"`` -> bytes.

    A bare number is GiB.

    >>> parse_bytes("80"), parse_bytes("80GB"), parse_bytes("1.5 MiB")
    (85899345920, 80000000000, 1572864)
    """
    if isinstance(text, int | float):
        return int(text * GIB)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(text))
    if m is None or m.group(2).lower() not in _UNITS:
        raise ValueError(f"cannot read a memory size from {text!r} (e.g. 80GiB, 80GB, 81559MiB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def parse_image_size(text: str) -> int | tuple[int, int]:
    """``"448"`` (a square's side) or ``"448x336"`` (height x width) -> pixels.

    >>> parse_image_size("448"), parse_image_size("448x336")
    (448, (448, 336))
    """
    m = re.fullmatch(r"\s*(\d+)\s*(?:[xX*]\s*(\d+)\s*)?", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"cannot read an image size from {text!r} (448, 448x336)")
    return int(m.group(1)) if m.group(2) is None else (int(m.group(1)), int(m.group(2)))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m agentenvs.learners.llm.plan",
        description="Estimate the GPU memory of an LLM-learner training config (no torch needed).",
    )
    p.add_argument("--model", help="built-in name (see --list) or local HF model directory")
    p.add_argument("--list", action="store_true", help="list the built-in architectures")
    p.add_argument(
        "--budget",
        action="store_true",
        help="also print the largest micro-batch that fits --device-mem (the token budget)",
    )
    p.add_argument("--micro-batch", type=int, default=8, help="sequences per forward/backward")
    p.add_argument("--seq-len", type=int, default=1024, help="prompt + response tokens")
    p.add_argument("--response-len", type=int, default=None, help="response tokens (LM head)")
    p.add_argument("--accum", type=int, default=1, help="micro-batches per optimizer step")
    p.add_argument("--lora", type=int, default=0, metavar="RANK", help="LoRA rank (0 = full)")
    p.add_argument("--weights", default="fp32", help="weight dtype: fp32, bf16, fp16")
    p.add_argument("--compute", default=None, help="autocast dtype with fp32 weights (bf16)")
    p.add_argument("--master-weights", action="store_true", help="fp32 master copy")
    p.add_argument("--optimizer-dtype", default="param", help="AdamW states: param, fp32, bf16")
    p.add_argument("--grad-dtype", default=None, help="gradient dtype (default: the params')")
    p.add_argument("--no-kl", action="store_true", help="kl_coef = 0: no reference model")
    p.add_argument("--grad-ckpt", action="store_true", help="gradient checkpointing")
    p.add_argument("--attention", default="sdpa", help="sdpa, flash_attention_2, eager")
    p.add_argument("--device", default="cuda", help="cuda or cpu")
    p.add_argument("--device-mem", default=None, help="device memory, e.g. 80GiB (bare = GiB)")
    p.add_argument("--rollout", default="hf", help="hf, vllm or none (the update alone)")
    p.add_argument("--gen-batch", type=int, default=32, help="prompts per HF generate call")
    p.add_argument("--vllm-util", type=float, default=None, help="vLLM gpu_memory_utilization")
    p.add_argument("--vllm-max-model-len", type=int, default=None)
    p.add_argument("--vllm-num-seqs", type=int, default=None)
    p.add_argument("--overhead", default=None, help="overhead allowance (default 2GiB on cuda)")
    p.add_argument(
        "--images", type=int, default=0, metavar="N", help="images per prompt (a VLM; default 0)"
    )
    p.add_argument(
        "--image-size",
        type=parse_image_size,
        default=448,
        metavar="PX",
        help="image pixels after the processor's limits: 448 or HxW, e.g. 448x336 (default 448)",
    )
    p.add_argument(
        "--train-vision",
        action="store_true",
        help="the VLM's vision tower trains (frozen by default)",
    )
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: print the table (or JSON). Exit status 1 when a device size is given and the plan
    does not fit, 0 otherwise."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.list:
        for name, arch in ARCHITECTURES.items():
            tower = arch.vision
            vision = f", vision {tower.depth} x {tower.width} ({tower.layout})" if tower else ""
            print(
                f"{name:<24}{count_text(arch.num_params):>10}  hidden {arch.hidden_size}, "
                f"{arch.num_layers} layers, vocab {arch.vocab_size}{vision}"
            )
        return 0
    if args.model is None:
        parser.error("--model is required (or --list)")
    device_bytes = parse_bytes(args.device_mem) if args.device_mem is not None else None
    config = dict(
        seq_len=args.seq_len,
        response_len=args.response_len,
        grad_accumulation=args.accum,
        lora_rank=args.lora,
        weight_dtype=args.weights,
        compute_dtype=args.compute,
        master_weights=args.master_weights,
        optimizer_dtype=args.optimizer_dtype,
        grad_dtype=args.grad_dtype,
        kl=not args.no_kl,
        gradient_checkpointing=args.grad_ckpt,
        attention=args.attention,
        device=args.device,
        rollout=args.rollout,
        gen_batch_size=args.gen_batch,
        vllm_gpu_memory_utilization=args.vllm_util,
        vllm_max_model_len=args.vllm_max_model_len,
        vllm_num_seqs=args.vllm_num_seqs,
        overhead_bytes=parse_bytes(args.overhead) if args.overhead is not None else None,
        images_per_prompt=args.images,
        image_size=args.image_size,
        train_vision=args.train_vision,
    )
    plan = plan_memory(
        args.model, device_bytes=device_bytes, micro_batch_size=args.micro_batch, **config
    )
    if args.json:
        print(json.dumps(plan.to_dict(), indent=2, default=str))
    else:
        print(plan.table())
    if args.budget:
        if device_bytes is None:
            parser.error("--budget needs --device-mem")
        n = max_micro_batch_size(args.model, device_bytes, **config)
        seq = plan.details.get("seq_len", args.seq_len)  # a VLM's image tokens included
        rows = (
            f"{args.seq_len}"
            if seq == args.seq_len
            else f"({args.seq_len} + {seq - args.seq_len} image)"
        )
        print(f"largest micro-batch that fits: {n} x {rows} = {n * seq:,} tokens")
    return 1 if plan.fits is False else 0
