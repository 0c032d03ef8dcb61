import pytest
from pathget import flatten, unflatten


def test_flatten_nested():
    assert flatten({"a": {"b": 1, "c": [2, 3]}, "d": 4}) == {
        "a.b": 1,
        "a.c.0": 2,
        "a.c.1": 3,
        "d": 4,
    }


def test_flatten_custom_separator():
    assert flatten({"a": {"b": {"c": 1}}}, sep="/") == {"a/b/c": 1}


def test_flatten_keeps_empty_containers():
    assert flatten({"a": {}, "b": [], "c": {"d": []}}) == {"a": {}, "b": [], "c.d": []}
    assert flatten({}) == {}


def test_flatten_max_depth():
    data = {"a": {"b": {"c": 1}}, "x": 2}
    assert flatten(data, max_depth=1) == {"a": {"b": {"c": 1}}, "x": 2}
    assert flatten(data, max_depth=2) == {"a.b": {"c": 1}, "x": 2}
    assert flatten(data, max_depth=3) == {"a.b.c": 1, "x": 2}


def test_flatten_errors():
    with pytest.raises(ValueError):
        flatten({"a.b": 1})
    with pytest.raises(TypeError):
        flatten([1, 2])


def test_unflatten_nested_and_lists():
    assert unflatten({"a.b": 1, "a.c.0": 2, "a.c.1": 3, "d": 4}) == {
        "a": {"b": 1, "c": [2, 3]},
        "d": 4,
    }


def test_unflatten_without_lists():
    assert unflatten({"c.0": 2, "c.1": 3}, lists=False) == {"c": {"0": 2, "1": 3}}


def test_unflatten_non_contiguous_digits_stay_dict():
    assert unflatten({"c.0": 1, "c.2": 3}) == {"c": {"0": 1, "2": 3}}
    assert unflatten({"c.1": 1}) == {"c": {"1": 1}}


def test_unflatten_separator():
    assert unflatten({"a/b": 1, "a/c": 2}, sep="/") == {"a": {"b": 1, "c": 2}}


def test_unflatten_conflicts():
    with pytest.raises(ValueError):
        unflatten({"a": 1, "a.b": 2})
    with pytest.raises(ValueError):
        unflatten({"a.b": 2, "a": 1})


def test_round_trip():
    data = {"cfg": {"hosts": ["h1", "h2"], "port": 80, "opts": {"tls": True}}}
    assert unflatten(flatten(data)) == data
