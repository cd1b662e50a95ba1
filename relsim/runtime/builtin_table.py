"""The kernel builtins, each described once; every stage derives what it needs from here.

* the frontend: which Python objects name a builtin (`callables`, `REDUCE_STATEMENTS`);
* the type checker (`calls.py`): a math function's arity and result;
* the lowering (`lowering/emit.py`): the module generated code calls: `math`, NumPy, or
  `_libm` (`backends/cpu/libm.py`, the C library called directly);
* the `interp` oracle (`backends/interp.py`): the C library (through ctypes, as compiled code
  calls it) or a NumPy function.

What a builtin computes is written once in `semantics.py` (vector algebra, min/max/abs, and the
expansions of `hypot` and of single-precision `cbrt`); how it is typed, in `calls.py`.
"""
from __future__ import annotations

import builtins as _py_builtins
import math
from dataclasses import dataclass

import numpy as np

from .. import builtins as rsb
from .. import types as rst


@dataclass(frozen=True)
class MathFunction:
    """A math function; kernels call it as ``math.<name>`` or ``np.<name>`` (where it exists).
    One that `semantics.call` expands (``lowered=None``) is neither lowered nor in the oracle."""
    name: str
    arity: int
    predicate: bool = False  # the result is bool; else the float type of the (unified) arguments
    lowered: str | None = "math"  # module generated code calls; None: `semantics.call` expands it
    oracle: str | None = None  # NumPy function interp calls; None: the C library's name / name+f


def _math(*names, arity=1, predicate=False, lowered="math", oracle=None) -> list:
    """MathFunctions sharing a description; oracle="np": interp calls np.<name>."""
    return [MathFunction(n, arity, predicate, lowered, n if oracle == "np" else oracle)
            for n in names]


# in the order the frontend has always looked them up (an object found twice keeps the last)
MATH = {f.name: f for f in [
    *_math("sqrt", oracle="np"),
    # the C library's cbrt, called directly (`backends/cpu/libm.py`: Numba's np.cbrt is a power
    # that LLVM folds differently for constants); single precision goes through double
    *_math("cbrt", lowered="_libm"),
    *_math("exp", "log", "log2", "log10", "log1p", "expm1", "sin", "cos", "tan", "asin", "acos",
           "atan"),
    *_math("atan2", arity=2),
    *_math("sinh", "cosh", "tanh"),
    *_math("floor", "ceil", lowered="np", oracle="np"),  # math.floor returns an int in Numba
    *_math("fabs", oracle="abs"),
    # pow(a, b), like a ** b, is typed as the power operator (`calls.power`)
    *_math("pow", arity=2),
    *_math("hypot", arity=2, lowered=None),  # sqrt(x*x + y*y) (`semantics.call`)
    *_math("copysign", arity=2),
    *_math("isnan", "isinf", "isfinite", predicate=True, oracle="np"),
    *_math("trunc", lowered="np", oracle="np"),
    # round(x): to the nearest integer, ties to even, as Python's round (np.round, np.rint);
    # of the float type, like floor and ceil
    *_math("round", lowered="np", oracle="np"),
]}

# NumPy's other spellings of builtins
NUMPY_ALIASES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arctan2": "atan2",
                 "absolute": "abs", "minimum": "min", "maximum": "max", "power": "pow",
                 "rint": "round"}
# Python builtins that are math functions in a kernel
PYTHON_ALIASES = {"round": "round"}
# Python builtins kernels may call (typed in `calls.type_call`)
PYTHON_BUILTINS = ("abs", "min", "max", "pow", "int", "float", "bool", "len")
# rs vector and matrix functions (typed in `calls`, computed in `semantics.call`), each with the
# NumPy function (attribute path under `np`) that names it too
VECTOR_FUNCTIONS = {"dot": "dot", "cross": "cross", "norm": "linalg.norm", "outer": "outer",
                    "det": "linalg.det", "inverse": "linalg.inv", "transpose": "transpose"}
# rs matrix decompositions (typed in `calls`, computed in `decompositions.py`); each returns a
# tuple of values (`types.TupleType`). No NumPy function names them: NumPy's conventions differ
DECOMPOSITIONS = ("eigh", "svd", "polar")
# counter-based random draws `rs.uniform(p, c0[, c1[, c2]], seed=s)` and `rs.normal(...)`: f64
# values computed by the `relsim.philox` function of the same name (plain Python in `interp`,
# compiled into generated code as `_philox.<name>`); typed in `calls.random_call` (the key or
# integer p, the counters padded to RANDOM_COUNTERS, the `seed=` keyword last), counters and
# seed range-checked in `semantics.random_draw`
RANDOM = ("uniform", "normal")
RANDOM_COUNTERS = 3
RANDOM_KEYWORDS = ("seed",)
# kernel statements `rs.reduce_<op>(target, value)`: the reduction operator of each
REDUCE_STATEMENTS = {getattr(rsb, "reduce_" + op): op
                     for op in ("min", "max", "argmin", "argmax")}
# rs functions a kernel calls while compiling, on compile-time constant arguments
# (`runtime/analysis/static.py`): the type constructors, whose result a kernel then calls to build a
# value (`rs.vec(3)(x, y, z)`), and rs.eye, a constant matrix. A compile-time expression (a
# static loop's iterable) may also call range.
COMPILE_TIME = {"vec": rst.vec, "mat": rst.mat, "eye": rsb.eye}
# `for i in rs.static(<iterable>):` a loop unrolled while compiling (`runtime/analysis/static.py`)
STATIC_LOOP = rsb.static


def callables() -> dict:
    """id(Python object) -> the name of the builtin it denotes in a kernel."""
    table = {}
    for name in MATH:
        if hasattr(math, name):
            table[id(getattr(math, name))] = name
        if hasattr(np, name):
            table[id(getattr(np, name))] = name
    for np_name, name in NUMPY_ALIASES.items():
        table[id(getattr(np, np_name))] = name
    for name in PYTHON_BUILTINS:
        table[id(getattr(_py_builtins, name))] = name
    for py_name, name in PYTHON_ALIASES.items():
        table[id(getattr(_py_builtins, py_name))] = name
    for name in (*VECTOR_FUNCTIONS, *DECOMPOSITIONS, *RANDOM):
        table[id(getattr(rsb, name))] = name
    for name, path in VECTOR_FUNCTIONS.items():
        obj = np
        for part in path.split("."):
            obj = getattr(obj, part)
        table[id(obj)] = name
    return table
