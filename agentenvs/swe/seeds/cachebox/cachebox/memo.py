"""A memoizing decorator backed by an LRU cache."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any

from cachebox.lru import LRUCache

_MISSING = object()
_KWARGS = object()


def make_key(args: tuple, kwargs: dict[str, Any], typed: bool = False) -> tuple[Hashable, ...]:
    """Build a hashable cache key from call arguments.

    Keyword arguments are sorted by name, so ``f(a=1, b=2)`` and ``f(b=2, a=1)`` share a
    key. With ``typed`` the argument types are part of the key, so ``1`` and ``1.0`` differ.
    """
    key: tuple = tuple(args)
    items = sorted(kwargs.items())
    if items:
        key += (_KWARGS,) + tuple(items)
    if typed:
        key += tuple(type(value) for value in args)
        key += tuple(type(value) for _, value in items)
    return key


def memoize(maxsize: int | Callable = 128, typed: bool = False) -> Callable:
    """Cache a function's results in an :class:`LRUCache` of ``maxsize`` entries.

    Use as ``@memoize`` or ``@memoize(maxsize=..., typed=...)``. The wrapper gets
    ``cache_info()`` (a :class:`CacheStats`) and ``cache_clear()``.
    """
    if callable(maxsize):
        return memoize()(maxsize)

    def decorator(func: Callable) -> Callable:
        cache = LRUCache(maxsize)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = make_key(args, kwargs, typed)
            result = cache.get(key, _MISSING)
            if result is _MISSING:
                result = func(*args, **kwargs)
                cache.put(key, result)
            return result

        wrapper.cache_info = cache.stats
        wrapper.cache_clear = lambda: cache.clear(reset_stats=True)
        return wrapper

    return decorator
