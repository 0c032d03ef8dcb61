"""A cache whose entries expire after a time-to-live."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Any


class TTLCache:
    """A mapping whose entries expire ``ttl`` seconds after they were stored.

    ``clock`` returns the current time in seconds; pass a fake clock in tests. An entry
    stored at time ``t`` is alive while ``clock() < t + ttl``. With a ``capacity`` the
    oldest stored entry is dropped when the cache is full and nothing has expired.
    """

    def __init__(
        self,
        ttl: float,
        clock: Callable[[], float] = time.monotonic,
        capacity: int | None = None,
    ) -> None:
        if ttl <= 0:
            raise ValueError(f"ttl must be positive, got {ttl}")
        if capacity is not None and capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.ttl = ttl
        self.capacity = capacity
        self._clock = clock
        self._entries: dict[Hashable, tuple[float, Any]] = {}

    def set(self, key: Hashable, value: Any, ttl: float | None = None) -> None:
        """Store ``value``; ``ttl`` overrides the cache's default for this entry."""
        lifetime = self.ttl if ttl is None else ttl
        if lifetime <= 0:
            raise ValueError(f"ttl must be positive, got {lifetime}")
        self._entries.pop(key, None)
        self._entries[key] = (self._clock() + lifetime, value)
        if self.capacity is not None and len(self._entries) > self.capacity:
            self.purge()
            if len(self._entries) > self.capacity:
                oldest = next(iter(self._entries))
                del self._entries[oldest]

    def get(self, key: Hashable, default: Any = None) -> Any:
        """Return the live value for ``key`` or ``default``; expired entries are dropped."""
        entry = self._entries.get(key)
        if entry is None:
            return default
        expires_at, value = entry
        if self._clock() >= expires_at:
            del self._entries[key]
            return default
        return value

    def __contains__(self, key: Hashable) -> bool:
        entry = self._entries.get(key)
        return entry is not None and self._clock() < entry[0]

    def remaining(self, key: Hashable) -> float | None:
        """Return the seconds left before ``key`` expires, or None if it is not alive."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        left = entry[0] - self._clock()
        return left if left > 0 else None

    def touch(self, key: Hashable) -> bool:
        """Restart the default ttl of a live entry; return False if there is none."""
        if key not in self:
            return False
        self._entries[key] = (self._clock() + self.ttl, self._entries[key][1])
        return True

    def purge(self) -> int:
        """Drop all expired entries and return how many were dropped."""
        now = self._clock()
        expired = [key for key, (expires_at, _) in self._entries.items() if expires_at <= now]
        for key in expired:
            del self._entries[key]
        return len(expired)

    def __len__(self) -> int:
        """Number of live entries."""
        now = self._clock()
        return sum(1 for expires_at, _ in self._entries.values() if now < expires_at)
