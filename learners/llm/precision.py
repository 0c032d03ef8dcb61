"""Training precision: weight dtype, autocast, fp32 master weights and dynamic loss scaling.

This module holds:

* :data:`DTYPES` - the config's dtype names -> torch dtypes.
* :func:`autocast_dtype` - the autocast dtype a config asks for on a device (``"auto"`` resolved).
* :func:`needs_loss_scaling` - whether a weight/autocast pair computes in float16.
* :class:`MixedPrecision` - the thin stateful part: the autocast context, fp32 master copies of the
  trainable parameters (the optimizer steps them; the low-precision model is refreshed from them
  after each step), and a ``torch.amp.GradScaler`` when float16 is involved (a step whose gradients
  hold inf/NaN is skipped and the scale halved).

The combinations (``weight_dtype`` / ``autocast`` / ``master_weights`` of
:class:`~agentenvs.learners.llm.config.TrainConfig`):

* float32 weights, autocast none or bfloat16: the optimizer on the weights, no scaling;
* float32 weights, float16 autocast: the same with loss scaling;
* bfloat16 weights: masters (fp32 AdamW) or the optimizer on the bf16 weights;
* float16 weights: masters and loss scaling (AdamW on float16 weights is not offered).

With masters the model's gradients (in the weights' dtype) are copied to float32 master gradients
one tensor at a time and freed; the scaler unscales and checks the master gradients (float32, as
``GradScaler`` requires), so one mechanism covers float16 weights and float16 autocast.

>>> autocast_dtype("auto", "float32", "cuda"), autocast_dtype("auto", "float32", "cpu")
('bfloat16', None)
>>> needs_loss_scaling("bfloat16", None), needs_loss_scaling("float32", "float16")
(False, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch

__all__ = ["DTYPES", "autocast_dtype", "needs_loss_scaling", "MixedPrecision"]

#: The dtype names of ``TrainConfig.weight_dtype`` / ``autocast`` and their torch dtypes.
DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


def autocast_dtype(mode: str, weight_dtype: str, device_type: str) -> str | None:
    """The autocast dtype name for ``TrainConfig.autocast`` ``mode`` (``None`` = no autocast).

    ``"auto"`` is bfloat16 on CUDA with float32 weights and nothing otherwise (on CPU, and with
    low-precision weights, which already compute in their own dtype).

    >>> autocast_dtype("float16", "float32", "cpu"), autocast_dtype("auto", "bfloat16", "cuda")
    ('float16', None)
    """
    if mode == "auto":
        return "bfloat16" if device_type == "cuda" and weight_dtype == "float32" else None
    return None if mode == "none" else mode


def needs_loss_scaling(weight_dtype: str, autocast: str | None) -> bool:
    """Whether float16 computes anything (float16 weights or float16 autocast): its 5-bit exponent
    underflows small gradients unless the loss is scaled up."""
    return "float16" in (weight_dtype, autocast)


class MixedPrecision:
    """Autocast, optional fp32 master weights and optional dynamic loss scaling for ``params``.

    Args:
        params: the model's trainable parameters (in the weights' dtype).
        weight_dtype: the weights' dtype name (a :data:`DTYPES` key).
        autocast: the autocast dtype name, or ``None`` (see :func:`autocast_dtype`).
        master_weights: keep float32 copies for the optimizer (only with low-precision weights).
        device_type: ``"cuda"`` or ``"cpu"`` (autocast and the scaler's device).

    Use: build the optimizer on :attr:`optimizer_params`; per mini-batch :meth:`zero_grad`, then
    per micro-batch :meth:`backward` under :meth:`autocast`, then :meth:`step`.
    """

    def __init__(
        self,
        params: Sequence[torch.nn.Parameter],
        *,
        weight_dtype: str = "float32",
        autocast: str | None = None,
        master_weights: bool = True,
        device_type: str = "cpu",
    ) -> None:
        if weight_dtype == "float16" and not master_weights:
            raise ValueError("float16 weights need fp32 master weights (master_weights=True)")
        self.params: list[torch.Tensor] = list(params)
        self.device_type = device_type
        self.autocast_dtype = None if autocast is None else DTYPES[autocast]
        self.masters: list[torch.Tensor] | None = None
        if master_weights and weight_dtype != "float32":
            self.masters = [p.detach().float().clone().requires_grad_(True) for p in self.params]
        self.scaler = (
            torch.amp.GradScaler(device_type)
            if needs_loss_scaling(weight_dtype, autocast)
            else None
        )

    @property
    def optimizer_params(self) -> list[torch.Tensor]:
        """What the optimizer steps: the float32 masters, or the model's parameters."""
        return self.masters if self.masters is not None else self.params

    def autocast(self) -> AbstractContextManager:
        """The forward's autocast context (a no-op without an autocast dtype)."""
        if self.autocast_dtype is None:
            return nullcontext()
        return torch.autocast(self.device_type, dtype=self.autocast_dtype)

    def zero_grad(self) -> None:
        """Free the model's and the masters' gradients."""
        for p in [*self.params, *(self.masters or [])]:
            p.grad = None

    def backward(self, loss: torch.Tensor) -> None:
        """``loss.backward()``, scaled by the current loss scale when scaling."""
        (loss if self.scaler is None else self.scaler.scale(loss)).backward()

    def step(self, optimizer: torch.optim.Optimizer, max_norm: float) -> tuple[float, bool]:
        """Clip the (unscaled) gradients to ``max_norm`` and step; returns the gradient norm
        before clipping and whether the step was skipped (inf/NaN gradients under scaling)."""
        if self.masters is not None:
            for master, p in zip(self.masters, self.params, strict=True):
                master.grad = None if p.grad is None else p.grad.float()
                p.grad = None
        params = self.optimizer_params
        if self.scaler is None:
            norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
            optimizer.step()
            skipped = False
        else:
            self.scaler.unscale_(optimizer)
            norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
            scale = self.scaler.get_scale()
            self.scaler.step(optimizer)
            self.scaler.update()
            skipped = self.scaler.get_scale() < scale
        if self.masters is not None and not skipped:
            with torch.no_grad():
                for master, p in zip(self.masters, self.params, strict=True):
                    p.copy_(master)
        return float(norm), skipped

    def state_dict(self) -> dict[str, Any]:
        """The masters and the scaler's state (for checkpoints)."""
        return {
            "masters": None if self.masters is None else [m.detach() for m in self.masters],
            "scaler": None if self.scaler is None else self.scaler.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` in place (the optimizer keeps its references)."""
        if self.masters is not None:
            with torch.no_grad():
                for master, saved in zip(self.masters, state["masters"], strict=True):
                    master.copy_(saved)
        if self.scaler is not None:
            self.scaler.load_state_dict(state["scaler"])
