import pytest
from datekit.parse import (
    format_iso,
    format_long,
    month_from_name,
    parse_date,
    parse_iso,
    parse_long,
    parse_slash,
)


def test_parse_iso():
    assert parse_iso("2024-03-01") == (2024, 3, 1)
    assert parse_iso(" 1999-12-31 ") == (1999, 12, 31)


def test_parse_iso_rejects():
    for text in ["2024-3-01", "24-03-01", "2024-03", "2024-03-01-05", "2024-02-30", "2024-ab-01"]:
        with pytest.raises(ValueError):
            parse_iso(text)


def test_parse_slash_dayfirst_default():
    assert parse_slash("01/03/2024") == (2024, 3, 1)
    assert parse_slash("1/3/2024") == (2024, 3, 1)
    assert parse_slash("31/12/2023") == (2023, 12, 31)


def test_parse_slash_monthfirst():
    assert parse_slash("01/03/2024", dayfirst=False) == (2024, 1, 3)
    assert parse_slash("12/31/2023", dayfirst=False) == (2023, 12, 31)


def test_parse_slash_rejects():
    for text in [
        "001/03/2024",
        "1/003/2024",
        "+1/03/2024",
        "01/03/24",
        "01/03",
        "13/13/2024",
        "x/03/2024",
    ]:
        with pytest.raises(ValueError):
            parse_slash(text)


@pytest.mark.parametrize(
    "name, expected",
    [("March", 3), ("Sept.", 9), ("JAN", 1)],
)
def test_month_from_name(name, expected):
    assert month_from_name(name) == expected


def test_month_from_name_rejects():
    for name in ["Ma", "Ju", "Smarch", ""]:
        with pytest.raises(ValueError):
            month_from_name(name)


def test_parse_long():
    assert parse_long("March 1, 2024") == (2024, 3, 1)
    assert parse_long("Feb 29 2024") == (2024, 2, 29)
    assert parse_long("december 31, 1999") == (1999, 12, 31)


def test_parse_long_rejects():
    for text in [
        "March 2024",
        "March 1, 24",
        "March 010, 2024",
        "March 1, 2024 10:00",
        "Feb 30, 2024",
    ]:
        with pytest.raises(ValueError):
            parse_long(text)


def test_parse_date_dispatch():
    assert parse_date(" 2024-03-01") == (2024, 3, 1)
    assert parse_date("01/03/2024") == (2024, 3, 1)
    assert parse_date("01/03/2024", dayfirst=False) == (2024, 1, 3)
    assert parse_date("  March 1, 2024") == (2024, 3, 1)


def test_parse_date_rejects():
    for text in ["", "   ", "yesterday"]:
        with pytest.raises(ValueError):
            parse_date(text)


def test_format_iso():
    assert format_iso((2024, 3, 1)) == "2024-03-01"
    assert format_iso((7, 1, 9)) == "0007-01-09"


def test_format_long():
    assert format_long((2024, 3, 1)) == "March 1, 2024"
    assert format_long((2024, 9, 15), abbreviate=True) == "Sep 15, 2024"


def test_format_rejects_invalid_date():
    with pytest.raises(ValueError):
        format_iso((2023, 2, 29))
