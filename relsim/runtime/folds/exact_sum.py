"""Exact float sums: the numeric core of a float Global's ``+=``.

(Past 500 lines on purpose: the accumulator, its two exact summing paths, the correct rounding
to both formats and the oracle are one invariant, stated once below; split, each part would
need the others to be read.)

A float Global sum (``g += x`` over the rows of a relation) means: the value of ``g`` before the
launch plus every contribution, summed *exactly* and rounded once, to nearest with ties to even,
to the Global's type (binary64 or binary32). The result depends only on the multiset of the
inputs, so it is the same for every order, thread count, rank count and device.

IEEE specials follow what the exact sum implies: any NaN gives NaN; +inf together with -inf gives
NaN; otherwise an infinity wins; a finite exact sum at or beyond ``max + ulp(max)/2`` of the
target type rounds to an infinity of its sign (the round-to-nearest overflow rule). An exact sum
of zero is ``+0.0``, whatever the signs of the zeros summed, which is what ``math.fsum`` returns
(it never keeps a zero partial: ``fsum([-0.0]) == fsum([-0.0, -0.0]) == fsum([]) == +0.0``);
a nonzero exact sum that rounds to zero keeps its sign (only possible for binary32 sums of
values that are not all binary32: every binary64 sum is a multiple of the binary64 quantum).
For finite inputs whose sum does not overflow, the binary64 result is ``math.fsum(values)`` bit
for bit (``fsum`` itself raises where a partial sum overflows; the exact sum does not).

The accumulator
---------------
One accumulator is a flat int64 array of ``ACC_LEN`` = 72 entries (576 bytes):

========  ===================================================================================
index     meaning
========  ===================================================================================
0..66     ``NCHUNK`` = 67 chunks; the exact finite sum is ``sum(acc[j] * 2**(32*j - 1075))``.
          Every finite double ``x`` is an integer ``M * 2**(p - 1075)`` (``M`` its signed 53-bit
          significand, ``p = max(biased exponent, 1)``), so adding it adds ``M << (p & 31)``
          at chunk ``p >> 5``: two int64 additions, the low 32 bits into chunk ``p >> 5`` and
          the (signed) rest, at most 2**52 in magnitude, into the chunk above.
          Chunks 65 and 66 only ever receive carries; chunk 66 is the signed top digit.
67        count of NaN inputs
68        count of +inf inputs
69        count of -inf inputs
70        ``H``, headroom used: every chunk 0..65 satisfies ``|acc[j]| <= H * 2**32``
71        reserved, always 0
========  ===================================================================================

Normalisation (`normalise`) propagates carries upwards: afterwards chunks 0..65 lie in
``[0, 2**32)``, chunk 66 holds the signed rest and ``H = 1``. The normalised form is canonical:
a function of the exact value and the three special counts only. An addition costs
``ADD_COST`` = 2**20 units of headroom (its high part is below 2**52 = 2**20 * 2**32); before
``H`` would pass ``HMAX`` = 2**31 - 2 the accumulator is normalised first, so carries are
propagated once every ~2047 additions and no int64 ever overflows.

Merge rule: the elementwise int64 sum of accumulators is an accumulator for the union of their
inputs, provided the sum of their ``H`` stays within ``HMAX`` (``H`` is itself summed, so the
invariant carries over). In particular the elementwise sum of up to 2**31 - 2 *normalised*
accumulators (``H = 1`` each: chunks below 2**32, so the sum of K chunks is below K * 2**32)
is valid, which is what per-thread, per-device and per-rank merges do; an MPI ``allreduce`` with
``SUM`` over ``normalise``-d accumulators gives a valid accumulator (not normalised itself: call
`normalise` or just round it). The top chunk is unbounded by ``H``: it is about
``|sum| / 2**1037``, below 2**50 for any sum of fewer than 2**63 doubles.

API (all compiled with ``@njit(cache=True)``, callable from Python and from other compiled code):

* ``new() -> int64[ACC_LEN]``; ``new_many(n) -> int64[n, ACC_LEN]`` (one per component;
  these two are plain NumPy, for Python callers)
* ``add(acc, x)``: one float64 (a float32 is exact in float64)
* ``add_array(acc, values)``: a 1-D float64 or float32 array (any layout), the fast path;
  ``acc`` ends normalised
* ``merge(into, other)``: ``into`` becomes the accumulator of both; ``other`` is unchanged
* ``normalise(acc)``: in place, see above
* ``round_f64(acc) -> float64``, ``round_f32(acc) -> float32``: rounded once from the exact
  value (never via float64 for float32, which would round twice); ``acc`` is unchanged. (Called
  from Python, Numba boxes the float32 as a Python float holding exactly that value.)
* ``sum_slots(vals, out_acc, nblocks=0)``: parallel (``prange``) exact column sums of a 2-D
  ``(nslots, ncomp)`` float64 or float32 slot array, *added* into ``out_acc[c]``
  (shape ``(ncomp, ACC_LEN)``; ``out_acc`` ends normalised); ``nblocks`` (0: a fixed function
  of ``nslots``) only changes the work split, never the result
* ``exact_sum_reference(values, dtype)``: the pure-Python oracle (interp, tests);
  ``round_fraction(q, dtype)``: any rational correctly rounded to float64 / float32

Arrays are summed block by block (`add_array`, `sum_slots`), each block on one of two exact
paths (see "summing arrays" below): vectorised float arithmetic with error-free splitting
when the block's magnitudes span at most ~110 binades and hold no inf, NaN or value below
2**-969 (the usual case, about as fast as a plain float sum), else integer deposits as above.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.extending import intrinsic, overload

from ..host.jit import njit

# Every constant the compiled code uses is defined in this file: Numba's on-disk cache is keyed
# by this file alone, so compiled code must not depend on values from another module.
NCHUNK = 67
TOP = NCHUNK - 1  # the signed top chunk
I_NAN = 67
I_PINF = 68
I_NINF = 69
I_HEAD = 70
ACC_LEN = 72
LOW_MASK = (1 << 32) - 1
ADD_COST = 1 << 20
HMAX = (1 << 31) - 2
# additions per lane between two carry propagations on the integer path: from H = 1, RUN adds
# end at 1 + RUN * ADD_COST <= HMAX
RUN = 2047
NLANE = 4  # the integer path's interleaved accumulators, see `_add_int`
# sum_slots: rows per prange block at least, and blocks at most (a function of nslots only)
BLOCK_ROWS_MIN = 1 << 15
NBLOCK_MAX = 256

_JIT = dict(cache=True, error_model="numpy", boundscheck=False)


# -- bit casts ------------------------------------------------------------------------------
@intrinsic
def _f64_bits(typingctx, x):
    """The IEEE bits of a float64, as int64."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _bits_f64(typingctx, u):
    """The float64 with IEEE bits u (int64)."""
    if u != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def _bits_f32(typingctx, u):
    """The float32 with IEEE bits u (int32)."""
    if u != types.int32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


