"""`lowering.emit.EmitAlgebra`: float64 arithmetic on two constants (``0.0 * 1.0``, which a
matrix built from ``0.0 * rs.eye(8)`` emits 64 times) is folded to the constant the compiled
code computes, bit for bit; a result that is not a plain constant (-0.0, inf, NaN), a division
by zero and narrower types are left to the compiled code."""
import ast
import math

import numpy as np
import pytest
from numba import njit

from relsim.runtime.lowering.emit import EmitAlgebra
from relsim.types import f32, f64, i64

PAIRS = [(0.0, 1.0), (0.1, 0.2), (1e308, 10.0), (-0.0, 0.0), (0.0, -1.0), (3.0, 0.0),
         (1.0, 3.0), (5e-324, 0.5), (-2.5, 2.5), (1e-300, 1e-300)]
OPS = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
       "/": lambda x, y: x / y}
_COMPILED = {op: njit(error_model="numpy")(f) for op, f in OPS.items()}


@pytest.mark.parametrize("op", sorted(OPS))
def test_float64_constants_fold_to_the_compiled_bits(op):
    for a, b in PAIRS:
        alg = EmitAlgebra()
        got = alg.binop(op, ast.Constant(a), ast.Constant(b), f64)
        want = _COMPILED[op](a, b)
        if isinstance(got, ast.Constant):
            assert alg.out == []
            assert np.float64(got.value).tobytes() == np.float64(want).tobytes(), (a, op, b)
        else:  # left to the compiled code: only results that are no plain constant
            assert math.isinf(want) or math.isnan(want) or \
                (want == 0.0 and math.copysign(1.0, want) < 0) or b == 0.0 and op == "/"
            assert len(alg.out) == 1


def test_other_types_and_operands_are_not_folded():
    for t, a, b in ((f32, 0.5, 0.25), (i64, 2, 3), (f64, 2, 0.5)):
        alg = EmitAlgebra()
        assert not isinstance(alg.binop("*", ast.Constant(a), ast.Constant(b), t), ast.Constant)
    alg = EmitAlgebra()
    assert isinstance(alg.binop("+", ast.Name("x", ast.Load()), ast.Constant(1.0), f64),
                      ast.Name)
