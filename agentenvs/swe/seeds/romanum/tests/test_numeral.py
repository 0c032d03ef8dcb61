import pytest
from romanum import Roman


def test_from_int_str():
    assert str(Roman(1987)) == "MCMLXXXVII"


def test_from_lenient_string():
    assert Roman("xiiii").value == 14


def test_from_roman_copy():
    assert Roman(Roman(7)).value == 7


def test_repr():
    assert repr(Roman(12)) == "Roman('XII')"


def test_out_of_range():
    with pytest.raises(ValueError):
        Roman(0)


def test_equality_with_int():
    assert (Roman(5) == 5, Roman(5) == Roman(5), Roman(5) == 6, Roman(5) == "five") == (
        True,
        True,
        False,
        False,
    )


def test_compare_with_string():
    assert (Roman(5) == "V", Roman(5) < "vi", Roman(5) > "IV") == (True, True, True)


def test_ordering():
    assert sorted([Roman(10), Roman(2), Roman(5)]) == [2, 5, 10]


def test_less_equal_on_equal_values():
    assert (Roman(3) <= Roman(3), Roman(3) < Roman(3)) == (True, False)


def test_add_and_radd():
    assert (Roman(3) + 4, 4 + Roman(3)) == (Roman(7), Roman(7))


def test_sub_and_rsub():
    assert (Roman(10) - 3, 30 - Roman(10)) == (Roman(7), Roman(20))


def test_sub_to_zero_raises():
    with pytest.raises(ValueError):
        Roman(4) - Roman(4)


def test_arithmetic_with_numeral_string():
    assert (Roman(10) + "v", "L" - Roman(8)) == (Roman(15), Roman(42))


def test_arithmetic_rejects_bool():
    with pytest.raises(TypeError):
        Roman(5) + True


def test_mul_and_floordiv():
    assert (Roman(12) * 3, 2 * Roman(12), Roman(12) // 5) == (36, 24, 2)
