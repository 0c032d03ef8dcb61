"""Exact linear algebra with :class:`fractions.Fraction`."""

from __future__ import annotations

from fractions import Fraction

from matrixkit.basic import Matrix, _square_size, identity, shape


def _fractions(matrix: Matrix) -> list[list[Fraction]]:
    return [[Fraction(x) for x in row] for row in matrix]


def determinant(matrix: Matrix) -> Fraction:
    """Determinant by Gaussian elimination; the empty matrix has determinant 1."""
    size = _square_size(matrix)
    a = _fractions(matrix)
    det = Fraction(1)
    for column in range(size):
        pivot = None
        for row in range(column, size):
            if a[row][column] != 0:
                pivot = row
                break
        if pivot is None:
            return Fraction(0)
        if pivot != column:
            a[column], a[pivot] = a[pivot], a[column]
            det = -det
        det *= a[column][column]
        for row in range(column + 1, size):
            factor = a[row][column] / a[column][column]
            for k in range(column, size):
                a[row][k] -= factor * a[column][k]
    return det


def rref(matrix: Matrix) -> tuple[list[list[Fraction]], list[int]]:
    """Reduced row echelon form and the list of pivot columns."""
    rows, columns = shape(matrix)
    a = _fractions(matrix)
    pivots: list[int] = []
    top = 0
    for column in range(columns):
        if top >= rows:
            break
        pivot = None
        for row in range(top, rows):
            if a[row][column] != 0:
                pivot = row
                break
        if pivot is None:
            continue
        a[top], a[pivot] = a[pivot], a[top]
        lead = a[top][column]
        a[top] = [x / lead for x in a[top]]
        for row in range(rows):
            if row != top and a[row][column] != 0:
                factor = a[row][column]
                a[row] = [x - factor * y for x, y in zip(a[row], a[top], strict=True)]
        pivots.append(column)
        top += 1
    return a, pivots


def rank(matrix: Matrix) -> int:
    """Number of linearly independent rows."""
    return len(rref(matrix)[1])


def solve(a: Matrix, b: list) -> list[Fraction]:
    """Solve ``a x = b`` for a square, non-singular ``a``; raise ValueError otherwise."""
    size = _square_size(a)
    if len(b) != size:
        raise ValueError(f"right-hand side has {len(b)} entries, expected {size}")
    augmented = [list(row) + [value] for row, value in zip(a, b, strict=True)]
    reduced, pivots = rref(augmented)
    if pivots[:size] != list(range(size)):
        raise ValueError("matrix is singular")
    return [reduced[i][size] for i in range(size)]


def inverse(matrix: Matrix) -> list[list[Fraction]]:
    """Inverse of a square, non-singular matrix."""
    size = _square_size(matrix)
    eye = identity(size)
    reduced, pivots = rref([list(row) + eye[i] for i, row in enumerate(matrix)])
    if pivots[:size] != list(range(size)):
        raise ValueError("matrix is singular")
    return [row[size:] for row in reduced]
