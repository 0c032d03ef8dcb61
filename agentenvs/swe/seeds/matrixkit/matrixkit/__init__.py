"""Small dense-matrix utilities on lists of lists, exact with Fractions."""

from matrixkit.basic import (
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
from matrixkit.linalg import determinant, inverse, rank, rref, solve

__all__ = [
    "add",
    "determinant",
    "identity",
    "inverse",
    "is_symmetric",
    "minor",
    "multiply",
    "power",
    "rank",
    "rref",
    "scale",
    "shape",
    "solve",
    "subtract",
    "trace",
    "transpose",
    "zeros",
]
