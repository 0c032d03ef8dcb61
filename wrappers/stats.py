"""Vectorised group statistics shared by the credit estimators.

This module holds:

* :func:`dense_codes` - joint factorisation of integer columns into dense codes.
* :func:`radix_argsort` - O(n) stable argsort of small non-negative integers.
* :func:`group_zscore` - z-score (or mean-centre) values within groups, with the reference
  conventions for singletons, sample std and ``eps``.
* :func:`discounted_returns` - per-trajectory discounted reward-to-go over a flat step array.
* :func:`gae` - generalised advantage estimates of one trajectory, with critic values.

All functions are numpy, O(n) on typical batches (O(n log n) where a sort cannot be avoided);
none but :func:`gae` (one trajectory's backward recursion) loops over steps in Python.

>>> group_zscore(np.array([1.0, 3.0, 5.0, 7.0]), np.array([0, 0, 1, 2]), 3)
array([-0.70710628,  0.70710628,  0.        ,  0.        ])
>>> discounted_returns(np.array([0.0, 0.0, 10.0, 1.0]), np.array([0, 3, 4]), 0.5)
array([ 2.5,  5. , 10. ,  1. ])
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = [
    "NORMS",
    "dense_codes",
    "dense_rank",
    "radix_argsort",
    "group_zscore",
    "discounted_returns",
    "gae",
]

#: Normalisation modes: subtract the group mean and divide by its std, or only subtract the mean.
NORMS = ("mean_std", "mean")

#: A std below this is treated as zero (the values are equal up to rounding).
TINY_STD = 1e-12
#: Use a lookup table (no sort) to factorise ints whose range is below this many times their count.
_TABLE_FACTOR = 4


def _densify(x: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense codes of non-negative ints, in value order: a lookup table when the range is small
    (O(n), no sort), ``np.unique`` otherwise."""
    top = int(x.max())
    if top < _TABLE_FACTOR * len(x) + 1024:
        present = np.zeros(top + 1, bool)
        present[x] = True
        remap = np.cumsum(present, dtype=np.int64) - 1
        return remap[x], int(remap[-1]) + 1
    uniq, codes = np.unique(x, return_inverse=True)
    return codes.reshape(-1).astype(np.int64), len(uniq)


def dense_rank(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank of each non-negative int among the distinct values, and the distinct values in order.

    >>> codes, values = dense_rank(np.array([7, 2, 7, 9]))
    >>> codes.tolist(), values.tolist()
    ([1, 0, 1, 2], [2, 7, 9])
    """
    x = np.asarray(x, dtype=np.int64)
    if x.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    top = int(x.max())
    if top < _TABLE_FACTOR * len(x) + 1024:
        present = np.zeros(top + 1, bool)
        present[x] = True
        remap = np.cumsum(present, dtype=np.int64) - 1
        return remap[x], np.flatnonzero(present)
    values, codes = np.unique(x, return_inverse=True)
    return codes.reshape(-1).astype(np.int64), values


def dense_codes(*columns: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense codes ``0..k-1`` for the distinct rows of non-negative integer ``columns``.

    Returns ``(codes, k)``: equal rows get equal codes, distinct rows distinct codes. Avoids sorting
    where it can: small value ranges use a lookup table, and a column that determines the columns
    before it (a state code that belongs to one group) is used as the code directly.

    >>> codes, k = dense_codes(np.array([1, 0, 1]), np.array([5, 7, 5]))
    >>> k, bool(codes[0] == codes[2]), bool(codes[0] != codes[1])
    (2, True, True)
    """
    if not columns or len(columns[0]) == 0:
        return np.zeros(0, np.int64), 0
    codes, k = _densify(np.asarray(columns[0], dtype=np.int64))
    for col in columns[1:]:
        c2, k2 = _densify(np.asarray(col, dtype=np.int64))
        if k * k2 < _TABLE_FACTOR * len(codes) + 1024:
            codes, k = _densify(codes * k2 + c2)
            continue
        owner = np.empty(k2, np.int64)
        owner[c2] = codes
        if np.array_equal(owner[c2], codes):  # col determines the previous columns
            codes, k = c2, k2
        else:
            uniq, inverse = np.unique(codes * k2 + c2, return_inverse=True)
            codes, k = inverse.reshape(-1).astype(np.int64), len(uniq)
    return codes, k


def radix_argsort(x: np.ndarray) -> np.ndarray:
    """Stable argsort of non-negative integers below 2**32 by 16-bit radix passes (O(n)).

    >>> radix_argsort(np.array([70000, 3, 70000, 1])).tolist()
    [3, 1, 0, 2]
    """
    x = np.asarray(x, dtype=np.int64)
    order = np.argsort((x & 0xFFFF).astype(np.uint16), kind="stable")
    if x.size and int(x.max()) > 0xFFFF:
        if int(x.max()) >> 32:
            return np.argsort(x, kind="stable")
        order = order[np.argsort((x[order] >> 16).astype(np.uint16), kind="stable")]
    return order


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
        offsets: int ``(m + 1,)`` trajectory boundaries (see :class:`~agentenvs.wrappers.batch.StepBatch`).
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
    order = radix_argsort(lengths.max() - lengths)
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


def gae(
    rewards: npt.ArrayLike,
    gamma: float,
    lam: float,
    values: npt.ArrayLike | None = None,
    bootstrap: float = 0.0,
) -> np.ndarray:
    """float64 ``(n,)`` generalised advantage estimates of one trajectory's step rewards, as a
    learner with a critic computes them (e.g. on SPA's or HISR's rewards, ``advantage="rewards"``):
    ``delta_t = r_t + gamma V_{t+1} - V_t`` with ``V_n = bootstrap`` (0 after a terminal step; the
    critic's value of the final observation after a truncation) and ``V = 0`` when ``values`` is
    ``None``; ``A_t = delta_t + gamma lam A_{t+1}``. Returns are ``A + V``.

    >>> gae(np.array([0.7, 0.3, 1.0]), 0.99, 0.95).round(6).tolist()
    [1.86669, 1.2405, 1.0]
    >>> gae([0.7, 0.3, 1.0], 0.99, 0.95, [0.5, 0.6, 0.8]).round(6).tolist()
    [1.433634, 0.6801, 0.2]
    """
    r = np.asarray(rewards, np.float64).reshape(-1)
    v = np.zeros(len(r)) if values is None else np.asarray(values, np.float64).reshape(-1)
    if v.shape != r.shape:
        raise ValueError(f"values must have shape {r.shape}, got {v.shape}")
    delta = r + gamma * np.append(v[1:], bootstrap) - v
    out = np.empty_like(r)
    running = 0.0
    for t in range(len(r) - 1, -1, -1):
        running = delta[t] + gamma * lam * running
        out[t] = running
    return out
