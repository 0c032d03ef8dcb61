import pytest
from spanset import complement, gaps, intersect, merge, normalize, subtract, total_length


def test_normalize_sorts_and_drops_empty():
    assert normalize([(5, 6), (1, 1), (2, 3)]) == [(2, 3), (5, 6)]


def test_normalize_rejects_reversed():
    with pytest.raises(ValueError):
        normalize([(1, 2), (4, 3)])


def test_merge_overlapping():
    assert merge([(1, 3), (2, 5)]) == [(1, 5)]


def test_merge_after_disjoint_span():
    assert merge([(7, 9), (1, 2), (4, 6), (5, 8)]) == [(1, 2), (4, 9)]


def test_merge_touching_default():
    assert merge([(1, 2), (2, 3)]) == [(1, 3)]


def test_merge_touching_disabled():
    assert merge([(1, 2), (2, 3)], touching=False) == [(1, 2), (2, 3)]


def test_total_length_counts_overlap_once():
    assert total_length([(0, 4), (2, 6), (10, 11)]) == 7


def test_intersect():
    assert intersect([(0, 5), (8, 12)], [(3, 9), (11, 20)]) == [(3, 5), (8, 9), (11, 12)]


def test_intersect_touching_is_empty():
    assert intersect([(5, 8)], [(0, 5), (8, 9)]) == []


def test_subtract_middle():
    assert subtract([(0, 10)], [(3, 5)]) == [(0, 3), (5, 10)]


def test_subtract_several_holes():
    assert subtract([(0, 10), (20, 30)], [(-5, 2), (8, 22), (25, 26)]) == [
        (2, 8),
        (22, 25),
        (26, 30),
    ]


def test_subtract_hole_at_start():
    assert subtract([(0, 10)], [(0, 3)]) == [(3, 10)]


def test_subtract_hole_at_end():
    assert subtract([(0, 10)], [(7, 10)]) == [(0, 7)]


def test_subtract_hole_after():
    assert subtract([(0, 5)], [(7, 9)]) == [(0, 5)]


def test_complement():
    assert complement([(2, 3), (5, 7)], 0, 10) == [(0, 2), (3, 5), (7, 10)]


def test_gaps_min_size():
    assert gaps([(0, 1), (3, 4), (4.5, 6), (7, 9)], min_size=1) == [(1, 3)]


def test_gaps_default_keeps_all():
    assert gaps([(0, 1), (2, 3), (3.5, 4)]) == [(1, 2), (3, 3.5)]
