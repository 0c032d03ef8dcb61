"""The trainer's memory check: :mod:`agentenvs.learners.llm.plan`'s estimate against the device, as a warning.

This module holds :func:`device_memory` and :func:`warn_if_unfit` (the trainer calls it once,
before its first update, when the first rollout has given the prompt lengths).

What "the device's memory" is:

* CUDA: the bytes this process can use, ``torch.cuda.mem_get_info``'s free bytes plus what torch
  already reserved (the weights, a vLLM engine running in this process); the plan counts those.
* CPU: nothing is checked (:func:`device_memory` is ``None``): RAM is shared with the OS and other
  processes, swap makes running out slow rather than fatal, and CPU runs train small models.

The estimate never stops a run: a plan that cannot be made (an architecture the planner does not
know) becomes a warning saying so.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import torch
from agentenvs.learners.llm.plan import (
    MemoryPlan,
    check_fits,
    max_micro_batch_size,
    train_config_kwargs,
)

__all__ = ["device_memory", "warn_if_unfit"]

#: Attention implementations the planner models (others are planned as SDPA).
_ATTENTION = ("sdpa", "eager", "flash_attention_2")


def device_memory(device: str) -> int | None:
    """Bytes this process can use on ``device`` (CUDA), or ``None`` (CPU: not checked)."""
    dev = torch.device(device)
    if dev.type != "cuda":
        return None
    free, _ = torch.cuda.mem_get_info(dev)
    return free + torch.cuda.memory_reserved(dev)


def warn_if_unfit(
    config: Any,
    model: Any,
    device: str,
    *,
    seq_len: int,
    response_len: int,
    mini_batch_size: int,
    **vision: Any,
) -> MemoryPlan | None:
    """Plan ``config`` (a ``TrainConfig``) for ``model`` on ``device`` and warn (``UserWarning``,
    with the plan's table and what to change) when it does not fit; returns the plan, or ``None``
    when nothing was checked. ``seq_len``: the longest prompt + the response budget (tokens);
    ``mini_batch_size``: step-samples per optimizer step (more than one micro-batch of them means
    gradient accumulation). ``vision``: a VLM's ``images_per_prompt``, ``image_size`` and
    ``train_vision`` (the planner's fields; ``seq_len`` then counts the text tokens only)."""
    budget = device_memory(device)
    if budget is None:
        return None
    try:
        hf = model.config.to_dict()
        attention = getattr(model.config, "_attn_implementation", None)
        kwargs = train_config_kwargs(
            config, seq_len=seq_len, response_len=response_len, device="cuda", **vision
        )
        kwargs["attention"] = attention if attention in _ATTENTION else "sdpa"
        kwargs["grad_accumulation"] = math.ceil(mini_batch_size / kwargs["micro_batch_size"])
        ok, plan = check_fits(hf, budget, **kwargs)
        if ok:
            return plan
        rows = max_micro_batch_size(hf, budget, **kwargs)
    except Exception as exc:  # an estimate must never stop a run
        warnings.warn(f"memory estimate skipped ({type(exc).__name__}: {exc})", stacklevel=2)
        return None
    fix = (
        f"a micro-batch of at most {rows} x {seq_len} tokens (micro_batch_tokens={rows * seq_len})"
        if rows
        else "not even one sequence fits"
    )
    warnings.warn(
        "this run will likely not fit in device memory:\n"
        f"{plan.table()}\n"
        f"What to change: {fix}; or gradient_checkpointing=True, weight_dtype='bfloat16' (with "
        "master_weights), ref_offload=True, LoRA (lora_rank), backend='vllm' with a smaller share "
        "(see docs/learner-memory.md). This is an estimate: the run goes on.",
        stacklevel=2,
    )
    return plan
