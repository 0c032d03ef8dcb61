import pytest
from cachebox import CacheStats, LRUCache


def filled(capacity=3, keys="abc"):
    cache = LRUCache(capacity)
    for index, key in enumerate(keys):
        cache.put(key, index)
    return cache


def test_default_capacity():
    assert LRUCache().capacity == 128


def test_bad_capacity():
    with pytest.raises(ValueError):
        LRUCache(0)


def test_get_hit_and_miss():
    cache = filled()
    assert (cache.get("b"), cache.get("z"), cache.get("z", -1)) == (1, None, -1)


def test_put_evicts_least_recent():
    cache = filled()
    assert cache.put("d", 3) == "a"


def test_get_refreshes_recency():
    cache = filled()
    cache.get("a")
    cache.put("d", 3)
    assert cache.keys() == ["c", "a", "d"]


def test_peek_does_not_refresh():
    cache = filled()
    cache.peek("a")
    cache.put("d", 3)
    assert cache.keys() == ["b", "c", "d"]


def test_put_existing_updates_and_refreshes():
    cache = filled()
    assert (cache.put("a", 10), cache.keys(), cache.peek("a")) == (None, ["b", "c", "a"], 10)


def test_contains_and_len():
    cache = filled()
    assert ("a" in cache, "z" in cache, len(cache)) == (True, False, 3)


def test_pop():
    cache = filled()
    assert (cache.pop("b"), cache.keys()) == (1, ["a", "c"])


def test_pop_missing_raises():
    with pytest.raises(KeyError):
        filled().pop("z")


def test_resize_evicts_oldest():
    cache = filled(capacity=5, keys="abcde")
    assert (cache.resize(1), cache.keys(), cache.evictions) == (["a", "b", "c", "d"], ["e"], 4)


def test_resize_to_zero_raises():
    with pytest.raises(ValueError):
        filled().resize(0)


def test_resize_grow():
    cache = filled()
    assert (cache.resize(10), cache.capacity) == ([], 10)


def test_stats():
    cache = filled(capacity=2, keys="abc")
    cache.get("c")
    cache.get("a")
    cache.get("b")
    assert cache.stats() == CacheStats(hits=2, misses=1, evictions=1, size=2, capacity=2)


def test_hit_rate():
    assert CacheStats(hits=3, misses=1, evictions=0, size=0, capacity=1).hit_rate == 0.75


def test_hit_rate_no_lookups():
    assert LRUCache().stats().hit_rate == 0.0


def test_clear_keeps_stats_by_default():
    cache = filled()
    cache.get("a")
    cache.clear()
    assert (len(cache), cache.hits) == (0, 1)


def test_clear_reset_stats():
    cache = filled(capacity=2)
    cache.get("z")
    cache.clear(reset_stats=True)
    assert (cache.misses, cache.evictions) == (0, 0)
