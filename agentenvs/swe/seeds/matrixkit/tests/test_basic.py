import pytest
from matrixkit import (
    add,
    identity,
    is_symmetric,
    minor,
    multiply,
    power,
    scale,
    shape,
    subtract,
    trace,
    transpose,
    zeros,
)

A = [[1, 2, 3], [4, 5, 6]]


def test_shape():
    assert shape(A) == (2, 3)


def test_shape_empty():
    assert shape([]) == (0, 0)


def test_shape_ragged():
    with pytest.raises(ValueError):
        shape([[1, 2], [3]])


def test_zeros():
    assert zeros(2, 3) == [[0, 0, 0], [0, 0, 0]]


def test_zeros_empty_dimensions():
    assert (zeros(0, 2), zeros(2, 0)) == ([], [[], []])


def test_zeros_negative():
    with pytest.raises(ValueError):
        zeros(2, -1)


def test_identity():
    assert identity(3) == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]


def test_transpose():
    assert transpose(A) == [[1, 4], [2, 5], [3, 6]]


def test_add():
    assert add(A, [[10, 20, 30], [40, 50, 60]]) == [[11, 22, 33], [44, 55, 66]]


def test_subtract():
    assert subtract([[5, 5]], [[1, 7]]) == [[4, -2]]


def test_add_shape_mismatch():
    with pytest.raises(ValueError, match="shapes differ"):
        add(A, [[1, 2], [3, 4]])


def test_scale():
    assert scale([[1, -2], [0, 3]], 3) == [[3, -6], [0, 9]]


def test_multiply():
    assert multiply(A, [[1, 0], [0, 1], [2, 3]]) == [[7, 11], [16, 23]]


def test_multiply_not_commutative():
    assert multiply([[0, 1], [0, 0]], [[0, 0], [1, 0]]) == [[1, 0], [0, 0]]


def test_multiply_column_by_row():
    assert multiply([[1], [2]], [[3, 4, 5]]) == [[3, 4, 5], [6, 8, 10]]


def test_multiply_shape_mismatch():
    with pytest.raises(ValueError):
        multiply(A, A)


def test_power():
    assert power([[1, 1], [1, 0]], 5) == [[8, 5], [5, 3]]


def test_power_zero_is_identity():
    assert power([[2, 3], [4, 5]], 0) == [[1, 0], [0, 1]]


def test_power_negative():
    with pytest.raises(ValueError):
        power([[1]], -1)


def test_trace():
    assert trace([[1, 9, 9], [9, 2, 9], [9, 9, 3]]) == 6


def test_trace_not_square():
    with pytest.raises(ValueError):
        trace(A)


def test_is_symmetric():
    assert [is_symmetric(m) for m in ([[1, 2], [2, 1]], [[1, 2], [3, 1]], [[1, 1, 1]] * 2)] == [
        True,
        False,
        False,
    ]


def test_is_symmetric_checks_last_column():
    assert is_symmetric([[1, 0, 5], [0, 1, 0], [4, 0, 1]]) is False


def test_minor():
    m = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert (minor(m, 1, 2), minor(m, 0, 0)) == ([[1, 2], [7, 8]], [[5, 6], [8, 9]])


def test_minor_out_of_range():
    with pytest.raises(IndexError):
        minor(A, 2, 0)
