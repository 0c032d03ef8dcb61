"""The log-prob gap between the sampling backend and the trainer, checked after every weight sync.

This module holds :func:`logprob_gap`.

After a weight sync the backend and the training model hold the same weights, so the
temperature-1 log-probs they give the same response tokens differ only by numerics (kernels,
bf16): a gap near 0. A backend whose weights were not synced (a skipped or failed sync, weights
loaded under the wrong names) still scores with the previous weights, and the gap is the size of
one update's change. The trainer logs it as ``sync/logprob_gap`` and ``sync/logprob_gap_max``.

>>> mean, worst = logprob_gap([[-1.0, -2.0], [-0.5]], [[-1.25, -2.0], [-0.25]])
>>> round(mean, 4), worst
(0.1667, 0.25)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["logprob_gap"]


def logprob_gap(
    backend: Sequence[Sequence[float] | np.ndarray], trainer: Sequence[Sequence[float] | np.ndarray]
) -> tuple[float, float]:
    """Mean and max of ``|backend - trainer|`` (nats) over every response token.

    ``backend`` and ``trainer`` hold one list of per-token log-probs per response, pairwise of the
    same length. No tokens at all gives ``(0.0, 0.0)``.
    """
    if len(backend) != len(trainer) or any(
        len(b) != len(t) for b, t in zip(backend, trainer, strict=False)
    ):
        raise ValueError("backend and trainer log-probs must have the same shape")
    pairs = zip(backend, trainer, strict=True)
    diffs = [np.abs(np.subtract(b, t, dtype=np.float64)) for b, t in pairs]
    flat = np.concatenate(diffs) if diffs else np.zeros(0)
    if flat.size == 0:
        return 0.0, 0.0
    return float(flat.mean()), float(flat.max())
