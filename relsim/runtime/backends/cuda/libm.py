"""The math of generated CUDA kernels (`rows.py`): every function of `builtin_table.MATH`
that the lowering calls, as ``_dev.<name>`` in double precision and ``_dev.<name>_f32`` in
single precision, and ``mul`` / ``mul_f32``, the product of two floats rounded on its own.

On a GPU (numba.cuda compiling the kernels):

* the functions kernels on the cpu call as ``math.<name>`` are ``math.<name>`` here too, which
  numba.cuda compiles to CUDA's libdevice (not the C library `interp` calls: the last bit may
  differ);
* floor, ceil, trunc, round (to nearest, ties to even) and cbrt, which the cpu takes from NumPy
  or calls in the C library directly, are libdevice's (the first four exact, as NumPy's);
* ``mul`` is ``__dmul_rn`` / ``__fmul_rn``: NVVM contracts a plain product and a sum into one
  fused multiply-add (one rounding instead of two), also without fast-math; these products it
  never contracts.

Under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) kernels run as Python: every function
is then the one `interp` evaluates (NumPy, or the C library through ctypes), so the simulator
computes what the oracle computes (Python's own `math` would raise on a domain error where the
C library returns NaN), and ``mul`` is the plain product.
"""
from __future__ import annotations

import math
import operator

from numba import config

from ....types import f32, f64
from ...builtin_table import MATH

_NAMES = [name for name, fn in MATH.items() if fn.lowered is not None]

if config.ENABLE_CUDASIM:
    from ...numpy_algebra import NumpyAlgebra

    _oracle = NumpyAlgebra()

    def _simulated(name, t):
        def fn(*args):
            return _oracle.math(name, list(args), t)
        fn.__name__ = name
        return fn

    _FUNCTIONS = {name + suffix: _simulated(name, t) for name in _NAMES
                  for suffix, t in (("", f64), ("_f32", f32))}
    mul = mul_f32 = operator.mul
else:
    from numba.cuda import libdevice

    _FUNCTIONS = {}
    for _name in _NAMES:
        if MATH[_name].lowered == "math":  # the same for both widths: typed by the argument
            _FUNCTIONS[_name] = _FUNCTIONS[_name + "_f32"] = getattr(math, _name)
    _FUNCTIONS.update(floor=libdevice.floor, floor_f32=libdevice.floorf,
                      ceil=libdevice.ceil, ceil_f32=libdevice.ceilf,
                      trunc=libdevice.trunc, trunc_f32=libdevice.truncf,
                      round=libdevice.rint, round_f32=libdevice.rintf,
                      cbrt=libdevice.cbrt, cbrt_f32=libdevice.cbrtf)
    mul, mul_f32 = libdevice.dmul_rn, libdevice.fmul_rn

globals().update(_FUNCTIONS)  # `_dev.sin`, `_dev.sin_f32`, ... in generated modules

__all__ = ["mul", "mul_f32", *sorted(_FUNCTIONS)]
