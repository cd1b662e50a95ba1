"""Arrays on the stack of compiled code: accumulators LLVM can keep in registers.

A launch's in-loop Global sums (`folds.lane_sums`) carry their TwoSum lanes from one block of
rows to the next. Held in an array passed in (or allocated with NumPy), every addition is a
load and a store through memory LLVM cannot prove private, so the loop waits on the store of
the block before; held in an array on the stack, which nothing else can alias, LLVM keeps the
lanes in vector registers (a 65,536-row dot product: 37 -> 20 us on one thread here).

`zeros(a, b, c)` (constant sizes) is a C-contiguous float64 array of shape (a, b, c) in the
calling function's frame: allocated once in its entry block (a loop reuses it), zeroed at each
call. It lives as long as that function's frame: generated code never returns it or stores it
anywhere (it copies the lanes out). In a `prange` body the frame is the thread's own.
"""
from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array


@intrinsic
def zeros(typingctx, a, b, c):
    """A zeroed (a, b, c) float64 array on the stack; a, b and c are constants."""
    if not all(isinstance(n, types.IntegerLiteral) and n.literal_value > 0 for n in (a, b, c)):
        return None
    shape = tuple(n.literal_value for n in (a, b, c))
    array_type = types.Array(types.float64, 3, "C")

    def codegen(context, builder, signature, args):
        double = context.get_value_type(types.float64)
        count = shape[0] * shape[1] * shape[2]
        data = cgutils.alloca_once(builder, double, size=count)
        cgutils.memset(builder, data, context.get_constant(types.intp, count * 8), 0)
        itemsize = context.get_abi_sizeof(double)
        strides = (shape[1] * shape[2] * itemsize, shape[2] * itemsize, itemsize)
        array = make_array(array_type)(context, builder)
        populate_array(array, data=data,
                       shape=[context.get_constant(types.intp, n) for n in shape],
                       strides=[context.get_constant(types.intp, s) for s in strides],
                       itemsize=context.get_constant(types.intp, itemsize), meminfo=None)
        return array._getvalue()

    return array_type(a, b, c), codegen
