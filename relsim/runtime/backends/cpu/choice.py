"""`pick(c, a, b)`: ``a if c else b`` of two values computed already, as one LLVM ``select``
instruction, which generated cpu code calls where a choice's sides are cheap and safe to compute
whatever the condition (`lowering.emit.speculable`).

Written as Python's conditional expression, each choice is a branch: two or three basic blocks
in Numba's IR. Generated adjoint and tangent kernels hold hundreds of choices (0 x inf counted as
0), and Numba's passes over its IR (SSA reconstruction, type inference) cost far more than
linearly in the number of blocks: the implicit fem energy's tangent adjoint took 133 s to
compile. A choice as one instruction leaves the IR one block, and the same value: the condition
and both sides are the values the branch would have chosen between.
"""
from __future__ import annotations

from numba import types
from numba.extending import intrinsic


@intrinsic
def pick(typingctx, c, a, b):
    """``a if c else b``, both computed already; the result has the type of a and b unified."""
    t = typingctx.unify_types(types.unliteral(a), types.unliteral(b))
    if not isinstance(t, (types.Number, types.Boolean)):
        return None

    def codegen(context, builder, signature, args):
        test = context.is_true(builder, signature.args[0], args[0])
        x = context.cast(builder, args[1], signature.args[1], t)
        y = context.cast(builder, args[2], signature.args[2], t)
        return builder.select(test, x, y)

    return t(c, a, b), codegen