# -- the accumulator ------------------------------------------------------------------------
def new():
    """An empty accumulator (exact value 0, no specials). (Plain NumPy: compiled, a first
    call from Python cost 0.4 s of compiling np.zeros.)"""
    return np.zeros(ACC_LEN, np.int64)


def new_many(n):
    """n empty accumulators, one per row."""
    return np.zeros((n, ACC_LEN), np.int64)


@njit(inline="always")
def _deposit(acc, base, u):
    """Add the double with bits u to the accumulator at acc[base:base + ACC_LEN], without the
    headroom bookkeeping (the caller's)."""
    e = (u >> 52) & 0x7FF
    if e == 0x7FF:
        if u & 0xFFFFFFFFFFFFF:
            acc[base + I_NAN] += 1
        elif u < 0:
            acc[base + I_NINF] += 1
        else:
            acc[base + I_PINF] += 1
        return
    nz = np.int64(e != 0)
    m = (u & 0xFFFFFFFFFFFFF) | (nz << 52)  # significand, implicit bit for normals
    p = e + 1 - nz  # max(e, 1): subnormals share the exponent of the smallest normals
    s = u >> 63  # 0 or -1
    m = (m ^ s) - s  # signed significand
    sh = p & 31
    j = base + (p >> 5)
    # m * 2**sh == hi * 2**32 + lo exactly, lo in [0, 2**32), |hi| <= 2**52
    acc[j] += (m << sh) & LOW_MASK
    acc[j + 1] += m >> (32 - sh)


@njit(inline="always")
def _carry(acc, base):
    """Propagate carries of acc[base:base + ACC_LEN]: chunks 0..65 into [0, 2**32); H = 1."""
    c = np.int64(0)
    for j in range(base, base + TOP):
        v = acc[j] + c
        c = v >> 32
        acc[j] = v & LOW_MASK
    acc[base + TOP] += c
    acc[base + I_HEAD] = 1


@njit(**_JIT)
def normalise(acc):
    """Carry-normalise acc in place (its canonical form, see the module docstring)."""
    _carry(acc, 0)


@njit(**_JIT)
def add(acc, x):
    """acc += x exactly, for one float64 x."""
    if acc[I_HEAD] > HMAX - ADD_COST:
        _carry(acc, 0)
    _deposit(acc, 0, _f64_bits(np.float64(x)))
    acc[I_HEAD] += ADD_COST


@njit(**_JIT)
def merge(into, other):
    """into becomes the accumulator of both inputs' values (normalised); other is unchanged."""
    tmp = other.copy()
    _carry(tmp, 0)
    _carry(into, 0)
    for j in range(ACC_LEN):
        into[j] += tmp[j]
    _carry(into, 0)


