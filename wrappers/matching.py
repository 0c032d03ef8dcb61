"""Similarity matching of text state keys (the noisy-observation variant of GiGPO and GraphGPO).

This module holds :func:`similarity_codes`: within each group, greedy first-fit clustering of the
state keys against each cluster's first member with
``difflib.SequenceMatcher(None, a, b).ratio() >= threshold`` (specs/graphgpo.md §2.2 [C], compat.md
§3.6). Keys are visited in batch order (trajectory order, then step order; a step's state before its
next state), which is the reference order. Exact duplicates always share a cluster.

Cost is O(distinct keys x clusters x L^2) per group; it is an opt-in feature for noisy text.

>>> from agentenvs.core import Step, Trajectory
>>> from wrappers.batch import StepBatch
>>> steps = [Step("o", "a", 0.0, state_key=k, next_state_key=None)
...          for k in ["page one ad", "page one ad!", "other"]]
>>> b = StepBatch.from_trajectories([Trajectory("t", "g", steps)])
>>> s, _ = similarity_codes(b, 0.9)
>>> bool(s[0] == s[1]), bool(s[0] == s[2])
(True, False)
"""

from __future__ import annotations

from difflib import SequenceMatcher

import numpy as np

from wrappers.batch import StepBatch

__all__ = ["similarity_codes"]


def similarity_codes(
    batch: StepBatch, threshold: float, include_next: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Canonical ``(state, next_state)`` codes after per-group similarity clustering.

    Each key is replaced, within its group, by the code of its cluster's representative (first
    member). ``include_next=False`` clusters only the states steps were taken in (GiGPO's anchors);
    next states then keep their exact codes. Codes of ``None`` keys stay unique.

    Raises:
        ValueError: ``threshold`` outside ``(0, 1]`` or a batch built without state keys.
        TypeError: a non-text state key (the matcher compares strings).
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"similarity threshold must be in (0, 1], got {threshold}")
    if batch.state_keys is None:
        raise ValueError(
            "similarity matching needs the state keys; build the batch from trajectories"
        )
    keys = batch.state_keys
    canon: dict[tuple[int, int], int] = {}
    reps_by_group: dict[int, list[int]] = {}

    def canonical(group: int, code: int) -> int:
        rep = canon.get((group, code))
        if rep is not None:
            return rep
        key = keys[code]
        if key is not None and not isinstance(key, str):
            raise TypeError(f"similarity matching compares text keys, got {type(key).__name__}")
        rep = code
        if key is not None:
            reps = reps_by_group.setdefault(group, [])
            for other in reps:
                m = SequenceMatcher(None, keys[other], key)
                if (
                    m.real_quick_ratio() >= threshold
                    and m.quick_ratio() >= threshold
                    and m.ratio() >= threshold
                ):
                    rep = other
                    break
            else:
                reps.append(code)
        canon[(group, code)] = rep
        return rep

    state = batch.state.copy()
    next_state = batch.next_state.copy()
    groups = batch.step_group.tolist()
    for i, (g, s, n) in enumerate(
        zip(groups, batch.state.tolist(), batch.next_state.tolist(), strict=True)
    ):
        state[i] = canonical(g, s)
        if include_next:
            next_state[i] = canonical(g, n)
    return state, next_state
