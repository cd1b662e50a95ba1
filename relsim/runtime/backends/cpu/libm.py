"""Direct calls of the C library's math functions from generated code, where Numba's own
lowering would compute something else.

Numba computes ``np.cbrt(x)`` as ``pow(x, 1/3)`` under fast-math, which LLVM turns into a call of
the C library's ``cbrt`` at run time, but folds as a *power* when x is a constant:
``cbrt(1e-3)`` then differs in its last bit, and ``cbrt(-0.0)`` is +0.0. Calling ``cbrt``
itself keeps one meaning (the C library's, as `interp` computes it): LLVM folds a constant
argument through the same function.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def cbrt(typingctx, x):
    """The C library's cbrt of a float64."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.DoubleType(), [ir.DoubleType()])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "cbrt")
        return builder.call(fn, args)

    return types.float64(types.float64), codegen