# -- summing arrays -------------------------------------------------------------------------
# Two exact paths, chosen per block of up to BLOCK values, both ending in the accumulator:
#
# * the integer path, `_add_int`: every value deposited as above (element i into lane i % NLANE
#   of NLANE private accumulators, so that consecutive values in the same chunk do not wait on
#   each other's store), carried every RUN values per lane. Any values; ~2.5 ns a value.
#
# * the slice path, `_slice_block`, for blocks of finite values whose magnitudes span a moderate
#   range (the usual case): vectorised float arithmetic that is exact by construction. With every
#   |x| < 2**T in the block, slice k splits off the part of x on the grid 2**b_k,
#   ``s = (x + C_k) - C_k`` with ``C_k = 1.5 * 2**(b_k + 52)``, leaving ``x - s`` (both exact:
#   the remainder entering slice k is at most 2**(b_k + 51)). ``b_1 = T + LOG_BLOCK - 53`` and
#   ``b_(k+1) = b_k - SLICE_BITS`` (SLICE_BITS = 54 - LOG_BLOCK) make the sum of any subset of
#   the block's (at most 2**LOG_BLOCK) slice-k parts a multiple of 2**b_k no larger than
#   2**(b_k + 53): every partial sum is exact, in any order, so LANES float accumulators per
#   slice, summed across lanes, give each slice's exact total, deposited into the accumulator
#   (at most KMAX deposits per block). K slices are enough once b_K <= the quantum of the block's
#   smallest nonzero |x| (its last remainder is then 0); `_plan` picks b_1 and K from the
#   block's largest and smallest nonzero |x|, `_add_block` guesses them from the block before
#   so as to read the block once (~0.7 ns a value, about a plain float sum's speed). Blocks
#   needing more than KMAX slices, or holding an inf or NaN, or a value below 2**-969, or one so
#   large that C_1 would overflow, take the integer path. The bound 2**-969 keeps every operand
#   and result of the slice arithmetic a normal number (or zero), so it stays exact even if
#   flush-to-zero / denormals-are-zero were switched on in the process.
LOG_BLOCK = 13
BLOCK = 1 << LOG_BLOCK
SLICE_BITS = 54 - LOG_BLOCK
KMAX = 4
LANES = 64
EMIN_SLICED = 54  # smallest biased exponent of a nonzero value on the slice path
GUESS_ROOM = 2  # binades of room above a block's largest value in the plan guessed for the next
GUESS_PREFIX = 512  # values whose range gives the first block's guess


@njit(**_JIT)
def _add_int(acc, blk):
    """acc += every value of blk (1-D float64, contiguous), on the integer path."""
    n = blk.shape[0]
    u = blk.view(np.int64)
    w = np.zeros(NLANE * ACC_LEN, np.int64)
    for lane in range(NLANE):
        w[lane * ACC_LEN + I_HEAD] = 1
    step = NLANE * RUN
    for b0 in range(0, n, step):
        b1 = min(b0 + step, n)
        i = b0
        while i + NLANE <= b1:
            for lane in range(NLANE):
                _deposit(w, lane * ACC_LEN, u[i + lane])
            i += NLANE
        while i < b1:
            _deposit(w, 0, u[i])
            i += 1
        for lane in range(NLANE):
            _carry(w, lane * ACC_LEN)
    _carry(acc, 0)
    for lane in range(NLANE):
        for j in range(ACC_LEN):
            acc[j] += w[lane * ACC_LEN + j]
    _carry(acc, 0)


@njit(**_JIT)
def _range(blk):
    """(amin1, amax) over the bits a of |x| (x in blk, 1-D float64 contiguous): amax their
    maximum, amin1 the minimum of a - 1 over the nonzero ones (2**63 - 1 when all are zero).
    Integer min / max: vectorised."""
    u = blk.view(np.int64)
    amax = np.int64(0)
    amin1 = np.int64(0x7FFFFFFFFFFFFFFF)
    for i in range(u.shape[0]):
        a = u[i] & 0x7FFFFFFFFFFFFFFF
        amax = max(amax, a)
        amin1 = min(amin1, (a - 1) & 0x7FFFFFFFFFFFFFFF)
    return amin1, amax


@njit(**_JIT)
def _plan(amin1, amax):
    """(K, b_1) for a block with `_range` (amin1, amax): K slices on the slice path, 0 for the
    integer path, -1 when every value is a zero (nothing to add)."""
    if amax == 0:
        return -1, 0
    emax = amax >> 52
    emin = (amin1 + 1) >> 52
    if emax == 0x7FF or emin < EMIN_SLICED:
        return 0, 0
    b1 = emax - 1022 + LOG_BLOCK - 53  # every |x| < 2**(emax - 1022)
    if b1 > 970:  # C_1 = 1.5 * 2**(b1 + 52) must be finite
        return 0, 0
    qmin = emin - 1075  # quantum of the smallest nonzero |x|: every x is a multiple of it
    # the fewest k with b_k = b1 - (k - 1) * SLICE_BITS <= qmin; b1 - qmin >= LOG_BLOCK, so k >= 2
    # (slice 1 keeps 53 - LOG_BLOCK bits): k = 2 spans 28 binades, 3 spans 69, 4 spans 110
    k = 1 + (b1 - qmin + SLICE_BITS - 1) // SLICE_BITS
    if k > KMAX:
        return 0, 0
    return k, b1


@njit(inline="always")
def _magic(b):
    """1.5 * 2**(b + 52): adding and subtracting it rounds |x| <= 2**(b + 51) to the grid 2**b."""
    return _bits_f64(((b + 52 + 1023) << 52) | (1 << 51))


@njit(inline="always")
def _cut(x, c):
    """(part of x on the grid of magic constant c, the rest): both exact, see above."""
    s = (x + c) - c
    return s, x - s


# One loop per slice count (2, 3, 4), each a plain loop over LANES lanes that LLVM vectorises
# (`r * LANES` keeps the index provably non-negative: no wraparound test, so no gathers). Each
# also tracks the block's range per lane, as `_range` does, so that a block can be sliced with a
# plan guessed from the block before and checked afterwards: one pass over memory, not two.
@njit(inline="always")
def _track(span, j, u):
    a = u & 0x7FFFFFFFFFFFFFFF
    span[0, j] = max(span[0, j], a)
    span[1, j] = min(span[1, j], (a - 1) & 0x7FFFFFFFFFFFFFFF)


