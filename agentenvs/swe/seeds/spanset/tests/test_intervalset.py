import pytest
from spanset import IntervalSet


def test_truthiness():
    assert (bool(IntervalSet()), bool(IntervalSet([(0, 1)]))) == (False, True)


@pytest.mark.parametrize("point, expected", [(-1, False), (0, True), (6, True)])
def test_contains(point, expected):
    assert (point in IntervalSet([(0, 2), (5, 7)])) is expected


def test_contains_end_points_excluded():
    assert [p in IntervalSet([(0, 2), (5, 7)]) for p in (2, 7)] == [False, False]


def test_add_bridges_spans():
    s = IntervalSet([(0, 2), (5, 7)])
    s.add(2, 5)
    assert s.spans == [(0, 7)]


def test_remove_splits_span():
    s = IntervalSet([(0, 10)])
    s.remove(4, 6)
    assert s.spans == [(0, 4), (6, 10)]


def test_total_length():
    assert IntervalSet([(0, 2), (5, 7.5)]).total_length() == 4.5


def test_bounds():
    assert IntervalSet([(5, 7), (0, 2)]).bounds() == (0, 7)


def test_bounds_empty():
    assert IntervalSet().bounds() is None


def test_union_operator():
    assert (IntervalSet([(0, 1)]) | IntervalSet([(1, 3)])) == IntervalSet([(0, 3)])


def test_difference_operator():
    assert (IntervalSet([(0, 5)]) - IntervalSet([(1, 2)])).spans == [(0, 1), (2, 5)]


def test_complement_method():
    assert IntervalSet([(2, 4)]).complement(0, 6).spans == [(0, 2), (4, 6)]


def test_equality():
    assert (IntervalSet([(1, 2)]) == IntervalSet([(1, 2)]), IntervalSet() == []) == (True, False)
