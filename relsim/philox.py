"""Philox4x32-10, the counter-based random number generator of Salmon, Moraes, Dror and Shaw
("Parallel random numbers: as easy as 1, 2, 3", SC'11), and the doubles kernels draw from it.

A draw is a pure function of its inputs, with no state. The functions are `register_jitable`:
compiled kernels call them as they are (generated modules import this one as `_philox`), the
`interp` oracle and `rs.uniform` / `rs.normal` outside kernels call them as plain Python, so
every target, thread count and (later) rank count gives the same bits. They use 32-bit words
held in uint64 (a product of two words fits, its high word is a shift), masks, xor, shifts, one
integer-to-double conversion and, for `normal`, log, cos and a square root (the C library's, as
every relsim math call: `math.*` in Python and in Numba); nothing else, so a device lowering can
compile them too (the integer part, and so `uniform`, bit for bit; `normal` with the device's
log and cos).

Which inputs make the 128-bit counter and the 64-bit key of one Philox block:

    key = (low, high 32 bits of p)       p: the row, or an integer (any int64)
    ctr = (c0, c1, c2, seed)             each in [0, 2**32), checked by the callers

A block gives four 32-bit words x0..x3; `uniform` takes 53 bits of x0, x1; `normal` takes
x0, x1 and x2, x3 (Box-Muller, its cosine half).
"""
from __future__ import annotations

import math

import numpy as np
from numba.extending import register_jitable

ROUNDS = 10
WORD = 2 ** 32  # counters and the seed are 32-bit words: 0 <= c < WORD

_M32 = np.uint64(0xFFFFFFFF)
_S11, _S21, _S32 = np.uint64(11), np.uint64(21), np.uint64(32)
# the round multipliers and the key schedule's Weyl increments (Salmon et al., table 2)
_MUL0, _MUL1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_BUMP0, _BUMP1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_TWO_M53 = 2.0 ** -53
_TWO_PI = 2.0 * math.pi


@register_jitable
def philox4x32(c0, c1, c2, c3, k0, k1, rounds=ROUNDS):
    """The Philox4x32 block function: counter words c0..c3 and key words k0, k1 (uint64 values
    below 2**32) -> four uint64 words below 2**32. A round multiplies c0 and c2 by the round
    constants and mixes the high halves of the products with the other words and the key; the
    key is bumped by the Weyl increments between rounds."""
    for _ in range(rounds):
        p0 = _MUL0 * c0  # < 2**64: the full 64-bit product of two 32-bit words
        p1 = _MUL1 * c2
        c0, c1, c2, c3 = ((p1 >> _S32) ^ c1 ^ k0, p1 & _M32,
                          (p0 >> _S32) ^ c3 ^ k1, p0 & _M32)
        k0 = (k0 + _BUMP0) & _M32
        k1 = (k1 + _BUMP1) & _M32
    return c0, c1, c2, c3


@register_jitable
def block(p, c0, c1, c2, seed):
    """The four words of row (or integer) `p`, counters c0, c1, c2 and `seed` (int64 values;
    the counters and the seed in [0, 2**32), as the callers check; p any int64, taken as its
    64 bits)."""
    p = np.int64(p)
    return philox4x32(np.uint64(c0), np.uint64(c1), np.uint64(c2), np.uint64(seed),
                      np.uint64(p & 0xFFFFFFFF), np.uint64((p >> 32) & 0xFFFFFFFF))


@register_jitable
def unit(lo, hi):
    """The top 53 bits of the 64-bit word hi:lo as a double k * 2**-53 in [0, 1) (exact)."""
    return np.float64((hi << _S21) | (lo >> _S11)) * _TWO_M53


@register_jitable
def uniform(p, c0, c1, c2, seed):
    """A double in [0, 1), uniform on the multiples of 2**-53: from x0, x1 of the block."""
    x0, x1, _, _ = block(p, c0, c1, c2, seed)
    return unit(x0, x1)


@register_jitable
def normal(p, c0, c1, c2, seed):
    """A standard normal double: `gaussian` of the block's four words."""
    x0, x1, x2, x3 = block(p, c0, c1, c2, seed)
    return gaussian(x0, x1, x2, x3)


@register_jitable
def gaussian(x0, x1, x2, x3):
    """Box-Muller, its cosine half: sqrt(-2 log u1) cos(2 pi u2), with u1 = 1 - unit(x0, x1)
    (so 1 - the `uniform` of the same arguments), in [2**-53, 1] (exact, never 0: the log is
    finite and |z| <= sqrt(106 log 2) < 8.6), and u2 = unit(x2, x3)."""
    u1 = 1.0 - unit(x0, x1)
    u2 = unit(x2, x3)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(_TWO_PI * u2)


# the functions kernels call, by their kernel name
DRAWS = {"uniform": uniform, "normal": normal}
