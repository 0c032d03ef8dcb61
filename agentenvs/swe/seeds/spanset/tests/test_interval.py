import pytest
from spanset import Interval


def test_length():
    assert Interval(2, 7).length == 5


def test_end_before_start_raises():
    with pytest.raises(ValueError):
        Interval(3, 2)


def test_intervals_are_hashable():
    assert len({Interval(1, 2), Interval(1, 2), Interval(1, 2, True)}) == 2


def test_contains_half_open():
    assert [Interval(1, 5).contains(p) for p in (0, 1, 5)] == [False, True, False]


def test_contains_closed():
    assert [Interval(1, 5, closed=True).contains(p) for p in (3, 5, 6)] == [True, True, False]


def test_overlaps_touching_half_open():
    assert Interval(1, 3).overlaps(Interval(3, 5)) is False


def test_overlaps_touching_closed():
    assert Interval(1, 3, closed=True).overlaps(Interval(3, 5)) is True


def test_intersection():
    assert Interval(1, 6).intersection(Interval(4, 9)) == Interval(4, 6)


def test_intersection_closed_both():
    assert Interval(1, 6, True).intersection(Interval(4, 6, True)) == Interval(4, 6, True)


def test_intersection_disjoint():
    assert Interval(1, 2).intersection(Interval(5, 6)) is None


def test_hull_keeps_closed_end():
    assert Interval(0, 2).hull(Interval(1, 4, closed=True)) == Interval(0, 4, True)


def test_covers():
    assert Interval(2, 10).covers(Interval(2, 5)) is True


def test_covers_empty_interval_anywhere():
    assert Interval(0, 2).covers(Interval(5, 5)) is True


def test_covers_same_end_closed():
    assert Interval(0, 10, closed=True).covers(Interval(2, 10, closed=True)) is True


def test_covers_sticks_out():
    assert Interval(2, 10).covers(Interval(1, 5)) is False


def test_shift():
    assert Interval(1, 4, closed=True).shift(10) == Interval(11, 14, closed=True)


def test_split():
    assert Interval(0, 10, closed=True).split(4) == (Interval(0, 4), Interval(4, 10, True))


@pytest.mark.parametrize("at", [3, 10])
def test_split_at_end_point_raises(at):
    with pytest.raises(ValueError):
        Interval(3, 10).split(at)