@njit(**_JIT)
def _slices2(blk, rows, c1, c2, lanes, span):
    u = blk.view(np.int64)
    for r in range(rows):
        base = r * LANES
        for j in range(LANES):
            _track(span, j, u[base + j])
            s1, x = _cut(blk[base + j], c1)
            s2, x = _cut(x, c2)
            lanes[0, j] += s1
            lanes[1, j] += s2


@njit(**_JIT)
def _slices3(blk, rows, c1, c2, c3, lanes, span):
    u = blk.view(np.int64)
    for r in range(rows):
        base = r * LANES
        for j in range(LANES):
            _track(span, j, u[base + j])
            s1, x = _cut(blk[base + j], c1)
            s2, x = _cut(x, c2)
            s3, x = _cut(x, c3)
            lanes[0, j] += s1
            lanes[1, j] += s2
            lanes[2, j] += s3


@njit(**_JIT)
def _slices4(blk, rows, c1, c2, c3, c4, lanes, span):
    u = blk.view(np.int64)
    for r in range(rows):
        base = r * LANES
        for j in range(LANES):
            _track(span, j, u[base + j])
            s1, x = _cut(blk[base + j], c1)
            s2, x = _cut(x, c2)
            s3, x = _cut(x, c3)
            s4, x = _cut(x, c4)
            lanes[0, j] += s1
            lanes[1, j] += s2
            lanes[2, j] += s3
            lanes[3, j] += s4


@njit(**_JIT)
def _slice_block(blk, k, b1, lanes, span):
    """Slice blk (1-D float64 contiguous, at most BLOCK values) with k slices from grid 2**b1:
    each slice's sum into lanes[j, :] (summed across lanes: exact whenever the plan covers the
    block, see `_covers`), and returns the block's `_range` (amin1, amax)."""
    n = blk.shape[0]
    rows = n // LANES
    c1 = _magic(b1)
    c2 = _magic(b1 - SLICE_BITS)
    c3 = _magic(b1 - 2 * SLICE_BITS) if k >= 3 else c1
    c4 = _magic(b1 - 3 * SLICE_BITS) if k >= 4 else c1
    lanes[:] = 0.0
    span[0, :] = 0
    span[1, :] = 0x7FFFFFFFFFFFFFFF
    if k == 2:
        _slices2(blk, rows, c1, c2, lanes, span)
    elif k == 3:
        _slices3(blk, rows, c1, c2, c3, lanes, span)
    else:
        _slices4(blk, rows, c1, c2, c3, c4, lanes, span)
    cs = (c1, c2, c3, c4)
    u = blk.view(np.int64)
    for i in range(rows * LANES, n):  # the tail, into lane 0
        _track(span, 0, u[i])
        x = blk[i]
        for j in range(k):
            s, x = _cut(x, cs[j])
            lanes[j, 0] += s
    amax = np.int64(0)
    amin1 = np.int64(0x7FFFFFFFFFFFFFFF)
    for j in range(LANES):
        amax = max(amax, span[0, j])
        amin1 = min(amin1, span[1, j])
    return amin1, amax


@njit(inline="always")
def _covers(k_s, b1_s, amin1, b1):
    """Whether slicing with k_s slices from grid 2**b1_s is exact for a block whose own plan
    (`_plan`, with the block's amin1) is a slice plan from grid 2**b1: its values are no larger
    (b1 <= b1_s: the bound on the slice sums holds) and its last grid is no coarser than the
    quantum of its smallest nonzero value (nothing is left over)."""
    qmin = ((amin1 + 1) >> 52) - 1075
    return k_s > 0 and b1 <= b1_s and b1_s - (k_s - 1) * SLICE_BITS <= qmin


@njit(inline="always")
def _add_double(acc, x):
    """acc += x (a finite float64), with the headroom bookkeeping."""
    if acc[I_HEAD] > HMAX - ADD_COST:
        _carry(acc, 0)
    _deposit(acc, 0, _f64_bits(x))
    acc[I_HEAD] += ADD_COST


@njit(inline="always")
def _raise_top(k, b1, amin1):
    """The plan (k, b1) of a block with amin1, as a guess for the next block: its top raised by
    up to GUESS_ROOM binades (the largest value of a block varies little), as long as it still
    covers the block's smallest value."""
    qmin = ((amin1 + 1) >> 52) - 1075
    top = b1
    while top < min(b1 + GUESS_ROOM, 970) and top + 1 - (k - 1) * SLICE_BITS <= qmin:
        top += 1
    return top


@njit(**_JIT)
def _add_block(acc, blk, lanes, span, guess):
    """acc += every value of blk (1-D float64 contiguous, at most BLOCK values), exactly.

    guess: int64 (2,), a slice plan (k, b1) guessed from the block before (k = 0: none, then one
    is guessed from the block's first GUESS_PREFIX values), updated for the next block. With a
    guess the block is sliced and its range found in one pass; the slice sums are used only if
    the guess covers the block (`_covers`), else the block is sliced again with its own plan, or
    summed on the integer path. The guess only ever changes the speed, never the sum."""
    k_s = guess[0]
    b1_s = guess[1]
    if k_s <= 0:  # no guess yet: guess from a prefix of the block
        amin1, amax = _range(blk[:GUESS_PREFIX])
        k_s, b1_s = _plan(amin1, amax)
        if k_s > 0:
            b1_s = _raise_top(k_s, b1_s, amin1)
    if k_s > 0:
        amin1, amax = _slice_block(blk, k_s, b1_s, lanes, span)
    else:
        amin1, amax = _range(blk)
    k, b1 = _plan(amin1, amax)
    if k < 0:  # only zeros
        return
    if k == 0:
        _add_int(acc, blk)
        guess[0] = 0
        return
    if not _covers(k_s, b1_s, amin1, b1):
        _slice_block(blk, k, b1, lanes, span)
        k_s = k
    for j in range(k_s):
        total = 0.0
        for lane in range(LANES):
            total += lanes[j, lane]  # exact, in any order
        _add_double(acc, total)
    guess[0] = k
    guess[1] = _raise_top(k, b1, amin1)


