"""Micro-batches of step-samples: sorted by length, cut by a sample count or a token budget.

This module holds :func:`micro_batches`, pure Python (no torch).

The update's collate (:func:`~agentenvs.learners.llm.policy.collate`) left-pads prompts to the longest
prompt of a micro-batch and right-pads responses to the longest response, so a micro-batch of
``n`` rows runs ``n x (max prompt + max response)`` token positions. Sorting a mini-batch's samples
by length before cutting it puts rows of similar length together and removes most of that padding.
What remains is the padding inside each micro-batch: removing it entirely (sequence packing) needs
variable-length attention kernels (flash-attention's ``varlen`` path), which the learner does not
use.

>>> micro_batches([0, 1, 2, 3], prompt_lens=[5, 1, 5, 1], response_lens=[5, 1, 4, 2], size=2)
[[1, 3], [2, 0]]
>>> micro_batches([0, 1, 2, 3], [5, 1, 5, 1], [5, 1, 4, 2], max_tokens=12)
[[1, 3], [2], [0]]
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["micro_batches"]


def micro_batches(
    indices: Sequence[int],
    prompt_lens: Sequence[int],
    response_lens: Sequence[int],
    *,
    size: int | None = None,
    max_tokens: int | None = None,
) -> list[list[int]]:
    """Split ``indices`` (one mini-batch's samples) into micro-batches.

    The samples are sorted by total length (prompt + response; ties keep their order), then cut
    into runs of ``size`` samples, or, with ``max_tokens``, into the longest runs whose padded size
    ``rows x (max prompt + max response)`` stays within ``max_tokens`` (a sample longer than the
    budget runs alone). ``prompt_lens`` and ``response_lens`` are indexed by sample index. Give
    exactly one of ``size`` and ``max_tokens``.
    """
    if (size is None) == (max_tokens is None):
        raise ValueError("give exactly one of size and max_tokens")
    order = sorted(indices, key=lambda i: prompt_lens[i] + response_lens[i])
    if size is not None:
        return [order[k : k + size] for k in range(0, len(order), size)]
    assert max_tokens is not None  # exactly one of the two is given
    out: list[list[int]] = []
    current: list[int] = []
    prompt = response = 0
    for i in order:
        p, r = max(prompt, prompt_lens[i]), max(response, response_lens[i])
        if current and (len(current) + 1) * (p + r) > max_tokens:
            out.append(current)
            current, p, r = [], prompt_lens[i], response_lens[i]
        current.append(i)
        prompt, response = p, r
    if current:
        out.append(current)
    return out
