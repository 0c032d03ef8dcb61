import pytest
from pathget import PathError, delete_path, get, get_all, has_path, set_path


def make():
    return {"a": {"b": [10, 20, {"c": "deep"}]}, "n": None, "users": [{"name": "ann"}, {"x": 1}]}


def test_get_nested():
    assert get(make(), "a.b[2].c") == "deep"
    assert get(make(), "a.b[0]") == 10
    assert get(make(), "a.b[-1]") == {"c": "deep"}


def test_get_empty_path_returns_object():
    data = make()
    assert get(data, "") is data


def test_get_missing_returns_default():
    assert get(make(), "a.x") is None
    assert get(make(), "a.b[3]", default=-1) == -1
    assert get(make(), "a.b.c", "nope") == "nope"
    assert get(make(), "n.q", 0) == 0


def test_get_bool_is_not_an_index():
    assert get([5, 6], [True], "missing") == "missing"


def test_get_rejects_wildcards():
    with pytest.raises(PathError):
        get(make(), "users[*].name")


def test_has_path():
    assert has_path(make(), "n") is True
    assert has_path(make(), "a.b[2]") is True
    assert has_path(make(), "a.b[3]") is False


def test_get_all_wildcards():
    assert get_all(make(), "users[*].name") == ["ann"]
    assert get_all({"p": {"x": {"v": 1}, "y": {"v": 2}}}, "p.*.v") == [1, 2]
    assert get_all([[1, 2], [3]], "[*][*]") == [1, 2, 3]
    assert get_all(make(), "a.b[1]") == [20]
    assert get_all(make(), "zzz[*]") == []


def test_set_existing_and_new_key():
    data = make()
    assert set_path(data, "a.b[0]", 11) is data
    assert data["a"]["b"][0] == 11
    set_path(data, "a.new", 1)
    assert data["a"]["new"] == 1


def test_set_creates_containers():
    data = {}
    set_path(data, "x.y[0].z", 5)
    assert data == {"x": {"y": [{"z": 5}]}}


def test_set_appends_at_end_and_negative_index():
    data = {"l": [1, 2]}
    set_path(data, "l[2]", 3)
    set_path(data, "l[-1]", 30)
    assert data == {"l": [1, 2, 30]}


def test_set_errors():
    with pytest.raises(IndexError):
        set_path({"l": [1]}, "l[5]", 0)
    with pytest.raises(KeyError):
        set_path({}, "a.b", 1, create=False)
    with pytest.raises(PathError):
        set_path({}, "", 1)
    with pytest.raises(PathError):
        set_path({"a": 3}, "a.b", 1)


def test_set_without_create_on_existing_path():
    data = {"a": {"b": 1}}
    set_path(data, "a.b", 2, create=False)
    assert data == {"a": {"b": 2}}


def test_delete_path():
    data = make()
    assert delete_path(data, "a.b[1]") is True
    assert data["a"]["b"] == [10, {"c": "deep"}]
    assert delete_path(data, "n") is True
    assert "n" not in data


def test_delete_missing():
    assert delete_path(make(), "a.q", missing_ok=True) is False
    assert delete_path(make(), "q.r", missing_ok=True) is False
    with pytest.raises(KeyError):
        delete_path(make(), "a.b[7]")
