import pytest
from wrapkit import columnize, table

WORDS = ["alpha", "beta", "gamma", "delta", "eps"]


def test_columnize_column_major():
    assert columnize(WORDS, width=18) == ["alpha  delta", "beta   eps", "gamma"]


def test_columnize_exact_width():
    assert columnize(WORDS, width=19) == ["alpha  gamma  eps", "beta   delta"]


def test_columnize_default_width_fits_80():
    assert columnize(["a" * 39, "b" * 39]) == ["a" * 39 + "  " + "b" * 39]


def test_columnize_one_column_when_narrow():
    assert columnize(["abc", "de"], width=2) == ["abc", "de"]


def test_columnize_all_on_one_line():
    assert columnize(["a", "b", "c"], gap=0) == ["abc"]


def test_columnize_empty():
    assert columnize([], width=10) == []


def test_columnize_negative_gap():
    with pytest.raises(ValueError):
        columnize(["a"], gap=-1)


def test_table_default_left():
    assert table([["a", "bb"], ["ccc", "d"]]) == ["a   | bb", "ccc | d"]


def test_table_alignments():
    rows = [["x", "1", "mid"], ["yyyy", "100", "m"]]
    assert table(rows, sep=" ", align="rrc") == ["   x   1 mid", "yyyy 100  m"]


def test_table_single_row_with_empty_cell():
    assert table([["", "id"]]) == [" | id"]


def test_table_empty():
    assert table([]) == []


def test_table_ragged_rows():
    with pytest.raises(ValueError):
        table([["a", "b"], ["c"]])
