from cachebox import make_key, memoize


def test_make_key_kwargs_order_independent():
    assert make_key((1,), {"b": 2, "a": 1}) == make_key((1,), {"a": 1, "b": 2})


def test_make_key_typed():
    assert (make_key((1,), {}, typed=True), make_key((1,), {"x": 2.0}, typed=True)[-2:]) == (
        (1, int),
        (int, float),
    )


def test_untyped_int_and_float_share_key():
    assert make_key((1,), {}) == make_key((1.0,), {})


def counting(**options):
    calls = []

    @memoize(**options)
    def square(x, power=2):
        calls.append(x)
        return x**power

    return square, calls


def test_memoize_caches_results():
    square, calls = counting()
    assert ([square(3), square(3.0), square(4)], calls) == ([9, 9, 16], [3, 4])


def test_memoize_kwargs():
    square, calls = counting()
    assert ([square(2, power=3), square(2, power=3), square(2)], calls) == ([8, 8, 4], [2, 2])


def test_memoize_maxsize_evicts():
    square, calls = counting(maxsize=2)
    for x in [1, 2, 3, 1]:
        square(x)
    assert calls == [1, 2, 3, 1]


def test_memoize_typed():
    square, calls = counting(typed=True)
    square(2)
    square(2.0)
    assert calls == [2, 2.0]


def test_cache_info():
    square, _ = counting(maxsize=1)
    for x in [5, 5, 6]:
        square(x)
    info = square.cache_info()
    assert (info.hits, info.misses, info.evictions, info.size) == (1, 2, 1, 1)


def test_cache_clear():
    square, calls = counting()
    square(5)
    square.cache_clear()
    square(5)
    assert (calls, square.cache_info().misses) == ([5, 5], 1)


def test_bare_decorator():
    @memoize
    def double(x):
        """Double x."""
        return 2 * x

    assert (double(4), double.__name__, double.__doc__, double.cache_info().capacity) == (
        8,
        "double",
        "Double x.",
        128,
    )


def test_memoize_caches_none():
    calls = []

    @memoize()
    def nothing():
        calls.append(1)

    nothing()
    nothing()
    assert calls == [1]
