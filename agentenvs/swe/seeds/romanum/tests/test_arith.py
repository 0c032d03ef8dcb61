import pytest
from romanum import add, compare, roman_range, sort_numerals, subtract, successor


def test_add_many():
    assert add("M", "D", "C", "X") == "MDCX"


def test_add_needs_arguments():
    with pytest.raises(ValueError, match="at least one"):
        add()


def test_subtract_to_one():
    assert subtract("X", "IX") == "I"


def test_subtract_to_zero_raises():
    with pytest.raises(ValueError, match="not positive"):
        subtract("V", "V")


def test_successor_default():
    assert successor("XIX") == "XX"


@pytest.mark.parametrize(
    "left, right, expected", [("X", "IX", 1), ("iv", "IIII", 0), ("C", "M", -1)]
)
def test_compare(left, right, expected):
    assert compare(left, right) == expected


def test_roman_range():
    assert roman_range(1, 5) == ["I", "II", "III", "IV"]


def test_roman_range_zero_step():
    with pytest.raises(ValueError, match="step"):
        roman_range(1, 5, 0)


def test_sort_numerals():
    assert sort_numerals(["X", "IV", "C", "IX"]) == ["IV", "IX", "X", "C"]
