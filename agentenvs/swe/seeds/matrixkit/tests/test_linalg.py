from fractions import Fraction

import pytest
from matrixkit import determinant, inverse, rank, rref, solve


def test_determinant_2x2():
    assert determinant([[3, 8], [4, 6]]) == -14


def test_determinant_3x3():
    assert determinant([[6, 1, 1], [4, -2, 5], [2, 8, 7]]) == -306


def test_determinant_needs_row_swap():
    assert determinant([[0, 1], [1, 0]]) == -1


def test_determinant_swap_with_later_row():
    assert determinant([[0, 0, 2], [0, 3, 0], [4, 0, 0]]) == -24


def test_determinant_singular():
    assert determinant([[1, 2], [2, 4]]) == 0


def test_determinant_fractional():
    assert determinant([[Fraction(1, 2), 1], [1, 3]]) == Fraction(1, 2)


def test_determinant_empty():
    assert determinant([]) == 1


def test_determinant_not_square():
    with pytest.raises(ValueError):
        determinant([[1, 2]])


def test_rref():
    assert rref([[1, 2, 3], [2, 4, 7]]) == ([[1, 2, 0], [0, 0, 1]], [0, 2])


def test_rref_scales_pivot_rows():
    assert rref([[2, 4], [3, 1]]) == ([[1, 0], [0, 1]], [0, 1])


def test_rref_swaps_rows():
    assert rref([[0, 2], [3, 1]]) == ([[1, 0], [0, 1]], [0, 1])


def test_rank():
    assert [rank([[1, 2], [2, 4]]), rank([[1, 2], [3, 4]]), rank([[0, 0]])] == [1, 2, 0]


def test_rank_wide():
    assert rank([[1, 0, 0, 1], [0, 1, 0, 1], [1, 1, 0, 2]]) == 2


def test_rank_tall():
    assert rank([[1], [2], [3]]) == 1


def test_solve():
    assert solve([[2, 1], [1, 3]], [3, 5]) == [Fraction(4, 5), Fraction(7, 5)]


def test_solve_3x3():
    assert solve([[1, 1, 1], [0, 2, 5], [2, 5, -1]], [6, -4, 27]) == [5, 3, -2]


def test_solve_singular():
    with pytest.raises(ValueError):
        solve([[1, 2], [2, 4]], [3, 6])


def test_solve_bad_rhs():
    with pytest.raises(ValueError, match="right-hand side"):
        solve([[1, 0], [0, 1]], [1])


def test_inverse():
    assert inverse([[4, 7], [2, 6]]) == [
        [Fraction(3, 5), Fraction(-7, 10)],
        [Fraction(-1, 5), Fraction(2, 5)],
    ]


def test_inverse_singular():
    with pytest.raises(ValueError):
        inverse([[1, 2], [2, 4]])
