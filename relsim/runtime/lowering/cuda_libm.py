"""Math functions for generated CUDA kernels (`cuda_rows.py`) that kernels on the cpu call from
NumPy or the C library (`builtin_table.MATH`: ``lowered="np"`` or ``"_libm"``), under the same
names: ``floor``, ``ceil``, ``trunc``, ``round`` (to nearest, ties to even) and ``cbrt`` in double
precision, and ``<name>_f32`` in single precision (cbrt is computed in double by `semantics`);
``mul`` / ``mul_f32``: the product of two floats, rounded on its own (see below).

On a GPU they are CUDA's libdevice functions (floor, ceil, trunc and rint are exact, as NumPy's;
cbrt is libdevice's, correctly rounded or within one ulp like the C library's, not guaranteed to
be the same bits). Under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), where kernels run as
Python and libdevice has no implementation, they are the functions `interp` calls (NumPy's, and
the C library's cbrt through `math.cbrt`).
"""
from __future__ import annotations

import math
import operator

import numpy as np
from numba import config

if config.ENABLE_CUDASIM:
    mul = mul_f32 = operator.mul
    floor = floor_f32 = np.floor
    ceil = ceil_f32 = np.ceil
    trunc = trunc_f32 = np.trunc
    round = round_f32 = np.rint  # noqa: A001 (the kernel language's name)
    cbrt = math.cbrt
else:
    from numba.cuda import libdevice

    floor, floor_f32 = libdevice.floor, libdevice.floorf
    ceil, ceil_f32 = libdevice.ceil, libdevice.ceilf
    trunc, trunc_f32 = libdevice.trunc, libdevice.truncf
    round, round_f32 = libdevice.rint, libdevice.rintf  # noqa: A001
    cbrt = libdevice.cbrt
    # a product rounded to nearest that the compiler never contracts with an addition into a
    # fused multiply-add (NVVM fuses plain products and sums by default, also without fast-math)
    mul, mul_f32 = libdevice.dmul_rn, libdevice.fmul_rn

__all__ = ["mul", "mul_f32", "floor", "floor_f32", "ceil", "ceil_f32", "trunc", "trunc_f32",
           "round", "round_f32", "cbrt"]
