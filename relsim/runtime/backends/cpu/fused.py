"""Additions on the fused multiply-add pipes: ``fma(a, one(), b)`` is ``a + b``, bit for bit.

Some CPUs (AMD Zen 2 to 4) issue vector additions to two pipes and multiplications and fused
multiply-adds to two others. A Global sum's TwoSum lanes (`loops.CpuLowerer.two_sum_into_lane`)
do one multiplication (the dot product's) and eight additions per contribution: the adding
pipes bound the loop while the multiplying ones idle. ``fma(a, 1, b)`` rounds ``a * 1 + b = a +
b`` once, exactly as the addition does (signed zeros, infinities and NaNs included), so moving
some of the additions there gives the same numbers from both pipe pairs (measured on an AMD EPYC:
a 65,536-row dot product's loop 20.3 -> 15.0 us). Where both kinds of operation share pipes (Intel
cores) the move costs nothing.

`one()` is 1.0 hidden from the optimiser (LLVM folds ``fma(a, 1.0, b)`` back into an addition);
generated code computes it once per function. `available()`: the target CPU has fused
multiply-add instructions (elsewhere ``fma`` is a C library call: generated code keeps plain
additions).
"""
from __future__ import annotations

import functools
import platform

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c rounded once (float64)."""
    if not all(t == types.float64 for t in (a, b, c)):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return types.float64(types.float64, types.float64, types.float64), codegen


@intrinsic
def one(typingctx):
    """1.0, passed through an empty inline assembly statement the optimiser cannot see into."""

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        bits = ir.Constant(ir.DoubleType(), 1.0).bitcast(i64)
        hidden = builder.asm(ir.FunctionType(i64, [i64]), "", "=r,0", [bits], False)
        return builder.bitcast(hidden, ir.DoubleType())

    return types.float64(), codegen


@functools.cache
def available() -> bool:
    """Does the CPU Numba compiles for have fused multiply-add instructions?"""
    from numba import config
    if platform.machine().lower() in ("aarch64", "arm64"):
        return True  # (always part of AArch64)
    if config.CPU_NAME:  # a chosen target CPU (NUMBA_CPU_NAME): only its listed features
        return "+fma" in (config.CPU_FEATURES or "").split(",")
    import llvmlite.binding as llvm
    return bool(llvm.get_host_cpu_features().get("fma", False))
