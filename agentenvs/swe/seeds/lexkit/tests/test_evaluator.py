import pytest
from lexkit import EvalError, apply_binary, evaluate, format_rpn, to_rpn, tokenize


def rpn(source):
    return format_rpn(to_rpn(tokenize(source)))


def test_rpn_precedence():
    assert rpn("1 + 2 * 3") == "1 2 3 * +"
    assert rpn("(1 + 2) * 3") == "1 2 + 3 *"


def test_rpn_left_associative():
    assert rpn("8 - 3 - 2") == "8 3 - 2 -"
    with pytest.raises(EvalError):
        to_rpn(tokenize("(1 + 2"))


def test_rpn_right_associative_power():
    assert rpn("2 ** 3 ** 2") == "2 3 2 ** **"


def test_rpn_unary_minus_and_functions():
    assert rpn("-a * 2") == "a neg 2 *"
    assert rpn("max(1, 2 + 3)") == "1 2 3 + max"


@pytest.mark.parametrize(
    "source, expected",
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("10 - 4 - 3", 3),
        ("2 ** 3 ** 2", 512),
        ("7 / 2", 3.5),
        ("7 % 4 * 2", 6),
        ("-2 ** 2", -4),
        ("2 ** -1", 0.5),
        ("-(3 - 5)", 2),
        ("1 - -1", 2),
    ],
)
def test_arithmetic(source, expected):
    assert evaluate(source) == expected


def test_comparisons():
    assert [evaluate(s) for s in ("1 < 2", "2 < 2", "2 <= 2", "3 > 3", "3 >= 3")] == [
        True, False, True, False, True,
    ]  # fmt: skip
    assert [evaluate(s) for s in ("1 + 1 == 2", "1 != 1", "2 * 3 > 5")] == [True, False, True]
    assert [evaluate(s) for s in ("3 <= 2", "2 >= 3", "3 == 5 - 2")] == [False, False, True]


def test_operator_precedence():
    assert [evaluate(s) for s in ("8 - 3 * 2", "1 + 6 / 2", "2 * 7 % 4")] == [2, 4.0, 2]
    ops = ["==", "!=", "<", "<=", ">", ">="]
    assert [evaluate(f"not 2 {op} 3") for op in ops] == [True, False, False, False, True, True]
    assert [evaluate(f"3 {op} 2 + 5") for op in ops] == [False, True, True, True, False, False]


def test_boolean_logic():
    assert evaluate("true and not false") is True
    assert evaluate("not 1 == 2") is True
    assert evaluate("false or 1 < 0") is False
    assert evaluate("1 < 2 and 2 < 1 or true") is True
    assert evaluate("true or false and false") is True
    assert evaluate("1 < 2 and 2 < 1") is False
    assert evaluate("true and -1 < 0") is True


def test_variables():
    assert evaluate("rate * hours + 5", {"rate": 12, "hours": 3}) == 41
    with pytest.raises(EvalError):
        evaluate("x + 1")


def test_functions():
    assert evaluate("abs(3 - 10)") == 7
    assert evaluate("min(4, 2 * 3) + max(1, 2)") == 6
    assert evaluate("max(min(5, 9), abs(-7))") == 7
    assert evaluate("1 + min(5, 2) * 3") == 7


def test_strings_concatenate():
    assert evaluate("'ab' + \"cd\"") == "abcd"


def test_division_by_zero():
    with pytest.raises(EvalError):
        evaluate("1 / (2 - 2)")
    with pytest.raises(EvalError):
        evaluate("5 % 0")


def test_apply_binary_direct():
    assert apply_binary("-", 10, 4) == 6
    assert apply_binary("/", 9, 3) == 3.0
    with pytest.raises(EvalError):
        apply_binary("=", 1, 2)


def test_malformed_expressions():
    for source in ["(1 + 2", "1 + 2)", "1 2", "1 +", "", "a = 1", "max(1, 2"]:
        with pytest.raises(EvalError):
            evaluate(source)
