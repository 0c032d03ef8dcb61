import pytest
from lexkit import LexError, Token, token_values, tokenize
from lexkit.tokenizer import match_operator, read_number


def test_token_values_simple_expression():
    assert token_values("x1 + 42*y") == ["x1", "+", 42, "*", "y"]


def test_token_kinds():
    kinds = [t.kind for t in tokenize("a = 1.5 # note\n'hi' and")]
    assert kinds == ["IDENT", "OP", "NUMBER", "STRING", "KEYWORD", "EOF"]


def test_empty_and_blank_input():
    assert tokenize("") == [Token("EOF", None, 1, 1)]
    assert tokenize("  \n ", add_eof=True)[-1] == Token("EOF", None, 2, 2)
    assert tokenize("", add_eof=False) == []


def test_longest_operator_wins():
    assert token_values("a**b<=c>=d==e!=f") == [
        "a",
        "**",
        "b",
        "<=",
        "c",
        ">=",
        "d",
        "==",
        "e",
        "!=",
        "f",
    ]


def test_single_char_operators():
    assert token_values("(a,b)-c/d%e<f>g") == [
        "(", "a", ",", "b", ")", "-", "c", "/", "d", "%", "e", "<", "f", ">", "g",
    ]  # fmt: skip


def test_match_operator():
    assert match_operator("x**2", 1) == "**"
    assert match_operator("x*2", 1) == "*"
    assert match_operator("x@2", 1) is None


def test_read_number():
    assert read_number("123+4", 0) == (123, 3)
    assert read_number("x=3.25;", 2) == (3.25, 6)
    assert read_number("7", 0) == (7, 1)


def test_number_followed_by_dot_is_not_decimal():
    with pytest.raises(LexError):
        tokenize("1.")
    with pytest.raises(LexError):
        tokenize("1.a")
    assert token_values("2.5") == [2.5]
    assert token_values("10 0.5") == [10, 0.5]


def test_identifiers_with_underscores_and_digits():
    assert token_values("_tmp a_1 b2c") == ["_tmp", "a_1", "b2c"]


def test_keywords_are_recognized_exactly():
    tokens = tokenize("not note android", add_eof=False)
    assert [(t.kind, t.value) for t in tokens] == [
        ("KEYWORD", "not"),
        ("IDENT", "note"),
        ("IDENT", "android"),
    ]


def test_positions_single_line():
    tokens = tokenize("ab + 12")
    assert [(t.line, t.column) for t in tokens] == [(1, 1), (1, 4), (1, 6), (1, 8)]


def test_positions_multi_line():
    tokens = tokenize("x\n  yy =\n\n3")
    assert [(t.value, t.line, t.column) for t in tokens] == [
        ("x", 1, 1),
        ("yy", 2, 3),
        ("=", 2, 6),
        (3, 4, 1),
        (None, 4, 2),
    ]


def test_unexpected_character_reports_position():
    with pytest.raises(LexError) as info:
        tokenize("a +\n  b $ c")
    assert (info.value.line, info.value.column) == (2, 5)
    assert str(info.value) == "unexpected character '$' at 2:5"
