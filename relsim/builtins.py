"""Functions usable inside kernels (`rs.dot`, `rs.reduce_min`, ...).

Outside a kernel the vector functions compute with NumPy, so helpers can be tried
interactively, and the random draws give the very values kernels draw; the reduction statements
only have a meaning inside a kernel. Which of these (and which math, NumPy and Python functions)
kernels call is listed in `runtime/builtin_table.py`.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import philox
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


def eigh(a):
    """`w, Q = rs.eigh(A)`: eigenvalues (ascending) and eigenvectors (the columns of Q) of the
    symmetric 2x2 or 3x3 matrix given by A's lower triangle, A = Q diag(w) Q^T, with Q a
    rotation (det Q = +1; NumPy's may be a reflection). In a kernel: cyclic Jacobi, the same
    bits on every target; outside one, NumPy (the same convention, not the same bits)."""
    a = np.asarray(a, dtype=float)
    w, q = np.linalg.eigh(a)
    if np.linalg.det(q) < 0:
        q[:, -1] = -q[:, -1]
    return w, q


def svd(f):
    """`U, S, V = rs.svd(F)` for a 2x2 or 3x3 F: F = U diag(S) V^T with U and V rotations
    (det +1), S[0] >= S[1] >= |S[-1]| and S[-1] < 0 exactly when det F < 0 -- the convention of
    corotational and inversion-safe elasticity (as Warp's svd3 and Taichi's ti.svd), not
    NumPy's (whose singular values are |S|, and whose V is transposed). In a kernel: one-sided
    Jacobi and a Givens QR, the same bits on every target; outside one, NumPy (the same
    convention, not the same bits)."""
    f = np.asarray(f, dtype=float)
    u, s, vt = np.linalg.svd(f)
    v = vt.T.copy()
    if np.linalg.det(u) < 0:
        u[:, -1], s[-1] = -u[:, -1], -s[-1]
    if np.linalg.det(v) < 0:
        v[:, -1], s[-1] = -v[:, -1], -s[-1]
    return u, s, v


def polar(f):
    """`R, P = rs.polar(F)` for a 2x2 or 3x3 F: F = R P with R = U V^T a rotation and
    P = V diag(S) V^T symmetric (`rs.svd`'s U, S, V; P is indefinite when F is inverted)."""
    u, s, v = svd(f)
    return u @ v.T, (v * s) @ v.T


def uniform(p, c0, c1=0, c2=0, *, seed=0):
    """A random double in [0, 1) (53 random bits: a multiple of 2**-53), a pure function of its
    arguments: Philox4x32-10 (`relsim/philox.py`), the same bits on every target, thread count
    and rank count.

    p: in a kernel, a key (its relation row is used: the row of the relation, also when the
    kernel runs over a subset) or an integer; outside a kernel, the row number.
    c0, c1, c2: integer counters in [0, 2**32) (the time step, a draw number, ...); omitted
    ones are 0. seed: an integer in [0, 2**32), a constant or any integer expression (0 if not
    given).
    Equal arguments give equal values: give each draw of a row its own counters. Outside a
    kernel, integer arrays broadcast and give an array."""
    return _draw("uniform", p, c0, c1, c2, seed)


def normal(p, c0, c1=0, c2=0, *, seed=0):
    """A standard normal double (mean 0, variance 1), a pure function of its arguments like
    `uniform` (same arguments, same rules): Box-Muller on the Philox block of those arguments,
    whose first 53 bits `uniform` also uses, so draw the two with different counters."""
    return _draw("normal", p, c0, c1, c2, seed)


def _draw(name, p, c0, c1, c2, seed):
    args = (p, c0, c1, c2, seed)
    if any(np.ndim(a) for a in args):
        return np.vectorize(lambda *a: _draw(name, *a), otypes=[np.float64])(*args)
    what = ("p", "c0", "c1", "c2", "seed")
    for w, a in zip(what, args):
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, numbers.Integral):
            raise TypeError(f"rs.{name}(): {w} must be an integer, not {type(a).__name__}")
    if not -2 ** 63 <= p < 2 ** 63:
        raise ValueError(f"rs.{name}(): p = {p} is not a 64-bit integer")
    for w, a in zip(what[1:], args[1:]):
        if not 0 <= a < philox.WORD:
            raise ValueError(f"rs.{name}(): {w} = {a} is outside [0, 2**32)")
    return float(philox.DRAWS[name](*(int(a) for a in args)))


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

def at(relation, row):
    """In a kernel, ``rs.at(R, i)``: the key of row `i` (any integer expression) of relation
    `R` (captured), to read through: ``rs.at(V, v.j).x``. A row outside `R` is a
    KernelRuntimeError at the line. Outside a kernel it returns `row`."""
    return row


def delete(key):
    """Kernel statement ``rs.delete(p)``: remove the kernel's own row of an elastic relation
    (applied after the kernel; surviving rows keep their order)."""
    raise RuntimeError("rs.delete is a kernel statement: use it inside an @rs.kernel")


def insert(relation, **values):
    """Kernel statement ``rs.insert(P, x=..., v=...)``: append a row to elastic relation P
    after the kernel (rows inserted in row order, then program order; unnamed fields zero)."""
    raise RuntimeError("rs.insert is a kernel statement: use it inside an @rs.kernel")
