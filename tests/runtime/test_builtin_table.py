"""`runtime/builtin_table.py` drives every stage: each math function it lists can be called from a
kernel (as math.<name> or np.<name>), is typed, lowered and evaluated by the oracle, and every
target computes the same bits; its rs functions are the public ones."""
import inspect
import math
import re

import numpy as np

import relsim as rs
from relsim.runtime.builtin_table import (
    COMPILE_TIME,
    MATH,
    RANDOM,
    REDUCE_STATEMENTS,
    STATIC_LOOP,
    VECTOR_FUNCTIONS,
    callables,
)
from tests.conftest import TARGETS

X = np.array([0.5, -0.75, 2.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, 3e38, 7.25])
Y = np.array([1.5, 2.0, -0.5, -0.0, 0.0, 1.0, np.nan, 2.0, 1e-300, -3e38, -7.0])
NAMES = list(MATH)


def _run(target, dtype):
    R = rs.Relation("R", len(X))
    R.new_field("x", dtype).load(X.astype(dtype.dtype))
    R.new_field("y", dtype).load(Y.astype(dtype.dtype))
    R.new_field("o", rs.vec(len(NAMES), dtype))

    @rs.kernel
    def every_math_function(r):  # in the order of MATH (checked below)
        x = r.x
        y = r.y
        r.o[0] = math.sqrt(x)
        r.o[1] = np.cbrt(x)
        r.o[2] = math.exp(x)
        r.o[3] = math.log(x)
        r.o[4] = math.log2(x)
        r.o[5] = np.log10(x)
        r.o[6] = math.log1p(x)
        r.o[7] = math.expm1(x)
        r.o[8] = math.sin(x)
        r.o[9] = np.cos(x)
        r.o[10] = math.tan(x)
        r.o[11] = math.asin(x)
        r.o[12] = np.arccos(x)
        r.o[13] = math.atan(x)
        r.o[14] = math.atan2(x, y)
        r.o[15] = math.sinh(x)
        r.o[16] = math.cosh(x)
        r.o[17] = np.tanh(x)
        r.o[18] = np.floor(x)
        r.o[19] = np.ceil(x)
        r.o[20] = math.fabs(x)
        r.o[21] = math.pow(x, y)
        r.o[22] = math.hypot(x, y)
        r.o[23] = math.copysign(x, y)
        r.o[24] = float(math.isnan(x))
        r.o[25] = float(np.isinf(x))
        r.o[26] = float(math.isfinite(x))
        r.o[27] = np.trunc(x)
        r.o[28] = np.round(x)

    R.foreach(every_math_function, rs.Config(target=target,
                                             parallel_threshold=1 if target == "cpu" else 2048))
    return R.o.numpy()


def test_the_kernel_above_calls_every_math_function_in_table_order():
    modules = {"math": math, "np": np}
    called = [re.search(r"\b(math|np)\.(\w+)\(", line).groups()
              for line in inspect.getsource(_run).splitlines() if line.strip().startswith("r.o[")]
    known = callables()
    assert [known[id(getattr(modules[m], attr))] for m, attr in called] == NAMES


def test_every_math_function_agrees_on_every_target():
    for dtype in (rs.f64, rs.f32):
        out = {t: _run(t, dtype) for t in TARGETS}
        nan = np.isnan(out["interp"])
        for t in TARGETS:
            assert np.array_equal(np.isnan(out[t]), nan), (t, dtype)
            # bit for bit (which NaN aside: its sign is not part of the meaning)
            assert np.where(nan, 0, out[t]).tobytes() == \
                np.where(nan, 0, out["interp"]).tobytes(), (t, dtype)


def test_copysign_of_a_nan_is_the_magnitude_on_every_target():
    """A NaN's sign is not kept alike by every target (x86 gives -NaN for 0/0, and LLVM may
    move a negation into the division that made it): copysign(x, NaN) is |x| everywhere, also
    negated, in either precision, into a reduction (the soak's case: they differed)."""
    R = rs.Relation("R", 4)
    R.new_field("a", rs.f64).load([0.0, -0.0, np.nan, -np.nan])
    R.new_field("i", rs.i64)
    R.new_field("c", rs.f32).load([1.5, -1.5, 2.5, -2.5])
    R.new_field("o", rs.f64)
    R.new_field("w", rs.f32)

    @rs.kernel
    def signs(r):
        r.o = math.copysign(float(r.c), r.a / float(r.i))
        r.w -= np.copysign(r.c, rs.f32(r.a / float(r.i)))

    for t in TARGETS:
        R.w.fill(0.0)
        R.foreach(signs, rs.Config(target=t))
        assert R.o.numpy().tolist() == [1.5, 1.5, 2.5, 2.5], t
        assert R.w.numpy().tolist() == [-1.5, -1.5, -2.5, -2.5], t


def test_the_rs_builtins_are_public():
    for name in (*VECTOR_FUNCTIONS, *RANDOM):
        assert name in rs.__all__ and callables()[id(getattr(rs, name))] == name
    for fn, op in REDUCE_STATEMENTS.items():
        assert fn.__name__ == "reduce_" + op and fn.__name__ in rs.__all__
    assert {"insert", "delete"} <= set(rs.__all__)
    for name, fn in COMPILE_TIME.items():
        assert name in rs.__all__ and getattr(rs, name) is fn
    assert STATIC_LOOP is rs.static and "static" in rs.__all__
