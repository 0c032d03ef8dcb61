import pytest
from heapkit import k_largest, k_smallest, merge_sorted, running_median


def test_k_smallest():
    assert k_smallest([5, 1, 4, 1, 3], 3) == [1, 1, 3]
    assert k_smallest([5, 1, 4], 0) == []
    assert k_smallest([5, 1, 4], 10) == [1, 4, 5]


def test_k_smallest_key_is_stable():
    words = ["pear", "fig", "kiwi", "plum", "date"]
    assert k_smallest(words, 3, key=len) == ["fig", "pear", "kiwi"]


def test_k_largest():
    assert k_largest([5, 1, 4, 1, 3, 9], 3) == [9, 5, 4]
    assert k_largest([5, 1], 5) == [5, 1]
    assert k_largest([2, 2, 1], 2) == [2, 2]
    assert k_largest([3], 0) == []


def test_k_negative_raises():
    with pytest.raises(ValueError):
        k_smallest([1], -1)
    with pytest.raises(ValueError):
        k_largest([1], -1)


def test_merge_sorted():
    assert merge_sorted([1, 4, 7], [2, 5], [], [3, 6, 8, 9]) == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert merge_sorted([1, 1], [1, 2]) == [1, 1, 1, 2]
    assert merge_sorted() == []
    assert merge_sorted([], [4]) == [4]


def test_running_median():
    assert running_median([5, 15, 1, 3, 8, 7]) == [5, 10.0, 5, 4.0, 5, 6.0]
    assert running_median([]) == []
    assert running_median([4, 2]) == [4, 3.0]
    assert running_median([1, 2, 3, 4, 5]) == [1, 1.5, 2, 2.5, 3]
