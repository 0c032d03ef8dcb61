import pytest
from lexkit import LexError, read_string, token_values, tokenize


def test_double_and_single_quoted_strings():
    assert token_values("\"hi\" 'there'") == ["hi", "there"]


def test_string_escapes():
    assert token_values(r'"a\nb\tc\\d\"e"') == ['a\nb\tc\\d"e']
    assert token_values(r"'it\'s'") == ["it's"]


def test_other_quote_needs_no_escape():
    assert token_values("'say \"x\"'") == ['say "x"']


def test_empty_string():
    assert token_values('""') == [""]


def test_read_string_returns_end_index():
    assert read_string('x = "ab" + 1', 4, 1, 5) == ("ab", 8)
    assert read_string(r'"a\0"', 0, 1, 1) == ("a\0", 5)


def test_unknown_escape_position():
    with pytest.raises(LexError) as info:
        tokenize('  "ab\\q"')
    assert (info.value.line, info.value.column) == (1, 6)


def test_unterminated_string():
    with pytest.raises(LexError) as info:
        tokenize('x = "abc')
    assert (info.value.line, info.value.column) == (1, 5)


def test_string_cannot_span_lines():
    with pytest.raises(LexError):
        tokenize('"abc\ndef"')


def test_position_after_string():
    tokens = tokenize("'ab' x")
    assert [(t.value, t.column) for t in tokens] == [("ab", 1), ("x", 6), (None, 7)]


def test_comments_are_skipped_by_default():
    assert token_values("a # b c\nd") == ["a", "d"]
    assert token_values("# only a comment") == []


def test_comments_kept_on_request():
    tokens = tokenize("x  #  hello \n#bye", keep_comments=True, add_eof=False)
    assert [(t.kind, t.value, t.line, t.column) for t in tokens] == [
        ("IDENT", "x", 1, 1),
        ("COMMENT", "hello", 1, 4),
        ("COMMENT", "bye", 2, 1),
    ]


def test_hash_inside_string_is_not_a_comment():
    assert token_values("'a#b' c") == ["a#b", "c"]
