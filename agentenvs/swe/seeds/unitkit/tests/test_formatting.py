import pytest
from unitkit import format_quantity, humanize, round_value


def test_format_default_precision_half_up():
    assert format_quantity(2.345, "km") == "2.35 km"
    assert format_quantity(2, "m") == "2.00 m"


def test_format_rounding_modes():
    assert format_quantity(2.345, "km", rounding="half_even") == "2.34 km"
    assert format_quantity(2.5, "m", 0, "half_even") == "2 m"
    assert format_quantity(2.5, "m", 0) == "3 m"
    assert format_quantity(2.999, "m", 1, "down") == "2.9 m"


def test_format_precision_and_trim():
    assert format_quantity(1.5, "m", 3) == "1.500 m"
    assert format_quantity(1.5, "m", 3, trim=True) == "1.5 m"
    assert format_quantity(1.0, "m", 2, trim=True) == "1 m"
    assert format_quantity(120, "s", 0, trim=True) == "120 s"


def test_format_negative_and_zero():
    assert format_quantity(-1.005, "C") == "-1.01 C"
    assert format_quantity(-0.001, "m") == "0.00 m"


def test_round_value_errors():
    with pytest.raises(ValueError):
        round_value(1.0, -1)
    with pytest.raises(ValueError):
        round_value(1.0, 2, "up")


def test_round_value():
    assert str(round_value(0.125)) == "0.13"
    assert str(round_value(0.125, 2, "half_even")) == "0.12"
    assert str(round_value(7, 0)) == "7"


@pytest.mark.parametrize(
    "value, unit, expected",
    [
        (1500, "m", "1.5 km"),
        (0.02, "m", "2 cm"),
        (999, "m", "999 m"),
        (1000, "m", "1 km"),
        (90, "min", "1.5 h"),
        (0.5, "mm", "0.5 mm"),
        (2500, "g", "2.5 kg"),
        (-3000, "g", "-3 kg"),
    ],
)
def test_humanize(value, unit, expected):
    assert humanize(value, unit) == expected


def test_humanize_precision_and_errors():
    assert humanize(1234, "m", precision=2) == "1.23 km"
    with pytest.raises(ValueError):
        humanize(20, "C")
