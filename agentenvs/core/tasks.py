"""Task panels: deterministic named splits of stable task ids.

This module holds :class:`TaskPanel` and :class:`SeedTaskIds` (a lazy id range for seed-generated
tasks such as Sokoban rooms).

>>> panel = TaskPanel({"train": SeedTaskIds(0, 100), "test": SeedTaskIds(1000, 1010)})
>>> len(panel.ids("test")), panel.ids("test")[0], panel.split_of("seed-5")
(10, 'seed-1000', 'train')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import overload

__all__ = ["TaskPanel", "SeedTaskIds"]


class SeedTaskIds(Sequence[str]):
    """The ids ``seed-<n>`` for ``start <= n < stop``, without materialising them."""

    prefix = "seed-"

    def __init__(self, start: int, stop: int) -> None:
        if not 0 <= start <= stop:
            raise ValueError(f"need 0 <= start <= stop, got {start}, {stop}")
        self.start, self.stop = start, stop

    def __len__(self) -> int:
        return self.stop - self.start

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return f"{self.prefix}{self.start + index}"

    def __contains__(self, task_id: object) -> bool:
        seed = self.seed_of(task_id)
        return seed is not None and self.start <= seed < self.stop

    @classmethod
    def seed_of(cls, task_id: object) -> int | None:
        """The integer seed in ``seed-<n>``, or ``None`` if ``task_id`` is not of that form."""
        if (
            isinstance(task_id, str)
            and task_id.startswith(cls.prefix)
            and task_id[len(cls.prefix) :].isdigit()
        ):
            return int(task_id[len(cls.prefix) :])
        return None

    def __repr__(self) -> str:
        return f"SeedTaskIds({self.start}, {self.stop})"


class TaskPanel:
    """Named splits (``train``, ``test``, ...) of task ids; splits never share an id.

    Args:
        splits: split name -> ordered task ids. Lists are checked for overlap here; lazy
            :class:`SeedTaskIds` ranges are checked by range arithmetic.
        aliases: other name -> split name, accepted wherever a split name is (:meth:`ids`,
            :meth:`resolve`); :attr:`splits` lists only the real splits.

    >>> panel = TaskPanel({"train": ["a"], "test_seen": ["b"]}, aliases={"test": "test_seen"})
    >>> panel.splits, list(panel.ids("test")), panel.resolve("test")
    (['train', 'test_seen'], ['b'], 'test_seen')
    """

    def __init__(
        self, splits: Mapping[str, Sequence[str]], aliases: Mapping[str, str] | None = None
    ) -> None:
        self._splits = dict(splits)
        self.aliases = dict(aliases or {})
        for alias, target in self.aliases.items():
            if alias in self._splits or target not in self._splits:
                raise ValueError(f"alias {alias!r} -> {target!r} must name a split, not be one")
        names = list(self._splits)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                if _overlap(self._splits[a], self._splits[b]):
                    raise ValueError(f"task splits {a!r} and {b!r} share task ids")

    @property
    def splits(self) -> list[str]:
        return list(self._splits)

    def resolve(self, split: str) -> str:
        """The real split named by ``split`` (itself or the split it is an alias of)."""
        name = self.aliases.get(split, split)
        if name not in self._splits:
            known = self.splits + list(self.aliases)
            raise KeyError(f"unknown split {split!r}; have {known}")
        return name

    def ids(self, split: str) -> Sequence[str]:
        """The ordered task ids of ``split`` (a split name or an alias)."""
        return self._splits[self.resolve(split)]

    def split_of(self, task_id: str) -> str:
        """The split holding ``task_id``; ``KeyError`` if none does."""
        for name, ids in self._splits.items():
            if task_id in ids:
                return name
        raise KeyError(f"unknown task id {task_id!r}")

    def __contains__(self, task_id: object) -> bool:
        return any(task_id in ids for ids in self._splits.values())


def _overlap(a: Sequence[str], b: Sequence[str]) -> bool:
    if isinstance(a, SeedTaskIds) and isinstance(b, SeedTaskIds):
        return max(a.start, b.start) < min(a.stop, b.stop)
    small, large = sorted((a, b), key=len)
    large_set = large if isinstance(large, SeedTaskIds) else set(large)
    return any(t in large_set for t in small)