def _contiguous_f64(vals):
    """(True, vals as a flat C-contiguous float64 array) when vals is one already (no copy),
    else (False, an empty array): dispatched on the type, at compile time."""


@overload(_contiguous_f64)
def _contiguous_f64_impl(vals):
    if isinstance(vals, types.Array) and vals.dtype == types.float64 and vals.layout == "C":
        return lambda vals: (True, vals.reshape(vals.size))
    return lambda vals: (False, np.empty(0, np.float64))


@njit(**_JIT)
def _add_rows(acc, vals, c, r0, r1, flat, scratch):
    """acc += vals[r0:r1, c] (vals 2-D) or vals[r0:r1] (vals 1-D) exactly, block by block.
    flat: `_contiguous_f64(vals)[1]` when that was True and vals has one column, else empty;
    scratch: float64 (BLOCK,), where other blocks are copied (float32 widened, exactly)."""
    lanes = np.empty((KMAX, LANES), np.float64)
    span = np.empty((2, LANES), np.int64)
    guess = np.zeros(2, np.int64)
    for b0 in range(r0, r1, BLOCK):
        b1 = min(b0 + BLOCK, r1)
        if flat.shape[0] > 0:
            blk = flat[b0:b1]
        else:
            blk = scratch[: b1 - b0]
            if vals.ndim == 1:
                for i in range(b1 - b0):
                    blk[i] = vals[b0 + i]
            else:
                for i in range(b1 - b0):
                    blk[i] = vals[b0 + i, c]
        _add_block(acc, blk, lanes, span, guess)
    _carry(acc, 0)


@njit(**_JIT)
def add_array(acc, values):
    """acc += every element of values (1-D float64 or float32, any layout), exactly; acc ends
    normalised."""
    ok, flat = _contiguous_f64(values)
    scratch = np.empty(0 if ok else min(BLOCK, values.shape[0]), np.float64)
    _add_rows(acc, values, 0, 0, values.shape[0], flat, scratch)


@njit(**_JIT)
def add_slots_serial(vals, out_acc):
    """As `sum_slots`, one value at a time on the integer path (~2.5 ns a value): for a few
    slots (a rank's share of a Global sum under MPI) it compiles in a fraction of a second,
    where `sum_slots` takes ~10 s (once per installation)."""
    for c in range(vals.shape[1]):
        acc = out_acc[c]
        for s in range(vals.shape[0]):
            add(acc, np.float64(vals[s, c]))
        normalise(acc)


def sum_slots(vals, out_acc, nblocks=0) -> None:
    """out_acc[c] += vals[:, c] for every column c, exactly; out_acc ends normalised.

    vals: (nslots, ncomp) float64 or float32, any layout (one that is not C-contiguous is
    copied first: the parallel fold compiles once per dtype, ~4 s each, not once per layout;
    relsim's slot arrays are C-contiguous); out_acc: (ncomp, ACC_LEN) int64. The rows are cut
    into nblocks contiguous blocks (0: a fixed function of nslots, never of the thread count),
    each summed into its own accumulators in a prange, then merged. Exact sums do not depend on
    how they are split, so neither does the result (nor the bits of out_acc)."""
    _sum_slots(np.ascontiguousarray(vals), out_acc, nblocks)


