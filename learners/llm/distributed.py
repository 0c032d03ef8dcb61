"""Data-parallel training across processes: the process group ``torchrun`` sets up, and the few
collectives the learner needs.

This module holds:

* :class:`Distributed` - this process's rank, world size and device, read from the variables
  ``torchrun`` sets (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``);
  the backend is gloo on CPU and nccl on CUDA (device ``cuda:LOCAL_RANK``). A process not launched
  by ``torchrun`` gets world size 1 and every collective returns its input without communicating.
* :data:`COUNT_METRICS` - the per-iteration metrics that are counts (summed across ranks; the
  others are averaged).

How the trainer uses it is written up in ``docs/learner-distributed.md``.

>>> d = Distributed()  # one process: no process group, no communication
>>> d.world_size, d.is_main, d.enabled, d.sum([1.0, 2.5]), d.shard(["a", "b", "c"])
(1, True, False, [1.0, 2.5], ['a', 'b', 'c'])
>>> Distributed(rank=1, world_size=2).shard(["a", "b", "c"])  # contiguous, sizes differ by <= 1
['c']
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

import torch
import torch.distributed as dist

__all__ = ["Distributed", "COUNT_METRICS"]

T = TypeVar("T")

#: Iteration metrics that are counts (or counts per second): summed across ranks. Every other
#: metric is averaged over the ranks that report it (NaNs ignored). ``credit/*`` metrics are
#: sums over trajectories already and are summed too.
COUNT_METRICS = frozenset({"groups", "groups_dropped", "gen_tokens", "gen_tokens_per_s"})


@dataclass(frozen=True)
class Distributed:
    """Where this process sits in a data-parallel job.

    Attributes:
        rank: this process's index in ``[0, world_size)``.
        world_size: number of processes (1: not distributed, every collective is a no-op).
        local_rank: index on this machine (picks the GPU).
        device: ``"cpu"`` or ``"cuda:<local_rank>"``; collectives run on tensors there.
        backend: ``"gloo"``, ``"nccl"`` or ``None`` (world size 1).
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: str = "cpu"
    backend: str | None = None

    @classmethod
    def from_env(cls, device_type: str | None = None, timeout_s: float = 1800.0) -> Distributed:
        """Join the job ``torchrun`` launched (or return world size 1 when it did not).

        ``device_type``: ``"cpu"`` (gloo) or ``"cuda"`` (nccl, one GPU per local rank); default
        CUDA when available. Initialises the default process group unless it already is, with
        ``timeout_s`` seconds for every collective (a rank that never joins fails the others after
        that long instead of hanging).
        """
        env = os.environ
        try:
            world = int(env.get("WORLD_SIZE", "1"))
        except ValueError as exc:
            raise ValueError(f"WORLD_SIZE must be an integer, got {env['WORLD_SIZE']!r}") from exc
        if world < 1:
            raise ValueError(f"WORLD_SIZE must be >= 1, got {world}")
        if world == 1 and not dist.is_initialized():
            return cls()
        missing = [k for k in ("RANK", "MASTER_ADDR", "MASTER_PORT") if k not in env]
        if missing and not dist.is_initialized():
            raise ValueError(
                f"WORLD_SIZE={world} but {', '.join(missing)} unset: launch with torchrun"
            )
        rank = int(env.get("RANK", "0"))
        local_rank = int(env.get("LOCAL_RANK", str(rank)))
        if not 0 <= rank < world:
            raise ValueError(f"RANK must be in [0, {world}), got {rank}")
        if device_type is None:
            device_type = "cuda" if torch.cuda.is_available() else "cpu"
        if device_type not in ("cpu", "cuda"):
            raise ValueError(f"device_type must be 'cpu' or 'cuda', got {device_type!r}")
        device = "cpu"
        if device_type == "cuda":
            if local_rank >= torch.cuda.device_count():
                raise ValueError(
                    f"LOCAL_RANK {local_rank} has no GPU ({torch.cuda.device_count()} visible)"
                )
            torch.cuda.set_device(local_rank)  # so plain "cuda" means this rank's GPU too
            device = f"cuda:{local_rank}"
        backend = "nccl" if device_type == "cuda" else "gloo"
        if not dist.is_initialized():
            dist.init_process_group(
                backend, rank=rank, world_size=world, timeout=timedelta(seconds=timeout_s)
            )
        else:
            backend, rank, world = dist.get_backend(), dist.get_rank(), dist.get_world_size()
        return cls(rank, world, local_rank, device, backend)

    @property
    def enabled(self) -> bool:
        """More than one process."""
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """Rank 0: the process that writes files (metrics, TensorBoard, checkpoints)."""
        return self.rank == 0

    def shard(self, items: Sequence[T]) -> list[T]:
        """This rank's contiguous slice of ``items`` (the first ``len % world_size`` ranks get one
        more); concatenating every rank's slice in rank order gives ``items`` back."""
        size, extra = divmod(len(items), self.world_size)
        start = self.rank * size + min(self.rank, extra)
        return list(items[start : start + size + (self.rank < extra)])

    def _reduce(self, values: Sequence[float], op: dist.ReduceOp.RedOpType) -> list[float]:
        if not self.enabled:
            return [float(v) for v in values]
        tensor = torch.tensor([float(v) for v in values], dtype=torch.float64, device=self.device)
        dist.all_reduce(tensor, op=op)
        return tensor.tolist()

    def sum(self, values: Sequence[float]) -> list[float]:
        """Element-wise sum of ``values`` over the ranks (every rank gives as many)."""
        return self._reduce(values, dist.ReduceOp.SUM)

    def max(self, values: Sequence[float]) -> list[float]:
        """Element-wise maximum of ``values`` over the ranks."""
        return self._reduce(values, dist.ReduceOp.MAX)

    def broadcast_(self, tensors: Iterable[torch.Tensor], src: int = 0) -> None:
        """Overwrite each of ``tensors`` (contiguous, on :attr:`device`) in place with rank
        ``src``'s."""
        if not self.enabled:
            return
        with torch.no_grad():
            for tensor in tensors:
                dist.broadcast(tensor, src)

    def gather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj`` (picklable), in rank order, on every rank."""
        if not self.enabled:
            return [obj]
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def reduce_metrics(
        self, metrics: dict[str, float], sums: Collection[str] = COUNT_METRICS
    ) -> dict[str, float]:
        """One metrics dict for the job: keys in ``sums`` (and ``credit/*``) summed over the ranks,
        the others averaged over the ranks that report them (NaN where none has a finite value).
        Every rank gets the same dict; ranks may report different keys."""
        if not self.enabled:
            return dict(metrics)
        every = self.gather(metrics)
        out = {}
        for key in dict.fromkeys(k for m in every for k in m):
            values = [float(m[key]) for m in every if key in m]
            if key in sums or key.startswith("credit/"):
                out[key] = math.fsum(values)
                continue
            finite = [v for v in values if not math.isnan(v)]
            out[key] = math.fsum(finite) / len(finite) if finite else math.nan
        return out

    def barrier(self) -> None:
        """Wait until every rank gets here."""
        if self.enabled:
            dist.barrier(device_ids=[self.local_rank] if self.backend == "nccl" else None)

    def destroy(self) -> None:
        """Leave the process group (at the end of a job)."""
        if self.enabled and dist.is_initialized():
            dist.destroy_process_group()
