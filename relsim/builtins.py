"""Functions usable inside kernels (`rs.dot`, `rs.reduce_min`, ...).

Outside a kernel the vector functions compute with NumPy, so helpers can be tried
interactively; the reduction statements only have a meaning inside a kernel. Which of these (and
which math, NumPy and Python functions) kernels call is listed in `runtime/builtin_table.py`.
"""
from __future__ import annotations

import numpy as np

from .types import as_scalar, f64


def dot(a, b):
    """Dot product of two vectors (in a kernel: summed left to right)."""
    return np.dot(a, b)


def cross(a, b):
    """Cross product of two 3-vectors."""
    return np.cross(a, b)


def norm(a):
    """Euclidean length: sqrt(dot(a, a))."""
    return float(np.sqrt(np.dot(a, a)))


def outer(a, b):
    """Outer product of two vectors (a matrix)."""
    return np.outer(a, b)


def det(m):
    """Determinant of a 2x2 or 3x3 matrix (cofactor expansion along the first row)."""
    return float(np.linalg.det(m))


def inverse(m):
    """Inverse of a 2x2 or 3x3 matrix (adjugate divided by the determinant)."""
    return np.linalg.inv(m)


def transpose(m):
    """Transpose of a matrix."""
    return np.transpose(m)


def eye(n: int, dtype=f64):
    """The n x n identity matrix (f64, or `dtype`). In a kernel, n (and dtype) must be
    compile-time constants and the result is a constant ``rs.mat(n, n, dtype)``; outside, a
    NumPy array."""
    if not (isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_)) and n >= 1):
        raise ValueError(f"eye size must be a positive int, got {n!r}")
    return np.eye(int(n), dtype=as_scalar(dtype).dtype)


def static(iterable):
    """``for i in rs.static(range(3)):`` in a kernel: a loop unrolled while compiling.

    The iterable must be a compile-time constant (a literal tuple or list, ``range`` of
    constants, a captured tuple, list or NumPy array); the body is repeated once per item with
    the loop variable a constant, so ``c(dx, dy)`` inside is a constant grid offset. Outside a
    kernel it returns `iterable` unchanged."""
    return iterable


def _kernel_only(name):
    def f(*args):
        raise RuntimeError(f"rs.{name} is a reduction statement: use it inside an @rs.kernel")
    f.__name__ = name
    f.__doc__ = f"Kernel statement ``rs.{name}(target, value)``."
    return f


reduce_min = _kernel_only("reduce_min")
reduce_max = _kernel_only("reduce_max")
reduce_argmin = _kernel_only("reduce_argmin")
reduce_argmax = _kernel_only("reduce_argmax")

def delete(key):
    """Kernel statement ``rs.delete(p)``: remove the kernel's own row of an elastic relation
    (applied after the kernel; surviving rows keep their order)."""
    raise RuntimeError("rs.delete is a kernel statement: use it inside an @rs.kernel")


def insert(relation, **values):
    """Kernel statement ``rs.insert(P, x=..., v=...)``: append a row to elastic relation P
    after the kernel (rows inserted in row order, then program order; unnamed fields zero)."""
    raise RuntimeError("rs.insert is a kernel statement: use it inside an @rs.kernel")
