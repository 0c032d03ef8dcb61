import pytest
from romanum import check_range, components, from_roman, is_valid, to_roman


def test_to_roman_subtractive_pairs():
    assert [to_roman(v) for v in (4, 9, 40, 90, 400, 900)] == ["IV", "IX", "XL", "XC", "CD", "CM"]


def test_to_roman_small():
    assert [to_roman(v) for v in (1, 2, 3, 5, 6)] == ["I", "II", "III", "V", "VI"]


def test_to_roman_large():
    assert to_roman(1994) == "MCMXCIV"


def test_to_roman_lowercase():
    assert to_roman(2024, lowercase=True) == "mmxxiv"


@pytest.mark.parametrize("value", [0, 4000])
def test_to_roman_out_of_range(value):
    with pytest.raises(ValueError):
        to_roman(value)


def test_check_range_rejects_bool():
    with pytest.raises(TypeError):
        check_range(True)


def test_components():
    assert components(1994) == ["M", "CM", "XC", "IV"]


def test_components_repeats():
    assert components(3008) == ["M", "M", "M", "V", "I", "I", "I"]


@pytest.mark.parametrize("numeral, value", [("I", 1), ("XLIX", 49), ("MMMCMXCIX", 3999)])
def test_from_roman_bounds(numeral, value):
    assert from_roman(numeral) == value


def test_from_roman_rejects_noncanonical():
    with pytest.raises(ValueError):
        from_roman("IIII")


def test_from_roman_rejects_lowercase_when_strict():
    with pytest.raises(ValueError):
        from_roman("xiv")


def test_from_roman_lenient():
    assert from_roman(" iiii ", strict=False) == 4


def test_from_roman_lenient_out_of_range():
    with pytest.raises(ValueError):
        from_roman("MMMM", strict=False)


def test_from_roman_empty():
    with pytest.raises(ValueError, match="empty"):
        from_roman("")


def test_from_roman_bad_digit():
    with pytest.raises(ValueError):
        from_roman("XIZ")


def test_is_valid():
    assert [is_valid(s) for s in ["XIV", "VX", "ABC", "MMMCMXCIX"]] == [True, False, False, True]


def test_from_roman_non_string():
    with pytest.raises(TypeError, match="expected a str"):
        from_roman(14)
