import pytest
from unitkit import convert, convert_compound, get_unit, parse_compound


@pytest.mark.parametrize(
    "value, src, dst, expected",
    [
        (3.5, "km", "m", 3500.0),
        (250, "cm", "m", 2.5),
        (12, "in", "ft", 1.0),
        (1, "mi", "km", 1.609344),
        (1, "lb", "g", 453.59237),
        (2500, "mg", "g", 2.5),
        (90, "min", "h", 1.5),
        (1, "day", "s", 86400.0),
        (750, "ms", "s", 0.75),
    ],
)
def test_convert_linear(value, src, dst, expected):
    assert convert(value, src, dst) == expected


def test_convert_temperature_offsets():
    assert convert(100, "C", "F") == 212.0
    assert convert(-40, "F", "C") == -40.0
    assert convert(0, "C", "K") == 273.15
    assert convert(98.6, "F", "C") == 37.0
    assert convert(0, "K", "F") == -459.67


def test_convert_same_unit_and_aliases():
    assert convert(7, "m", "meter") == 7.0
    assert convert(2, "hours", "min") == 120.0
    assert convert(20, "°C", "degF") == 68.0


def test_convert_incompatible_dimensions():
    with pytest.raises(ValueError):
        convert(1, "m", "s")
    with pytest.raises(ValueError):
        convert(1, "kg", "C")


def test_get_unit():
    assert get_unit(" km ").symbol == "km"
    assert get_unit("hr").dimension == "time"
    with pytest.raises(ValueError):
        get_unit("furlong")


def test_parse_compound():
    factor, dims = parse_compound("km/h")
    assert (float(factor), dims) == (1000 / 3600, {"length": 1, "time": -1})
    assert parse_compound("kg*m/s^2")[1] == {"mass": 1, "length": 1, "time": -2}
    assert parse_compound("m*m/m")[1] == {"length": 1}
    assert parse_compound("g^2")[0] == parse_compound("mg*kg")[0]


def test_parse_compound_errors():
    for expr in ["m/s/s", "m/", "/s", "C/s", "m^x"]:
        with pytest.raises(ValueError):
            parse_compound(expr)


def test_convert_compound():
    assert convert_compound(36, "km/h", "m/s") == 10.0
    assert convert_compound(10, "m/s", "km/h") == 36.0
    assert convert_compound(60, "mi/h", "km/h") == 96.56064
    assert convert_compound(1, "km/min", "m/s") == 50 / 3
    assert convert_compound(2, "m/s^2", "cm/ms^2") == 0.0002


def test_convert_compound_incompatible():
    with pytest.raises(ValueError):
        convert_compound(1, "m/s", "m/s^2")
