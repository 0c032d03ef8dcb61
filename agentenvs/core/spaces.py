"""The text space of agentenvs' observations and actions.

This module holds :class:`TextSpace` (a Gymnasium ``Text`` space), :func:`text_space` and
:data:`TEXT_CHARSET`.

:class:`TextSpace` exists for one reason: Gymnasium's ``AsyncVectorEnv`` with shared memory (its
default) decodes ``Text`` observations from shared memory only once, when the vector env is built,
so every later observation reads back as padding. :class:`TextSpace` registers a shared-memory reader
that returns :class:`SharedTextView`, a live view that decodes the current strings on access and on
``deepcopy`` (which is what ``AsyncVectorEnv`` returns), so ``gym.make_vec(...,
vectorization_mode="async")`` works with text observations.

>>> space = text_space(max_length=8, extra_chars="√")
>>> space.contains("a √\\n"), space.contains("√" * 9)
(True, False)
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any, overload

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import read_from_shared_memory

__all__ = ["TextSpace", "SharedTextView", "text_space", "TEXT_CHARSET"]

#: Characters a text observation may hold: printable ASCII (with tab and newline) plus extras.
TEXT_CHARSET = frozenset(string.printable)


class TextSpace(gym.spaces.Text):
    """``gymnasium.spaces.Text`` whose batches read correctly from ``AsyncVectorEnv`` shared memory."""


class SharedTextView(Sequence[str]):
    """The strings of ``n`` sub-envs, decoded from shared memory on every access."""

    def __init__(self, space: TextSpace, shared_memory: Any, n: int) -> None:
        self._space, self._memory, self._n = space, shared_memory, n

    def _decode(self) -> tuple[str, ...]:
        data = np.frombuffer(self._memory.get_obj(), dtype=np.int32).reshape(
            self._n, self._space.max_length
        )
        chars, size = self._space.character_list, len(self._space.character_set)
        return tuple("".join(chars[v] for v in row.tolist() if v < size) for row in data)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return self._decode()[index]

    def __len__(self) -> int:
        return self._n

    def __deepcopy__(self, memo: dict) -> tuple[str, ...]:
        return self._decode()

    def __copy__(self) -> tuple[str, ...]:
        return self._decode()

    def __eq__(self, other: object) -> bool:
        return tuple(self) == tuple(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return f"SharedTextView({self._decode()!r})"


@read_from_shared_memory.register(TextSpace)
def _read_text_view(space: TextSpace, shared_memory: Any, n: int = 1) -> SharedTextView:
    return SharedTextView(space, shared_memory, n)


def text_space(max_length: int = 65_536, extra_chars: str = "") -> TextSpace:
    """A :class:`TextSpace` over printable ASCII plus ``extra_chars``, 0 to ``max_length`` characters."""
    return TextSpace(max_length, min_length=0, charset=TEXT_CHARSET | frozenset(extra_chars))
