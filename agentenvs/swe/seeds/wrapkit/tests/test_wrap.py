import pytest
from wrapkit import chop, fill, wrap, wrap_paragraphs

TEXT = "the quick brown fox jumps over the lazy dog"


def test_chop():
    assert chop("abcdefg", 3) == ["abc", "def", "g"]


def test_chop_bad_width():
    with pytest.raises(ValueError, match="width"):
        chop("abc", 0)


def test_wrap():
    assert wrap(TEXT, 10) == ["the quick", "brown fox", "jumps over", "the lazy", "dog"]


def test_wrap_line_exactly_full():
    assert wrap("a b c d", 5) == ["a b c", "d"]


def test_wrap_default_width():
    x68, x69 = "x" * 68, "x" * 69
    assert wrap(f"{x68} y {x69} y") == [x68 + " y", x69, "y"]


def test_wrap_collapses_whitespace():
    assert wrap("  a \n b\t\tc  ", 20) == ["a b c"]


def test_wrap_breaks_long_word():
    assert wrap("ab abcdefgh xy", 3) == ["ab", "abc", "def", "gh", "xy"]


def test_wrap_long_word_tail_takes_next_word():
    assert wrap("abcdefg hi", 5) == ["abcde", "fg hi"]


def test_wrap_long_word_tail_width_counted():
    assert wrap("ab abcdefgh hi", 5) == ["ab", "abcde", "fgh", "hi"]


def test_wrap_keeps_long_word():
    assert wrap("a abcdefgh b", 4, break_long_words=False) == ["a", "abcdefgh", "b"]


def test_wrap_width_one():
    assert wrap("ab c", 1) == ["a", "b", "c"]


def test_wrap_bad_width():
    with pytest.raises(ValueError):
        wrap("a b", 0, break_long_words=False)


def test_fill():
    assert fill("one two three four", 9) == "one two\nthree\nfour"


def test_fill_defaults():
    assert fill("x" * 71) == "x" * 70 + "\nx"


def test_wrap_paragraphs():
    assert wrap_paragraphs("aa bb cc\n\n\n\ndd ee", 5) == "aa bb\ncc\n\ndd ee"


def test_wrap_paragraphs_default_width():
    assert wrap_paragraphs("y\n\n" + "x" * 71) == "y\n\n" + "x" * 70 + "\nx"
