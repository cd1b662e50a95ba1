"""Scalar operations on NumPy scalars of the exact relsim type: the algebra `semantics.py`'s
operations are evaluated in by the `interp` oracle, and by the cuda target's math functions in
numba's CUDA simulator. Math goes through the C library (ctypes), as compiled code calls it."""
from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np

from .. import philox
from .builtin_table import MATH

_libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")


def _libm_fn(name, single):
    fn = getattr(_libm, name + ("f" if single else ""))
    ct = ctypes.c_float if single else ctypes.c_double
    fn.restype = ct
    fn.argtypes = [ct] * MATH[name].arity
    return fn


class NumpyAlgebra:
    """Scalar operations on NumPy scalars of the exact relsim type."""

    def const(self, value, t):
        return t.dtype.type(value)

    def binop(self, op, a, b, t):
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return a / b
        if op == "//":
            return a // b
        if op == "%":
            return a % b
        if op == "&":
            return a & b
        if op == "|":
            return a | b
        if op == "^":
            return a ^ b
        if op == "<<":
            return t.dtype.type(a << b)
        if op == ">>":
            return t.dtype.type(a >> b)
        raise ValueError(op)

    def neg(self, a, t):
        return -a

    def invert(self, a, t):
        return ~a

    def not_(self, a):
        return np.bool_(not a)

    def compare(self, op, a, b, t):
        return np.bool_({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b,
                         "!=": a != b}[op])

    def cast(self, a, src, dst):
        return dst.dtype.type(a)

    def select(self, c, a, b, t):
        return a if c else b

    def function(self, what, key, compute, inputs):
        """A many-operation function (`EmitAlgebra.function`): computed in place."""
        return compute(self, inputs)

    def repeat(self, count, state, step):
        """`step` (a list of values -> the next list) applied `count` times to `state`
        (`EmitAlgebra.repeat`): a Python loop."""
        for _ in range(count):
            state = step(state)
        return state

    def draw(self, name, args):
        """`relsim.philox.<name>`, as plain Python (compiled code calls the same function)."""
        return np.float64(philox.DRAWS[name](*(int(a) for a in args)))

    _cache: dict = {}

    def math(self, name, args, t):
        """NumPy or the C library, as `builtin_table.MATH` says (NumPy only where it computes
        what the compiled code does: sqrt is correctly rounded, the others exact)."""
        oracle = MATH[name].oracle
        if oracle is not None:
            return getattr(np, oracle)(args[0])
        single = t.dtype == np.float32
        key = (name, single)
        fn = self._cache.get(key)
        if fn is None:
            fn = self._cache[key] = _libm_fn(name, single)
        return t.dtype.type(fn(*[float(a) for a in args]))