@njit(parallel=True, **_JIT)
def _sum_slots(vals, out_acc, nblocks):
    """`sum_slots` of a C-contiguous vals."""
    n = vals.shape[0]
    ncomp = vals.shape[1]
    nb = nblocks
    if nb <= 0:
        nb = min(NBLOCK_MAX, max(1, (n + BLOCK_ROWS_MIN - 1) // BLOCK_ROWS_MIN))
    ok, flat = _contiguous_f64(vals)
    if not ok or ncomp != 1:
        flat = flat[:0]
    # np.empty, filled in the prange: np.zeros would be a parallel region (a barrier) of its own
    part = np.empty((nb, ncomp, ACC_LEN), np.int64)
    for b in prange(nb):
        r0 = n * b // nb
        r1 = n * (b + 1) // nb
        for c in range(ncomp):
            for j in range(ACC_LEN):
                part[b, c, j] = 0
        scratch = np.empty(0 if flat.shape[0] > 0 else min(BLOCK, r1 - r0), np.float64)
        for c in range(ncomp):
            _add_rows(part[b, c], vals, c, r0, r1, flat, scratch)
    for c in range(ncomp):
        _carry(out_acc[c], 0)
        for b in range(nb):
            for j in range(ACC_LEN):
                out_acc[c, j] += part[b, c, j]
        _carry(out_acc[c], 0)


# -- rounding -------------------------------------------------------------------------------
@njit(inline="always")
def _bit(mag, p):
    """Bit p of the non-negative integer whose base-2**32 digits are mag[0..TOP]."""
    k = min(p >> 5, TOP)
    off = p - 32 * k
    if off > 62:
        return np.int64(0)
    return (mag[k] >> off) & 1


@njit(**_JIT)
def _special_or_magnitude(acc):
    """(code, mag, negative): code 1 NaN, 2 +inf, 3 -inf, or 0 finite: then mag holds |exact
    sum| as normalised digits (all chunks in [0, 2**32) but the top, >= 0) and negative its
    sign."""
    mag = acc.copy()
    _carry(mag, 0)
    if mag[I_NAN] > 0 or (mag[I_PINF] > 0 and mag[I_NINF] > 0):
        return 1, mag, False
    if mag[I_PINF] > 0:
        return 2, mag, False
    if mag[I_NINF] > 0:
        return 3, mag, True
    negative = mag[TOP] < 0
    if negative:
        for j in range(NCHUNK):
            mag[j] = -mag[j]
        _carry(mag, 0)
    return 0, mag, negative


@njit(**_JIT)
def _round_digits(mag, prec, dmin):
    """Round the integer M (digits mag) to prec significant bits, quantum at least 2**dmin,
    ties to even: returns (q, d) with the rounded value q * 2**d, q < 2**prec except when
    rounding carried to q == 2**prec; (0, dmin) when M == 0."""
    t = TOP
    while t > 0 and mag[t] == 0:
        t -= 1
    top = mag[t]
    if top == 0:
        return np.int64(0), np.int64(dmin)
    nbits = 0
    while top >> nbits:
        nbits += 1
    length = 32 * t + nbits  # bit length of M
    d = max(length - prec, dmin)
    q = np.int64(0)
    for p in range(length - 1, d - 1, -1):
        q = (q << 1) | _bit(mag, p)
    if _bit(mag, d - 1):  # d >= dmin >= 1
        # sticky: any bit below d - 1
        k = min((d - 1) >> 5, TOP)
        low = min((d - 1) - 32 * k, 62)
        sticky = (mag[k] & ((np.int64(1) << low) - 1)) != 0
        for j in range(k):
            if mag[j] != 0:
                sticky = True
                break
        if sticky or (q & 1):
            q += 1
    return q, np.int64(d)


@njit(**_JIT)
def round_f64(acc):
    """The exact sum in acc rounded once to float64 (see the module docstring)."""
    code, mag, negative = _special_or_magnitude(acc)
    if code == 1:
        return np.nan
    if code == 2:
        return np.inf
    if code == 3:
        return -np.inf
    # float64 values are q * 2**(d - 1075) with d >= 1 (subnormal quantum 2**-1074)
    q, d = _round_digits(mag, 53, 1)
    if q == 0:  # an exact zero (negative is then False), or a negative sum that underflows
        return -0.0 if negative else 0.0
    if d >= 2047:  # q >= 2**52 here: at least 2**1024 (and d - 1 << 52 would leave int64)
        bits = np.int64(0x7FF0000000000000)
    else:
        bits = ((d - 1) << 52) + q  # q in [2**52, 2**53] carries into the exponent field
        if bits >= 0x7FF0000000000000:
            bits = 0x7FF0000000000000
    if negative:
        bits |= np.int64(-0x8000000000000000)
    return _bits_f64(bits)


@njit(**_JIT)
def round_f32(acc):
    """The exact sum in acc rounded once to float32 (see the module docstring)."""
    code, mag, negative = _special_or_magnitude(acc)
    if code == 1:
        return np.float32(np.nan)
    if code == 2:
        return np.float32(np.inf)
    if code == 3:
        return np.float32(-np.inf)
    # float32 values are q * 2**(d - 1075) with d >= 926 (subnormal quantum 2**-149)
    q, d = _round_digits(mag, 24, 926)
    if q == 0:  # an exact zero (negative is then False), or a sum that underflows
        return np.float32(-0.0) if negative else np.float32(0.0)
    bits = ((d - 926) << 23) + q
    if bits >= 0x7F800000:
        bits = 0x7F800000
    if negative:
        bits |= 0x80000000
    if bits >= 0x80000000:
        bits -= 1 << 32
    return _bits_f32(np.int32(bits))


# -- the pure-Python reference ---------------------------------------------------------------
_FORMATS = {
    # precision bits, minimum normal exponent, maximum exponent
    np.dtype(np.float64): (53, -1022, 1023),
    np.dtype(np.float32): (24, -126, 127),
}


# -- a Global's fold ------------------------------------------------------------------------
# Up to SERIAL_SLOTS slots: one serial compiled call, no parallel region (a launch's overhead is
# a few microseconds; a parallel region alone costs more; 2**17 slots take ~0.3 ms). Beyond:
# `sum_slots`, whose first compilation (once per installation, then cached) takes ~7 s, which
# small and medium problems so never pay.
SERIAL_SLOTS = 1 << 17
FEW_SLOTS = 256  # fewer are added one at a time (`_column`)


@njit(inline="always")
def _column(g, vals, c):
    """The exact accumulator of g[c] and vals[:, c]: a few slots one at a time (the integer
    path, ~2.5 ns a value), more block by block (`_add_rows`: the slice path where the values
    allow, ~0.5 ns a value after ~0.5 us of set-up; 29,791 slots: 72 -> 16 us)."""
    acc = np.zeros(ACC_LEN, np.int64)
    add(acc, np.float64(g[c]))
    if vals.shape[0] < FEW_SLOTS:
        for s in range(vals.shape[0]):
            add(acc, np.float64(vals[s, c]))
        return acc
    ok, flat = _contiguous_f64(vals)
    if not ok or vals.shape[1] != 1:
        flat = flat[:0]
    scratch = np.empty(0 if flat.shape[0] > 0 else min(BLOCK, vals.shape[0]), np.float64)
    _add_rows(acc, vals, c, 0, vals.shape[0], flat, scratch)
    return acc


@njit(**_JIT)
def fold_serial_f64(g, vals):
    """g[c] becomes the exact sum of g[c] and vals[:, c], rounded once (float64 g)."""
    for c in range(g.shape[0]):
        g[c] = round_f64(_column(g, vals, c))


@njit(**_JIT)
def fold_serial_f32(g, vals):
    """As `fold_serial_f64`, for a float32 g (rounded once, to float32)."""
    for c in range(g.shape[0]):
        g[c] = round_f32(_column(g, vals, c))


def fold_of(g, vals):
    """A float Global's sum, as a callable of no arguments: g[c] (1-D storage, float64 or
    float32) becomes the exact sum of g[c] and the slots vals[:, c], rounded once to g's type.
    The path (serial for few slots, else parallel blocks) is chosen once, for the launch's fixed
    slot array; the bits depend only on the values, never on the path."""
    if vals.shape[0] * vals.shape[1] <= SERIAL_SLOTS:
        if g.dtype == np.float32:
            return lambda: fold_serial_f32(g, vals)
        return _HostFirst(g, vals)
    return lambda: _fold_blocks(g, vals)


class _HostFirst:
    """`fold_serial_f64(g, vals)`, whose first compilation takes ~6 s (then cached once per
    installation): until its machine code is in this process or Numba's disk cache, the same
    bits from math.fsum (~30 ns a value: 4 ms for the most slots taken here) while a
    background worker compiles it (`compile_jobs.helper_in_background`). A program's first
    undecided lane sum (an exact tie, common among a few rows; a sum that cancels, such as a
    divergence's) thus costs no compilation; the launches after the worker is done use the
    compiled fold."""

    __slots__ = ("g", "vals", "compiled", "ready")

    def __init__(self, g, vals):
        self.g, self.vals, self.compiled, self.ready = g, vals, None, None

    def __call__(self) -> None:
        g, vals = self.g, self.vals
        if self.compiled is None:  # first call: look for it, else have it compiled
            from numba import typeof

            from ..host.compile_jobs import AFTER_KERNELS, helper_in_background
            self.compiled, self.ready = helper_in_background(
                fold_serial_f64, (typeof(g), typeof(vals)), AFTER_KERNELS)
        elif not self.compiled and self.ready():
            from numba import typeof

            from ..host.compile_jobs import load_cached
            self.compiled = load_cached(fold_serial_f64, (typeof(g), typeof(vals)))
            if not self.compiled:  # (the worker failed: math.fsum from now on)
                self.ready = lambda: False
        if not self.compiled:
            sums = fsum_columns(g, vals)
            if sums is not None:
                g[:] = sums
                return
        fold_serial_f64(g, vals)


def fsum_columns(g, vals):
    """[exact sum of g[c] and vals[:, c], rounded once] for float64 g by math.fsum (correctly
    rounded, ties to even, an exact zero +0.0: this module's rule for finite values), or None
    where a value or a partial sum is not finite (the compiled path has the specials' rules)."""
    out = []
    for c in range(g.shape[0]):
        try:
            v = math.fsum([float(g[c])] + vals[:, c].tolist())
        except (OverflowError, ValueError):  # a partial sum overflowed; inf - inf
            return None
        if not math.isfinite(v):
            return None
        out.append(v)
    return out


def exact_parts(values, most: int = 64):
    """Floats whose exact sum is that of `values` (a list of floats), by math.fsum alone: each
    the correctly rounded rest of the sum less the ones before (a nonzero rest never rounds to
    zero; each is below half an ulp of the one before, so a few suffice), with nothing to
    compile; None where a value or a partial sum is not finite, or after `most` parts."""
    parts: list = []
    rest = list(values)  # the values less the parts so far (exactly, as fsum sums them)
    try:
        for _ in range(most):
            p = math.fsum(rest)
            if p == 0.0:
                return parts
            if not math.isfinite(p):
                return None
            parts.append(p)
            rest.append(-p)
    except (OverflowError, ValueError):  # a partial sum overflowed; inf - inf
        return None
    return None


def acc_of_parts(parts, out) -> None:
    """`out` (an accumulator, int64[ACC_LEN]) becomes the normalised accumulator of finite
    floats `parts` (`exact_parts`), in Python: what `add` of each and `normalise` give."""
    total = 0  # in units of 2**-1075
    for x in parts:
        n, d = x.as_integer_ratio()  # d a power of two, at most 2**1074
        total += n << (1075 - (d.bit_length() - 1))
    low = total & ((1 << (32 * TOP)) - 1)  # chunks 0..65 in [0, 2**32), the signed rest on top
    out[:] = 0
    out[:TOP] = np.frombuffer(low.to_bytes(4 * TOP, "little"), dtype="<u4")
    out[TOP] = total >> (32 * TOP)
    out[I_HEAD] = 1


def _fold_blocks(g, vals) -> None:
    single = g.dtype == np.float32
    accs = new_many(g.shape[0])
    for c in range(g.shape[0]):
        add(accs[c], float(g[c]))
    sum_slots(vals, accs)
    rnd = round_f32 if single else round_f64
    for c in range(g.shape[0]):
        g[c] = rnd(accs[c])


def round_fraction(value: Fraction, dtype) -> float:
    """value (any rational) correctly rounded to dtype (float64 or float32), to nearest, ties to
    even, with subnormals; beyond the overflow threshold an infinity of its sign; an exact zero
    is +0.0, a nonzero value that rounds to zero keeps its sign. Returns a numpy scalar."""
    dt = np.dtype(dtype)
    prec, emin, emax = _FORMATS[dt]
    num, den = value.numerator, value.denominator
    if num == 0:
        return dt.type(0.0)
    sign = -1.0 if num < 0 else 1.0
    num = abs(num)
    # e with 2**e <= num / den < 2**(e + 1)
    e = num.bit_length() - den.bit_length()
    if (num << max(-e, 0)) < (den << max(e, 0)):
        e -= 1
    quantum = max(e, emin) - (prec - 1)  # exponent of the last kept bit
    if quantum >= 0:
        q, r = divmod(num, den << quantum)
        twice_r, d = 2 * r, den << quantum
    else:
        q, r = divmod(num << -quantum, den)
        twice_r, d = 2 * r, den
    if twice_r > d or (twice_r == d and q & 1):
        q += 1
    if q.bit_length() + quantum > emax + 1:  # q * 2**quantum >= 2**(emax + 1)
        return dt.type(sign * math.inf)
    return dt.type(sign * math.ldexp(q, quantum))  # exact: q has at most prec + 1 bits


def round_merged(accs, start: float, dtype):
    """The exact sum of `start` and the values of the accumulators `accs` (any count, any
    normalisation: their chunks' integer sums, their specials' counts), rounded once to dtype
    by this module's rules, in Python: what `add`, `merge` and `round_f64` / `round_f32` give
    (a merge of ranks' accumulators under MPI), with nothing to compile. Returns a numpy
    scalar."""
    dt = np.dtype(dtype)
    accs = np.asarray(accs, dtype=np.int64).reshape(-1, ACC_LEN)
    nan, pinf, ninf = (int(accs[:, i].sum()) for i in (I_NAN, I_PINF, I_NINF))
    total = _chunks_value(accs[:, :NCHUNK])  # the finite sum, in units of 2**-1075
    x = float(start)
    if math.isnan(x):
        nan += 1
    elif math.isinf(x):
        pinf, ninf = pinf + (x > 0), ninf + (x < 0)
    else:
        n, d = x.as_integer_ratio()  # d a power of two, at most 2**1074
        total += n << (1075 - (d.bit_length() - 1))
    if nan or (pinf and ninf):
        return dt.type(math.nan)
    if pinf or ninf:
        return dt.type(math.inf if pinf else -math.inf)
    if dt == np.float64:  # (Python's int / int is correctly rounded, ties to even, subnormals
        # included; every binary64 sum is a multiple of its quantum: no nonzero rounds to 0)
        try:
            return dt.type(total / (1 << 1075))
        except OverflowError:
            return dt.type(math.inf if total > 0 else -math.inf)
    return round_fraction(Fraction(total, 1 << 1075), dt)


def _chunks_value(chunks) -> int:
    """The sum over the rows of `chunks` (int64, (accumulators, NCHUNK), any signs and sizes)
    of sum(row[j] * 2**(32*j)) as a Python int, by conversions of 32-bit digits rather than a
    shift and an add a chunk (two ranks' accumulators merged: ~50 -> ~10 us): each chunk is
    its low 32 bits plus its (signed) rest times 2**32, the rest split by sign."""
    low = (chunks & LOW_MASK).astype("<u4")
    rest = chunks >> 32  # (arithmetic: floor division by 2**32, in [-2**31, 2**31))
    up = np.maximum(rest, 0).astype("<u4")
    down = np.maximum(-rest, 0).astype("<u4")
    total = 0
    for k in range(chunks.shape[0]):
        total += int.from_bytes(low[k].tobytes(), "little") + (
            (int.from_bytes(up[k].tobytes(), "little") -
             int.from_bytes(down[k].tobytes(), "little")) << 32)
    return total


def exact_sum_reference(values, dtype) -> float:
    """The exactly rounded sum of values (floats; float32 values for a float32 sum) in dtype,
    with the special-value, overflow and zero rules of the module docstring: the oracle that
    the compiled accumulator and the interp backend are held to. Returns a numpy scalar."""
    dt = np.dtype(dtype)
    total = 0  # the exact finite sum, in units of 2**-1074 (every float is a multiple)
    nan = pinf = ninf = False
    for v in values:
        x = float(v)
        if math.isnan(x):
            nan = True
        elif math.isinf(x):
            if x > 0:
                pinf = True
            else:
                ninf = True
        else:
            n, d = x.as_integer_ratio()  # d is a power of two, at most 2**1074
            total += n << (1074 - (d.bit_length() - 1))
    if nan or (pinf and ninf):
        return dt.type(math.nan)
    if pinf:
        return dt.type(math.inf)
    if ninf:
        return dt.type(-math.inf)
    return round_fraction(Fraction(total, 1 << 1074), dt)
