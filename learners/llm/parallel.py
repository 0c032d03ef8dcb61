"""The trainer's model under data parallelism: DDP or FSDP2 around the policy, and its full weights.

This module holds :func:`check_parallel` (what ``config.parallel`` supports),
:func:`parallel_model` (DDP around the policy's model, or the model sharded in place by FSDP2),
:func:`full_weights` (every rank holds the whole FSDP model inside it) and :func:`full_policy`
(the trained policy with plain weights on rank 0). The process group itself is
:mod:`agentenvs.learners.llm.distributed`'s; ``docs/learner-distributed.md`` describes the whole.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import torch
from agentenvs.learners.llm.config import TrainConfig
from agentenvs.learners.llm.distributed import Distributed
from agentenvs.learners.llm.policy import Policy

__all__ = ["check_parallel", "parallel_model", "full_weights", "full_policy"]


def check_parallel(config: TrainConfig, model: Any, num_groups: int, dist: Distributed) -> None:
    """Under world size > 1: the same number of groups on every rank, and a config the chosen
    ``config.parallel`` supports (ValueError on every rank otherwise)."""
    cfg = config
    if cfg.backend != "hf":
        raise ValueError("torchrun data parallelism runs the HF backend only (backend='hf')")
    fsdp = cfg.parallel == "fsdp"
    if fsdp and (cfg.lora_rank or hasattr(model, "disable_adapter")):
        raise ValueError("parallel='fsdp' does not shard LoRA policies; use parallel='ddp'")
    if fsdp and (cfg.weight_dtype != "float32" or cfg.autocast == "float16"):
        raise ValueError(
            "parallel='fsdp' needs float32 weights and no float16 autocast (autocast "
            "'bfloat16' computes in bf16); use parallel='ddp' for other precisions"
        )
    high, minus_low = dist.max([num_groups, -num_groups])
    if high != -minus_low:
        raise ValueError(
            f"every rank needs as many groups (envs / blocks); they hold {-minus_low:.0f} to "
            f"{high:.0f}"
        )


def parallel_model(
    model: Any, dist: Distributed, fsdp: bool
) -> tuple[Any, torch.nn.parallel.DistributedDataParallel | None]:
    """The model the update runs, and its DDP wrapper if any: DDP around ``model``, ``model``
    sharded in place by FSDP2 ``fully_shard`` (each decoder layer, then the root), or ``model``."""
    if not dist.enabled:
        return model, None
    if not fsdp:
        # buffers (rotary tables) never change: no broadcast per forward, so ranks may run
        # different numbers of forwards; the gradient all-reduce is the only collective
        ddp = torch.nn.parallel.DistributedDataParallel(model, forward_sync_buffers=False)
        return ddp, ddp
    from torch.distributed.fsdp import fully_shard

    layers = set(getattr(model, "_no_split_modules", None) or ())
    for module in list(model.modules()):
        if type(module).__name__ in layers:
            fully_shard(module)
    fully_shard(model)
    return model, None


@contextlib.contextmanager
def full_weights(model: Any, fsdp: bool) -> Iterator[None]:
    """Under FSDP, every rank holds the whole model inside this context (gathered on entry,
    resharded on exit), so its forwards communicate nothing and ranks may run different
    numbers of them (generation, evaluation, no-grad passes). A no-op otherwise. Every rank
    must enter it together."""
    if not fsdp:
        yield
        return
    from torch.distributed.fsdp import FSDPModule

    sharded = [m for m in model.modules() if isinstance(m, FSDPModule)]
    model.set_reshard_after_forward(False)
    for module in sharded:
        module.unshard()
    try:
        yield
    finally:
        for module in sharded:
            module.reshard()
        model.set_reshard_after_forward(True)


def full_policy(policy: Policy, dist: Distributed, fsdp: bool) -> Policy | None:
    """The trained policy with plain (unsharded) weights, on rank 0; ``None`` on other ranks.
    Under FSDP a CPU copy of the model, gathered from every rank (call on all ranks);
    otherwise ``policy`` itself."""
    if not fsdp:
        return policy if dist.is_main else None
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_model_state_dict,
    )
    from transformers import AutoModelForCausalLM

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    state = get_model_state_dict(policy.model, options=options)
    if not dist.is_main:
        return None
    first = next(iter(state.values()))
    assert isinstance(first, torch.Tensor)  # a full model state dict holds tensors
    dtype = first.dtype
    model = AutoModelForCausalLM.from_config(policy.model.config, dtype=dtype)
    model.load_state_dict(state)
    return dataclasses.replace(policy, model=model.eval(), device="cpu")
