"""The one training loop the model-backed credit parts share, and its report.

This module holds :class:`FitReport` (what every ``fit`` returns) and :func:`fit_epochs`: loss
before, ``epochs`` passes of mini-batch gradient steps, loss after. The progress estimators
(:mod:`agentenvs.wrappers.models.progress`) and the hindsight scorers (:mod:`agentenvs.wrappers.models.hindsight`)
train through it; each supplies its loss over a set of rows and its own measure of the fit. torch
is imported only when :func:`fit_epochs` runs.

>>> report = FitReport(2.0, 0.5, 10, 0.01)
>>> report.loss_before > report.loss_after
True
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["FitReport", "fit_epochs"]


@dataclass(frozen=True)
class FitReport:
    """One ``fit`` call: the loss before and after training (the model's own units: mean squared
    sum error for a progress estimator, cross-entropy or NLL per token for a scorer), the epochs
    (passes over the data; gradient iterations for the full-batch tabular estimator) and the
    wall-clock seconds it took."""

    loss_before: float
    loss_after: float
    epochs: int
    seconds: float


def fit_epochs(
    loss_of: Callable[[np.ndarray], Any],
    measure: Callable[[], float],
    optimizer: Any,
    *,
    n: int,
    epochs: int,
    start: float,
    batch_size: int | None = None,
    rng: np.random.Generator | None = None,
    sort_batches: bool = False,
    clip: float | None = None,
    params: Iterable[Any] = (),
    module: Any = None,
) -> FitReport:
    """Train for ``epochs`` passes over rows ``0..n-1`` and report the loss before and after.

    Args:
        loss_of: ``rows (int64 array) -> scalar torch loss`` of those rows (mean over them).
        measure: the loss reported before and after (called under ``torch.no_grad``).
        optimizer: a torch optimizer over the trained parameters.
        n: rows in the data. epochs: passes (0: measure only). start: ``time.perf_counter()`` when
            the caller's fit began (the report's seconds count from it).
        batch_size: rows per gradient step (``None``: all rows, one step per epoch).
        rng: shuffles the rows at every epoch (``None``: rows in order).
        sort_batches: give each mini-batch's rows to ``loss_of`` in ascending order.
        clip: clip the gradient norm of ``params`` to this value (``None``: no clipping).
        module: a torch module put in train mode for the loop and eval mode after it.
    """
    import torch

    params = list(params)
    size = n if batch_size is None else batch_size
    rows = np.arange(n)
    with torch.no_grad():
        before = float(measure())
    if module is not None:
        module.train()
    for _ in range(epochs):
        order = rows if rng is None else rng.permutation(n)
        for lo in range(0, n, max(size, 1)):
            batch = order[lo : lo + size]
            loss = loss_of(np.sort(batch) if sort_batches else batch)
            optimizer.zero_grad()
            loss.backward()
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(params, clip)
            optimizer.step()
    if module is not None:
        module.eval()
    with torch.no_grad():
        after = float(measure())
    return FitReport(before, after, epochs, time.perf_counter() - start)
