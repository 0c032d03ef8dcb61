"""Shape checks and elementwise / product operations on lists of lists."""

from __future__ import annotations

from numbers import Number

Matrix = list[list[Number]]


def shape(matrix: Matrix) -> tuple[int, int]:
    """Return ``(rows, columns)``; raise ValueError for ragged rows.

    The empty matrix ``[]`` has shape ``(0, 0)``.
    """
    if not matrix:
        return 0, 0
    columns = len(matrix[0])
    for index, row in enumerate(matrix):
        if len(row) != columns:
            raise ValueError(f"row {index} has {len(row)} entries, expected {columns}")
    return len(matrix), columns


def _square_size(matrix: Matrix) -> int:
    rows, columns = shape(matrix)
    if rows != columns:
        raise ValueError(f"expected a square matrix, got shape {rows}x{columns}")
    return rows


def zeros(rows: int, columns: int) -> Matrix:
    """Return a ``rows`` x ``columns`` matrix of zeros."""
    if rows < 0 or columns < 0:
        raise ValueError("dimensions must not be negative")
    return [[0] * columns for _ in range(rows)]


def identity(size: int) -> Matrix:
    """Return the ``size`` x ``size`` identity matrix."""
    result = zeros(size, size)
    for index in range(size):
        result[index][index] = 1
    return result


def transpose(matrix: Matrix) -> Matrix:
    """Swap rows and columns."""
    rows, columns = shape(matrix)
    return [[matrix[row][column] for row in range(rows)] for column in range(columns)]


def _check_same_shape(a: Matrix, b: Matrix) -> None:
    if shape(a) != shape(b):
        raise ValueError(f"shapes differ: {shape(a)} and {shape(b)}")


def add(a: Matrix, b: Matrix) -> Matrix:
    """Elementwise ``a + b``."""
    _check_same_shape(a, b)
    return [
        [x + y for x, y in zip(row_a, row_b, strict=True)]
        for row_a, row_b in zip(a, b, strict=True)
    ]


def subtract(a: Matrix, b: Matrix) -> Matrix:
    """Elementwise ``a - b``."""
    _check_same_shape(a, b)
    return [
        [x - y for x, y in zip(row_a, row_b, strict=True)]
        for row_a, row_b in zip(a, b, strict=True)
    ]


def scale(matrix: Matrix, factor: Number) -> Matrix:
    """Multiply every entry by ``factor``."""
    return [[factor * x for x in row] for row in matrix]


def multiply(a: Matrix, b: Matrix) -> Matrix:
    """Matrix product ``a @ b``; the columns of ``a`` must match the rows of ``b``."""
    rows, inner = shape(a)
    inner_b, columns = shape(b)
    if inner != inner_b:
        raise ValueError(f"cannot multiply {rows}x{inner} by {inner_b}x{columns}")
    result = zeros(rows, columns)
    for i in range(rows):
        for j in range(columns):
            total = 0
            for k in range(inner):
                total += a[i][k] * b[k][j]
            result[i][j] = total
    return result


def power(matrix: Matrix, exponent: int) -> Matrix:
    """Return ``matrix`` multiplied by itself ``exponent`` times (identity for 0)."""
    size = _square_size(matrix)
    if exponent < 0:
        raise ValueError("negative powers are not supported; use inverse()")
    result = identity(size)
    for _ in range(exponent):
        result = multiply(result, matrix)
    return result


def trace(matrix: Matrix) -> Number:
    """Sum of the diagonal entries of a square matrix."""
    size = _square_size(matrix)
    total = 0
    for index in range(size):
        total += matrix[index][index]
    return total


def is_symmetric(matrix: Matrix) -> bool:
    """Return True for a square matrix equal to its transpose."""
    rows, columns = shape(matrix)
    if rows != columns:
        return False
    for i in range(rows):
        for j in range(i + 1, columns):
            if matrix[i][j] != matrix[j][i]:
                return False
    return True


def minor(matrix: Matrix, row: int, column: int) -> Matrix:
    """Return ``matrix`` without row ``row`` and column ``column``."""
    rows, columns = shape(matrix)
    if not (0 <= row < rows and 0 <= column < columns):
        raise IndexError(f"no entry ({row}, {column}) in a {rows}x{columns} matrix")
    return [r[:column] + r[column + 1 :] for index, r in enumerate(matrix) if index != row]
