import pytest
from pathget import WILDCARD, PathError, format_path, parse_path


def test_parse_dotted_and_indexed():
    assert parse_path("a.b[2].c") == ["a", "b", 2, "c"]


def test_parse_consecutive_brackets_and_negative_index():
    assert parse_path("m[0][-1]") == ["m", 0, -1]


def test_parse_leading_bracket_and_root():
    assert parse_path("[3].x") == [3, "x"]
    assert parse_path("$.a[0]") == ["a", 0]
    assert parse_path("$[1]") == [1]


def test_parse_empty_paths():
    assert parse_path("") == []
    assert parse_path("$") == []


def test_parse_wildcards():
    assert parse_path("a[*].b") == ["a", WILDCARD, "b"]
    assert parse_path("a.*.b") == ["a", WILDCARD, "b"]


def test_parse_quoted_keys():
    assert parse_path("a['b.c'].d") == ["a", "b.c", "d"]
    assert parse_path('["*"]') == ["*"]
    assert parse_path('x[""]') == ["x", ""]


def test_parse_sequence_passthrough():
    assert parse_path(("a", 0)) == ["a", 0]


@pytest.mark.parametrize("path", ["a..b", "a.", ".a", "a[1", "a]b", "a[x]", "a[1]b", "a[-]"])
def test_parse_rejects(path):
    with pytest.raises(PathError):
        parse_path(path)


def test_format_path():
    assert format_path(["a", "b", 2, "c"]) == "a.b[2].c"
    assert format_path([0, "x", WILDCARD]) == "[0].x[*]"
    assert format_path(["a", "b.c", ""]) == 'a["b.c"][""]'
    assert format_path([]) == ""


def test_format_parse_round_trip():
    for path in ["a.b[2].c", "[1][2]", "x[*].y", 'k["a[0]"]']:
        assert format_path(parse_path(path)) == path
