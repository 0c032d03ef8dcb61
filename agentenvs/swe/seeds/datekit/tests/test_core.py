import pytest
from datekit.core import (
    add_days,
    add_months,
    add_years,
    day_of_year,
    days_between,
    days_in_month,
    days_in_year,
    from_ordinal,
    is_leap_year,
    to_ordinal,
    validate,
    weekday,
    weekday_name,
    zeller_weekday,
)


def test_is_leap_year():
    years = (2024, 2023, 1900, 2000, 2100, 1600)
    assert [is_leap_year(y) for y in years] == [True, False, False, True, False, True]


def test_days_in_year():
    assert [days_in_year(y) for y in (1999, 2000, 2024)] == [365, 366, 366]


def test_days_in_month():
    assert [days_in_month(2023, m) for m in range(1, 13)] == [
        31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31,
    ]  # fmt: skip
    assert days_in_month(2024, 2) == 29
    assert days_in_month(1900, 2) == 28


def test_days_in_month_rejects_bad_month():
    for month in (0, 13):
        with pytest.raises(ValueError):
            days_in_month(2024, month)


def test_validate_accepts_boundaries():
    assert validate(1, 1, 1) == (1, 1, 1)
    assert validate(9999, 12, 31) == (9999, 12, 31)
    assert validate(2024, 2, 29) == (2024, 2, 29)


def test_validate_rejects():
    for date in [(0, 1, 1), (10000, 1, 1), (2023, 2, 29), (2024, 4, 31), (2024, 1, 0)]:
        with pytest.raises(ValueError):
            validate(*date)


def test_day_of_year():
    assert day_of_year(2024, 1, 1) == 1
    assert day_of_year(2024, 3, 1) == 61
    assert day_of_year(2023, 3, 1) == 60
    assert day_of_year(2024, 12, 31) == 366


def test_to_ordinal():
    assert to_ordinal(1, 1, 1) == 1
    assert to_ordinal(2024, 1, 1) == 738886
    assert to_ordinal(2000, 2, 29) == 730179


def test_from_ordinal():
    assert from_ordinal(1) == (1, 1, 1)
    assert from_ordinal(738946) == (2024, 3, 1)
    assert from_ordinal(730179) == (2000, 2, 29)
    assert from_ordinal(3652059) == (9999, 12, 31)


def test_from_ordinal_round_trip_year_ends():
    for year in (1, 4, 99, 100, 400, 1999, 2000, 2023, 2024, 9998):
        for date in ((year, 1, 1), (year, 12, 31)):
            assert from_ordinal(to_ordinal(*date)) == date


def test_from_ordinal_out_of_range():
    for n in (0, -5, 3652060):
        with pytest.raises(ValueError):
            from_ordinal(n)


@pytest.mark.parametrize(
    "date, expected",
    [((2024, 3, 1), 4), ((1970, 1, 1), 3), ((2000, 1, 1), 5), ((1, 1, 1), 0), ((2023, 12, 24), 6)],
)
def test_weekday(date, expected):
    assert weekday(*date) == expected


def test_zeller_weekday():
    assert zeller_weekday(2024, 3, 1) == 4
    assert zeller_weekday(1970, 1, 1) == 3
    assert zeller_weekday(2000, 1, 1) == 5
    assert zeller_weekday(2024, 2, 29) == 3
    assert zeller_weekday(1900, 3, 1) == 3


def test_weekday_name():
    assert weekday_name((2023, 12, 25)) == "Monday"
    assert weekday_name((2023, 12, 31)) == "Sunday"


def test_add_days():
    assert add_days((2024, 2, 28), 1) == (2024, 2, 29)
    assert add_days((2024, 2, 28), 2) == (2024, 3, 1)
    assert add_days((2024, 1, 1), -1) == (2023, 12, 31)
    assert add_days((2024, 3, 1), 365) == (2025, 3, 1)
    assert add_days((2024, 3, 1), 0) == (2024, 3, 1)


def test_add_months_clamps_to_month_end():
    assert add_months((2024, 1, 31), 1) == (2024, 2, 29)
    assert add_months((2023, 1, 31), 1) == (2023, 2, 28)
    assert add_months((2024, 3, 31), 1) == (2024, 4, 30)


def test_add_months_crosses_years():
    assert add_months((2024, 11, 15), 2) == (2025, 1, 15)
    assert add_months((2024, 1, 15), -1) == (2023, 12, 15)
    assert add_months((2024, 5, 10), -17) == (2022, 12, 10)
    assert add_months((2024, 12, 1), 0) == (2024, 12, 1)


def test_add_months_without_clamp_raises():
    with pytest.raises(ValueError):
        add_months((2024, 1, 31), 1, clamp=False)
    assert add_months((2024, 1, 30), 2, clamp=False) == (2024, 3, 30)


def test_add_years():
    assert add_years((2024, 2, 29), 1) == (2025, 2, 28)
    assert add_years((2024, 2, 29), 4) == (2028, 2, 29)
    assert add_years((2020, 6, 15), -3) == (2017, 6, 15)


def test_days_between():
    assert days_between((2024, 1, 1), (2024, 3, 1)) == 60
    assert days_between((2024, 3, 1), (2024, 1, 1)) == -60
    assert days_between((2023, 1, 1), (2024, 1, 1)) == 365
