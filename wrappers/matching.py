"""Similarity matching of text state keys (the noisy-observation variant of GiGPO and GraphGPO).

This module holds :func:`similarity_codes`: within each group, greedy first-fit clustering of the
state keys against each cluster's first member (its representative). A key joins the first
cluster whose representative it matches with
``difflib.SequenceMatcher(None, key, representative).ratio() >= threshold`` - the new key first
and the representative second, as verl-agent's GiGPO and the GraphGPO recipe call it. The order
matters: for strings of 200 characters or more difflib's autojunk heuristic ignores characters that
are frequent in the *second* string, so the two orders can give very different ratios
(docs/credit.md, sections 5.6 and 9.7). Keys are visited in batch order (trajectory order, then
step order; a step's state before its next state), which is the reference order. Exact duplicates
always share a cluster.

Cost is O(distinct keys x clusters x L^2) per group; it is an opt-in feature for noisy text.

>>> from agentenvs.core import Step, Trajectory
>>> from agentenvs.wrappers.batch import StepBatch
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
from agentenvs.wrappers.batch import StepBatch

__all__ = ["similarity_codes"]


def similarity_codes(
    batch: StepBatch,
    threshold: float,
    include_next: bool = True,
    sink_steps: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Canonical ``(state, next_state)`` codes after per-group similarity clustering.

    Each key is replaced, within its group, by the code of its cluster's representative (first
    member). ``include_next=False`` clusters only the states steps were taken in (GiGPO's anchors);
    next states then keep their exact codes. ``sink_steps`` (bool per step) marks steps whose next
    state is the success sink (the last step of a successful trajectory, in GraphGPO): their next
    state is neither matched nor made a representative, as the recipe never sees that observation
    (it writes ``'success'`` instead). Codes of ``None`` keys stay unique.

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
    # per group: (representative code, a matcher whose second sequence is the representative)
    reps_by_group: dict[int, list[tuple[int, SequenceMatcher]]] = {}

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
            for other, matcher in reps:
                matcher.set_seq1(key)  # SequenceMatcher(None, key, representative)
                if (
                    matcher.real_quick_ratio() >= threshold
                    and matcher.quick_ratio() >= threshold
                    and matcher.ratio() >= threshold
                ):
                    rep = other
                    break
            else:
                reps.append((code, SequenceMatcher(None, "", key)))
        canon[(group, code)] = rep
        return rep

    state = batch.state.copy()
    next_state = batch.next_state.copy()
    groups = batch.step_group.tolist()
    to_sink = (
        [False] * batch.n_steps if sink_steps is None else np.asarray(sink_steps, bool).tolist()
    )
    for i, (g, s, n, sink) in enumerate(
        zip(groups, batch.state.tolist(), batch.next_state.tolist(), to_sink, strict=True)
    ):
        state[i] = canonical(g, s)
        if include_next and not sink:
            next_state[i] = canonical(g, n)
    return state, next_state
