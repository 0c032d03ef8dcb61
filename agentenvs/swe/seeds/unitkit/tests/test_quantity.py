import pytest
from unitkit import convert_quantity, parse_quantity


@pytest.mark.parametrize(
    "text, expected",
    [
        ("3.5 km", (3.5, "km")),
        ("10km", (10, "km")),
        ("-40 °C", (-40, "°C")),
        ("+7 g", (7, "g")),
        ("1.2e3 m/s", (1200.0, "m/s")),
        ("5E-1 h", (0.5, "h")),
        (".5 h", (0.5, "h")),
        ("  12   kg  ", (12, "kg")),
    ],
)
def test_parse_quantity(text, expected):
    assert parse_quantity(text) == expected


def test_parse_quantity_keeps_int_type():
    assert type(parse_quantity("3 m")[0]) is int
    assert type(parse_quantity("3. m")[0]) is float


def test_parse_quantity_exponent_needs_digits():
    assert parse_quantity("2 e") == (2, "e")
    assert parse_quantity("2ex") == (2, "ex")


def test_parse_quantity_errors():
    for text in ["", "km", "-", ". m", "12", "3.5   "]:
        with pytest.raises(ValueError):
            parse_quantity(text)


def test_convert_quantity_simple_and_compound():
    assert convert_quantity("3.5 km", "m") == 3500.0
    assert convert_quantity("90 km/h", "m/s") == 25.0
    assert convert_quantity("-40 °F", "C") == -40.0
    assert convert_quantity("2 m^2", "cm^2") == 20000.0
