"""Small in-memory caches: LRU with statistics, TTL with an injectable clock, memoize."""

from cachebox.lru import CacheStats, LRUCache
from cachebox.memo import make_key, memoize
from cachebox.ttl import TTLCache

__all__ = ["CacheStats", "LRUCache", "TTLCache", "make_key", "memoize"]
