"""A least-recently-used cache with hit/miss statistics."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

_MISSING = object()


@dataclass(frozen=True)
class CacheStats:
    """A snapshot of a cache's counters."""

    hits: int
    misses: int
    evictions: int
    size: int
    capacity: int

    @property
    def hit_rate(self) -> float:
        """Fraction of lookups that were hits; 0.0 before the first lookup."""
        lookups = self.hits + self.misses
        if lookups == 0:
            return 0.0
        return self.hits / lookups


class LRUCache:
    """A mapping of at most ``capacity`` entries that evicts the least recently used one.

    ``get`` and ``put`` mark an entry as recently used; ``peek`` and ``in`` do not.
    """

    def __init__(self, capacity: int = 128) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._data

    def get(self, key: Hashable, default: Any = None) -> Any:
        """Return the value for ``key`` (counting a hit) or ``default`` (counting a miss)."""
        if key not in self._data:
            self.misses += 1
            return default
        self.hits += 1
        self._data.move_to_end(key)
        return self._data[key]

    def peek(self, key: Hashable, default: Any = None) -> Any:
        """Return the value for ``key`` without touching recency or statistics."""
        return self._data.get(key, default)

    def put(self, key: Hashable, value: Any) -> Hashable | None:
        """Store ``value`` under ``key``; return the evicted key, if any."""
        if key in self._data:
            self._data.move_to_end(key)
            self._data[key] = value
            return None
        self._data[key] = value
        if len(self._data) > self.capacity:
            evicted, _ = self._data.popitem(last=False)
            self.evictions += 1
            return evicted
        return None

    def pop(self, key: Hashable, default: Any = _MISSING) -> Any:
        """Remove ``key`` and return its value; raise KeyError if absent and no default."""
        if key in self._data:
            return self._data.pop(key)
        if default is _MISSING:
            raise KeyError(key)
        return default

    def keys(self) -> list[Hashable]:
        """Return the keys from least to most recently used."""
        return list(self._data)

    def resize(self, capacity: int) -> list[Hashable]:
        """Change the capacity, evicting the oldest entries if needed; return them."""
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        evicted = []
        for _ in range(len(self._data) - capacity):
            key, _ = self._data.popitem(last=False)
            evicted.append(key)
        self.evictions += len(evicted)
        return evicted

    def clear(self, reset_stats: bool = False) -> None:
        """Drop all entries; with ``reset_stats`` also zero the counters."""
        self._data.clear()
        if reset_stats:
            self.hits = self.misses = self.evictions = 0

    def stats(self) -> CacheStats:
        """Return the current counters."""
        return CacheStats(self.hits, self.misses, self.evictions, len(self._data), self.capacity)
