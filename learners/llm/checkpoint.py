"""The trainer's checkpoint file: model, optimizer, learning-rate schedule, precision state and RNGs.

This module holds :class:`Checkpointer` (its ``save`` and ``load``; under FSDP the full model and
optimizer state, gathered onto rank 0's CPU), and :func:`rng_state` / :func:`set_rng_state`
(torch, CUDA, NumPy and Python streams). What else a checkpoint holds (iteration, task-cursor
position, config) is the caller's ``progress``; see :class:`~agentenvs.learners.llm.trainer.Trainer`.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from agentenvs.learners.llm.distributed import Distributed
from agentenvs.learners.llm.precision import MixedPrecision

__all__ = ["Checkpointer", "rng_state", "set_rng_state"]


def rng_state() -> dict[str, Any]:
    """This process's torch, CUDA, NumPy and Python RNG states."""
    return {
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "numpy_rng": np.random.get_state(),
        "python_rng": random.getstate(),
    }


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` returned."""
    torch.set_rng_state(state["torch_rng"].cpu())
    if state["cuda_rng"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    np.random.set_state(state["numpy_rng"])
    random.setstate(state["python_rng"])


def _state_dicts(
    model: Any, optimizer: torch.optim.Optimizer, fsdp: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The model's and the optimizer's state dicts (under FSDP gathered whole onto rank 0's
    CPU, which every rank must join; other ranks get empty dicts)."""
    if not fsdp:
        return model.state_dict(), optimizer.state_dict()
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_model_state_dict,
        get_optimizer_state_dict,
    )

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return (
        get_model_state_dict(model, options=options),
        get_optimizer_state_dict(model, optimizer, options=options),
    )


@dataclass
class Checkpointer:
    """Saves and restores the training state of one process of a run.

    Attributes:
        model: the policy's model (under FSDP, sharded in place).
        optimizer, precision: the update's optimizer and mixed-precision state.
        dist: this process's place in a ``torchrun`` job.
        fsdp: whether ``model`` is sharded by FSDP2.
        scheduler: the optimizer's learning-rate schedule (its position: the warmup), or None.
    """

    model: Any
    optimizer: torch.optim.Optimizer
    precision: MixedPrecision
    dist: Distributed
    fsdp: bool
    scheduler: Any = None

    def save(self, path: Path, progress: Mapping[str, Any]) -> None:
        """Write ``path`` (atomically, through ``path.tmp``): the model, optimizer and precision
        state, ``progress`` (the caller's keys) and every RNG state.

        Under world size > 1 call it on every rank: rank 0 writes the file, with every rank's
        RNG states (``rank_rng``; the top-level ones are rank 0's) and, under FSDP, the full
        (gathered) model and optimizer state."""
        dist = self.dist
        model_state, optimizer_state = _state_dicts(self.model, self.optimizer, self.fsdp)
        rank_rng = dist.gather(rng_state())
        if dist.is_main:
            state = {
                "model": model_state,
                "optimizer": optimizer_state,
                "precision": self.precision.state_dict(),
                "scheduler": None if self.scheduler is None else self.scheduler.state_dict(),
                **progress,
                **rank_rng[0],
            }
            if dist.enabled:
                state["rank_rng"] = rank_rng
            tmp = path.with_suffix(".tmp")
            torch.save(state, tmp)
            tmp.replace(path)
        dist.barrier()  # the file is complete before any rank reads it

    def load(self, path: Path, device: str) -> dict[str, Any]:
        """Restore a :meth:`save` file (tensors mapped to ``device``) into the model, optimizer,
        precision and this process's RNG streams; returns the whole state (the caller reads its
        ``progress``).

        Under world size > 1 every rank reads the file (a path all ranks see); each takes its
        own RNG states when the checkpoint was written by as many ranks, else the streams
        restart from the seed (a warning: the run continues, not bit-exactly)."""
        state = torch.load(path, map_location=device, weights_only=False)
        model, optimizer = self.model, self.optimizer
        if self.fsdp:
            from torch.distributed.checkpoint.state_dict import (
                StateDictOptions,
                set_model_state_dict,
                set_optimizer_state_dict,
            )

            options = StateDictOptions(full_state_dict=True)
            set_model_state_dict(model, state["model"], options=options)
            set_optimizer_state_dict(model, optimizer, state["optimizer"], options=options)
        else:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
        self.precision.load_state_dict(state["precision"])
        if self.scheduler is not None and state.get("scheduler") is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        rank_rng = state.get("rank_rng", [state])
        if len(rank_rng) == self.dist.world_size:
            set_rng_state(rank_rng[self.dist.rank])
        else:
            warnings.warn(
                f"{path} was written by {len(rank_rng)} process(es), resumed by "
                f"{self.dist.world_size}: random streams restart from the seed (not bit-exact)",
                stacklevel=3,
            )
        return state
