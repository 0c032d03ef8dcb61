import pytest
from wrapkit import center, dedent, indent, justify, justify_lines, truncate


def test_center_even():
    assert center("ab", 6) == "  ab  "


def test_center_odd_remainder_goes_right():
    assert center("ab", 7, "*") == "**ab***"


def test_center_bad_fillchar():
    with pytest.raises(ValueError):
        center("ab", 6, "--")


def test_justify():
    assert justify("a bb cc d", 14) == "a   bb   cc  d"


def test_justify_even_gaps():
    assert justify("aa bb cc", 10) == "aa  bb  cc"


def test_justify_single_word():
    assert justify("word", 7) == "word   "


def test_justify_too_long():
    assert justify("aaa  bbb", 6) == "aaa bbb"


def test_justify_exact_fit():
    assert justify("aa b", 4) == "aa b"


def test_justify_lines_keeps_last():
    assert justify_lines(["a b", "c d"], 5) == ["a   b", "c d"]


def test_justify_lines_empty():
    assert justify_lines([], 5) == []


@pytest.mark.parametrize(
    "width, expected",
    [(11, "hello world"), (10, "hello w..."), (2, ".."), (0, "")],
)
def test_truncate(width, expected):
    assert truncate("hello world", width) == expected


def test_truncate_custom_ellipsis():
    assert truncate("abcdefgh", 5, ellipsis="~") == "abcd~"


def test_truncate_negative_width():
    with pytest.raises(ValueError):
        truncate("abc", -1)


def test_indent_skips_blank_lines():
    assert indent("a\n\nb\n", "> ") == "> a\n\n> b\n"


def test_indent_all_lines():
    assert indent("a\n\nb", "> ", skip_blank=False) == "> a\n> \n> b"


def test_dedent():
    assert dedent("    a\n      b\n\n    c\n") == "a\n  b\n\nc\n"


def test_dedent_stops_at_zero_margin():
    assert dedent("  a\nb\n  c") == "  a\nb\n  c"


def test_dedent_blank_only():
    assert dedent("   \n  ") == "   \n  "
