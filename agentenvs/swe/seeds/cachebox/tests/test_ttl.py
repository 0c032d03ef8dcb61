import pytest
from cachebox import TTLCache


class FakeClock:
    def __init__(self, now=100.0):
        self.now = now

    def __call__(self):
        return self.now


def make(ttl=10, capacity=None):
    clock = FakeClock()
    return TTLCache(ttl, clock=clock, capacity=capacity), clock


def test_bad_ttl():
    with pytest.raises(ValueError):
        TTLCache(0, clock=FakeClock())


def test_bad_capacity():
    with pytest.raises(ValueError):
        TTLCache(5, clock=FakeClock(), capacity=0)


def test_get_before_expiry():
    cache, clock = make()
    cache.set("k", "v")
    clock.now = 109.5
    assert cache.get("k") == "v"


def test_expires_exactly_at_ttl():
    cache, clock = make(ttl=1)
    cache.set("k", "v")
    clock.now = 101
    assert ("k" in cache, cache.get("k", "gone")) == (False, "gone")


def test_per_entry_ttl():
    cache, clock = make()
    cache.set("short", 1, ttl=2)
    cache.set("long", 2)
    clock.now = 105
    assert (cache.get("short"), cache.get("long")) == (None, 2)


def test_per_entry_ttl_must_be_positive():
    cache, _ = make()
    with pytest.raises(ValueError):
        cache.set("k", 1, ttl=0)


def test_contains_live():
    cache, clock = make()
    cache.set("k", 1)
    clock.now = 109
    assert ("k" in cache, "z" in cache) == (True, False)


def test_remaining():
    cache, clock = make()
    cache.set("k", 1)
    clock.now = 109.5
    assert (cache.remaining("k"), cache.remaining("z")) == (0.5, None)


def test_remaining_expired():
    cache, clock = make()
    cache.set("k", 1)
    clock.now = 110
    assert cache.remaining("k") is None


def test_touch_restarts_ttl():
    cache, clock = make()
    cache.set("k", 1)
    clock.now = 108
    assert (cache.touch("k"), cache.remaining("k"), cache.get("k"), cache.touch("z")) == (
        True,
        10,
        1,
        False,
    )


def test_purge_counts_expired():
    cache, clock = make()
    cache.set("a", 1, ttl=1)
    cache.set("b", 2, ttl=5)
    cache.set("c", 3, ttl=20)
    clock.now = 105
    assert (cache.purge(), len(cache)) == (2, 1)


def test_len_ignores_expired():
    cache, clock = make()
    cache.set("a", 1, ttl=1)
    cache.set("b", 2)
    clock.now = 101
    assert len(cache) == 1


def test_capacity_drops_oldest():
    cache, _ = make(capacity=2)
    cache.set("a", 1)
    cache.set("b", 2)
    cache.set("a", 3)
    cache.set("c", 4)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (3, None, 4)


def test_capacity_one():
    cache, _ = make(capacity=1)
    cache.set("a", 1)
    cache.set("b", 2)
    assert (cache.get("a"), cache.get("b")) == (None, 2)


def test_capacity_prefers_expired():
    cache, clock = make(capacity=2)
    cache.set("a", 1)
    cache.set("b", 2, ttl=1)
    clock.now = 102
    cache.set("c", 3)
    assert (cache.get("a"), cache.get("c"), len(cache)) == (1, 3, 2)
