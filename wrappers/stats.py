"""Vectorised group statistics shared by the credit estimators.

This module holds:

* :func:`dense_codes` - joint factorisation of integer columns into dense codes (``np.unique``).
* :func:`group_zscore` - z-score (or mean-centre) values within groups, with the reference
  conventions for singletons, sample std and ``eps``.
* :func:`discounted_returns` - per-trajectory discounted reward-to-go over a flat step array.

All functions are O(n) or O(n log n) numpy; none loops over steps in Python.

>>> group_zscore(np.array([1.0, 3.0, 5.0, 7.0]), np.array([0, 0, 1, 2]), 3)
array([-0.70710628,  0.70710628,  0.        ,  0.        ])
>>> discounted_returns(np.array([0.0, 0.0, 10.0, 1.0]), np.array([0, 3, 4]), 0.5)
array([ 2.5,  5. , 10. ,  1. ])
"""

from __future__ import annotations

import numpy as np

__all__ = ["NORMS", "dense_codes", "group_zscore", "discounted_returns"]

#: Normalisation modes: subtract the group mean and divide by its std, or only subtract the mean.
NORMS = ("mean_std", "mean")

#: A std below this is treated as zero (the values are equal up to rounding).
TINY_STD = 1e-12


def dense_codes(*columns: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense codes ``0..k-1`` for the distinct rows of non-negative integer ``columns``.

    Returns ``(codes, k)``; codes follow the lexicographic order of the rows, so rows sharing the
    first column are contiguous in code order.

    >>> dense_codes(np.array([1, 0, 1]), np.array([5, 7, 5]))
    (array([1, 0, 1]), 2)
    """
    if not columns or len(columns[0]) == 0:
        return np.zeros(0, np.int64), 0
    key = np.asarray(columns[0], dtype=np.int64)
    for col in columns[1:]:
        col = np.asarray(col, dtype=np.int64)
        width = int(col.max()) + 1
        if int(key.max()) >= np.iinfo(np.int64).max // max(width, 1):
            _, key = np.unique(key, return_inverse=True)  # re-densify to avoid overflow
            key = key.reshape(-1).astype(np.int64)
        key = key * width + col
    uniq, codes = np.unique(key, return_inverse=True)
    return codes.reshape(-1).astype(np.int64), len(uniq)


def group_zscore(
    values: np.ndarray,
    groups: np.ndarray,
    n_groups: int,
    *,
    norm: str = "mean_std",
    ddof: int = 1,
    eps: float = 1e-6,
    singleton: str = "zero",
) -> np.ndarray:
    """Normalise ``values`` within groups: ``(x - mean) / (std + eps)`` or ``x - mean``.

    Args:
        values: float ``(n,)``.
        groups: int ``(n,)`` group code of each value, in ``0..n_groups-1``.
        n_groups: number of group codes.
        norm: ``"mean_std"`` or ``"mean"`` (see :data:`NORMS`).
        ddof: std degrees of freedom (1 = sample std, the reference ``torch.std``).
        eps: added to the std. A std below ``1e-12`` gives 0 (all members equal).
        singleton: what a one-member group gets: ``"zero"``, or ``"raw"`` (the reference
            cross-steps rule: mean 0 and std 1, so ``x / (1 + eps)``, or ``x`` under ``"mean"``).

    Returns:
        float64 ``(n,)``.
    """
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    if singleton not in ("zero", "raw"):
        raise ValueError(f"singleton must be 'zero' or 'raw', got {singleton!r}")
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return np.zeros(0, np.float64)
    count = np.bincount(groups, minlength=n_groups).astype(np.float64)
    mean = np.bincount(groups, weights=values, minlength=n_groups) / np.maximum(count, 1.0)
    dev = values - mean[groups]
    if norm == "mean_std":
        sq = np.bincount(groups, weights=dev * dev, minlength=n_groups)
        std = np.sqrt(sq / np.maximum(count - ddof, 1.0))
        scale = np.zeros(n_groups, np.float64)
        np.divide(1.0, std + eps, out=scale, where=std >= TINY_STD)
        out = dev * scale[groups]
    else:
        out = dev
    single = count[groups] == 1
    if single.any():
        raw = values[single] / (1.0 + eps) if norm == "mean_std" else values[single]
        out[single] = raw if singleton == "raw" else 0.0
    return out


def discounted_returns(rewards: np.ndarray, offsets: np.ndarray, gamma: float) -> np.ndarray:
    """Reward-to-go ``R_t = r_t + gamma * R_{t+1}`` within each trajectory.

    Args:
        rewards: float ``(n,)`` per-step rewards.
        offsets: int ``(m + 1,)`` trajectory boundaries (see :class:`~wrappers.batch.StepBatch`).
        gamma: discount in ``[0, 1]``.

    Returns:
        float64 ``(n,)``. Works level by level from each trajectory's actual last step: one
        vectorised pass per position, O(n) in total.
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    rewards = np.asarray(rewards, dtype=np.float64)
    out = np.empty_like(rewards)
    lengths = np.diff(offsets)
    if rewards.size == 0:
        return out
    order = np.argsort(-lengths, kind="stable")
    ends = offsets[1:][order]
    desc = lengths[order]
    active = np.searchsorted(-desc, -np.arange(1, int(desc[0]) + 1), side="right")
    for k, m in enumerate(active):
        idx = ends[:m] - 1 - k
        if k == 0:
            out[idx] = rewards[idx]
        else:
            out[idx] = rewards[idx] + gamma * out[idx + 1]
    return out
