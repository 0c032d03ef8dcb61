"""The shared pieces of the progress estimators of :mod:`agentenvs.wrappers.models.progress` (docs/spa.md,
section 5): what every estimator implements and the unit layout, targets and loss they share.

This module holds:

* :class:`ProgressEstimator` - the protocol: ``trained``, :meth:`~ProgressEstimator.contributions`,
  :meth:`~ProgressEstimator.fit`, ``state_dict`` / ``load_state_dict``, ``save``.
* :func:`check_ends` - the unit layout of one trajectory; :func:`sum_loss` - the loss.
* private helpers of the estimators: every trajectory's units, target checks, each step's unit,
  the saved-file layout and a torch fit of the squared sum errors.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from agentenvs.wrappers.models.fit import FitReport, fit_epochs

from agentenvs.core import Trajectory

__all__ = ["ProgressEstimator", "check_ends", "sum_loss"]


@runtime_checkable
class ProgressEstimator(Protocol):
    """What SPA and HISR need of a progress estimator (docs/spa.md, section 5).

    ``contributions(trajectories, ends=None)`` gives, per trajectory, one float64 contribution per
    unit (steps when ``ends`` is ``None``, else segments). ``fit(trajectories, targets, ends=None,
    epochs=None)`` trains so that each trajectory's contributions sum to its target, for ``epochs``
    passes (``None``: the estimator's own setting; an online refit continues from the current
    weights and needs few), and returns a :class:`~agentenvs.wrappers.models.fit.FitReport`. ``trained`` is ``False`` until the first fit (or a loaded state).
    """

    trained: bool

    def contributions(
        self, trajectories: Sequence[Trajectory], ends: Sequence[Sequence[int]] | None = None
    ) -> list[np.ndarray]: ...

    def fit(
        self,
        trajectories: Sequence[Trajectory],
        targets: Sequence[float],
        ends: Sequence[Sequence[int]] | None = None,
        epochs: int | None = None,
    ) -> FitReport: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...

    def save(self, path: str | Path) -> None: ...


# -- shared pieces -----------------------------------------------------------------------------------
def check_ends(n_steps: int, ends: Sequence[int] | None) -> np.ndarray:
    """The inclusive last step index of each unit, int64: ``arange(n_steps)`` for ``None``.

    Raises ``ValueError`` unless ``ends`` is strictly increasing, non-negative and ends at
    ``n_steps - 1`` (an empty trajectory has no units).

    >>> check_ends(3, None).tolist(), check_ends(3, [0, 2]).tolist()
    ([0, 1, 2], [0, 2])
    >>> check_ends(3, [1])
    Traceback (most recent call last):
    ...
    ValueError: segment ends [1] must be strictly increasing and end at the last step 2
    """
    if ends is None:
        return np.arange(n_steps, dtype=np.int64)
    out = np.asarray(list(ends), dtype=np.int64).reshape(-1)
    ok = (out.size == 0) if n_steps == 0 else (out.size > 0 and out[-1] == n_steps - 1)
    if not ok or (out.size and (out[0] < 0 or np.any(np.diff(out) <= 0))):
        raise ValueError(
            f"segment ends {out.tolist()} must be strictly increasing and end at the last step "
            f"{n_steps - 1}"
        )
    return out


def episode_ends(
    trajectories: Sequence[Trajectory], ends: Sequence[Sequence[int]] | None
) -> list[np.ndarray]:
    if ends is not None and len(ends) != len(trajectories):
        raise ValueError(f"got {len(ends)} segment lists for {len(trajectories)} trajectories")
    return [
        check_ends(len(t.steps), None if ends is None else ends[i])
        for i, t in enumerate(trajectories)
    ]


def check_targets(trajectories: Sequence[Trajectory], targets: Sequence[float]) -> np.ndarray:
    out = np.asarray(list(targets), dtype=np.float64).reshape(-1)
    if len(out) != len(trajectories):
        raise ValueError(f"got {len(out)} targets for {len(trajectories)} trajectories")
    if not np.all(np.isfinite(out)):
        raise ValueError("targets must be finite")
    return out


def sum_loss(contributions: Sequence[np.ndarray], targets: Sequence[float]) -> float:
    """Mean over trajectories of ``(sum of contributions - target)^2`` (0.0 for no trajectory).

    >>> sum_loss([np.array([0.2, 0.3]), np.array([0.0])], [1.0, 0.0])
    0.125
    """
    if not len(contributions):
        return 0.0
    sums = np.array([float(np.sum(c)) for c in contributions])
    return float(np.mean((sums - np.asarray(targets, np.float64)) ** 2))


def unit_of_steps(n_steps: int, ends: np.ndarray) -> np.ndarray:
    """int64 ``(n_steps,)``: the unit index of each step."""
    return np.searchsorted(ends, np.arange(n_steps), side="left").astype(np.int64)


def saved_state(kind: str, options: Mapping[str, object], state: dict) -> dict[str, Any]:
    return {"kind": kind, "config": json.dumps(options, sort_keys=True), "state": state}


def torch_save(obj: Any, path: str | Path) -> None:
    import torch

    torch.save(obj, Path(path))


def fit_sums(
    estimator: Any,
    errors: Callable[[np.ndarray], Any],
    m: int,
    optimizer: Any,
    start: float,
    epochs: int | None,
    **loop: Any,
) -> FitReport:
    """Train a torch estimator on the mean of ``errors(rows)`` (squared sum errors of those of its
    ``m`` trajectories) through :func:`~agentenvs.wrappers.models.fit.fit_epochs`, for ``epochs`` passes
    (``None``: its ``options["epochs"]``) in mini-batches of ``options["batch_size"]``; ``loop``:
    the loop's other options. Counts the fit and marks the estimator trained."""
    report = fit_epochs(
        lambda rows: errors(rows).mean(),
        lambda: errors(np.arange(m)).mean(),
        optimizer,
        n=m,
        epochs=estimator.options["epochs"] if epochs is None else int(epochs),
        start=start,
        batch_size=estimator.options["batch_size"],
        **loop,
    )
    estimator._fits += 1
    estimator.trained = True
    return report
