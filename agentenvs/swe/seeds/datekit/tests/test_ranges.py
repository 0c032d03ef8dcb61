import pytest
from datekit import (
    business_days_between,
    date_range,
    is_weekend,
    month_starts,
    next_weekday,
    overlap_days,
)


def test_date_range_default_excludes_end():
    assert date_range((2024, 2, 27), (2024, 3, 1)) == [(2024, 2, 27), (2024, 2, 28), (2024, 2, 29)]


def test_date_range_inclusive():
    assert date_range((2024, 2, 28), (2024, 3, 1), inclusive=True) == [
        (2024, 2, 28),
        (2024, 2, 29),
        (2024, 3, 1),
    ]


def test_date_range_step_and_reverse():
    assert date_range((2024, 1, 1), (2024, 1, 15), step=7) == [(2024, 1, 1), (2024, 1, 8)]
    assert date_range((2024, 1, 3), (2024, 1, 1), step=-1) == [(2024, 1, 3), (2024, 1, 2)]
    assert date_range((2024, 1, 3), (2024, 1, 1), step=-1, inclusive=True) == [
        (2024, 1, 3),
        (2024, 1, 2),
        (2024, 1, 1),
    ]


def test_date_range_empty_and_zero_step():
    assert date_range((2024, 1, 1), (2024, 1, 1)) == []
    with pytest.raises(ValueError):
        date_range((2024, 1, 1), (2024, 1, 5), step=0)


def test_month_starts():
    assert month_starts((2023, 11, 30), 3) == [(2023, 11, 1), (2023, 12, 1), (2024, 1, 1)]
    assert month_starts((2023, 11, 30), 0) == []
    with pytest.raises(ValueError):
        month_starts((2023, 11, 30), -1)


def test_is_weekend():
    assert [is_weekend((2024, 3, d)) for d in range(1, 5)] == [False, True, True, False]


def test_business_days_between():
    assert business_days_between((2024, 3, 1), (2024, 3, 8)) == 5
    assert business_days_between((2024, 3, 2), (2024, 3, 4)) == 0
    assert business_days_between((2024, 3, 4), (2024, 3, 5)) == 1
    assert business_days_between((2024, 3, 8), (2024, 3, 1)) == -5
    assert business_days_between((2024, 3, 6), (2024, 3, 6)) == 0


def test_next_weekday():
    assert next_weekday((2024, 3, 1), 0) == (2024, 3, 4)
    assert next_weekday((2024, 3, 1), 4) == (2024, 3, 8)
    assert next_weekday((2024, 3, 1), 4, include_today=True) == (2024, 3, 1)
    assert next_weekday((2024, 3, 1), 6) == (2024, 3, 3)


def test_next_weekday_rejects():
    for target in (-1, 7):
        with pytest.raises(ValueError):
            next_weekday((2024, 3, 1), target)


def test_overlap_days():
    a = ((2024, 1, 1), (2024, 1, 10))
    assert overlap_days(a, ((2024, 1, 5), (2024, 2, 1))) == 6
    assert overlap_days(a, ((2024, 1, 10), (2024, 1, 20))) == 1
    assert overlap_days(a, ((2024, 1, 11), (2024, 1, 20))) == 0
    assert overlap_days(a, ((2024, 2, 1), (2024, 2, 20))) == 0
    assert overlap_days(((2024, 1, 3), (2024, 1, 4)), a) == 2
