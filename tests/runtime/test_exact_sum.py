"""Exact Global sums (`runtime/folds/exact_sum.py`): every compiled way of summing (one `add` at a
time, `add_array`, `sum_slots` with one or many blocks, shuffled, split and merged) gives the
correctly rounded exact sum, bit for bit: `math.fsum` where fsum defines it (binary64), the
Fraction-based reference everywhere (binary32 too), with the special-value, overflow and
signed-zero rules of the module docstring."""
import itertools
import math
import platform
import random
import sys
from fractions import Fraction

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from relsim.runtime.folds import exact_sum as es

F64MAX = sys.float_info.max
F32MAX = float(np.finfo(np.float32).max)
TINY = 5e-324  # smallest subnormal float64
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
# array sizes around the lane count (64) and the block (8192)
SIZES = [1, 2, 3, 63, 64, 65, 1000, 8191, 8192, 8193, 20000, 40000]


def same(a, b) -> bool:
    """Bitwise equal, or both NaN (a NaN's payload is not part of the result)."""
    a, b = np.asarray(a)[()], np.asarray(b)[()]
    if a.dtype != b.dtype:
        return False
    if np.isnan(a) and np.isnan(b):
        return True
    return a.tobytes() == b.tobytes()


def fsum(values):
    """math.fsum, or None where it raises (inf - inf, or a partial sum that overflowed)."""
    try:
        return np.float64(math.fsum(values))
    except (OverflowError, ValueError):
        return None


def rounder(dtype):
    """round_f64 or round_f32, returning a numpy scalar (compiled functions return a Python
    float, exactly the float32 value for round_f32)."""
    fn = es.round_f64 if dtype == np.float64 else es.round_f32
    return lambda acc: np.dtype(dtype).type(fn(acc))


def acc_of(values):
    acc = es.new()
    es.add_array(acc, np.asarray(values, np.float64))
    return acc


def assert_same_acc(values):
    """add_array's accumulator equals the integer path's, bit for bit once normalised (the
    normalised form is canonical): the slice path lost nothing, however far below the rounded
    result's last bit."""
    arr = np.ascontiguousarray(values, np.float64)
    fast = acc_of(arr)
    exact = es.new()
    es._add_int(exact, arr)
    es.normalise(fast)
    es.normalise(exact)
    assert fast.tobytes() == exact.tobytes()


def every_way(values, dtype=np.float64, seed=0):
    """{way: rounded result} for each compiled way of summing values (floats of dtype)."""
    arr = np.asarray(values, dtype)
    n = arr.shape[0]
    rnd = rounder(dtype)
    out = {}

    acc = es.new()
    for x in arr:
        es.add(acc, float(x))
    out["add"] = rnd(acc)

    acc = es.new()
    es.add_array(acc, arr)
    out["add_array"] = rnd(acc)

    for nb in (1, 7):
        acc = es.new_many(1)
        es.sum_slots(arr.reshape(n, 1), acc, nb)
        out[f"sum_slots/{nb}"] = rnd(acc[0])

    acc = es.new_many(1)  # (a rank's share under MPI)
    es.add_slots_serial(arr.reshape(n, 1), acc)
    out["add_slots_serial"] = rnd(acc[0])
    slots = es.new_many(1)
    es.sum_slots(arr.reshape(n, 1), slots)
    assert acc.tobytes() == slots.tobytes()  # (both normalised: the canonical form)

    rng = np.random.default_rng(seed)
    shuffled = arr[rng.permutation(n)]
    acc = es.new()
    es.add_array(acc, shuffled)
    out["shuffled"] = rnd(acc)

    # split into pieces at random cuts, each summed on its own, merged in a random order
    cuts = np.sort(rng.integers(0, n + 1, 3))
    pieces = np.split(shuffled, cuts)
    accs = []
    for p in pieces:
        a = es.new()
        es.add_array(a, p)
        accs.append(a)
    rng.shuffle(accs)
    total = es.new()
    for a in accs:
        es.merge(total, a)
    out["merged"] = rnd(total)

    # normalised, then merged by elementwise int64 addition (an MPI allreduce with SUM)
    for a in accs:
        es.normalise(a)
    out["elementwise"] = rnd(np.sum(accs, axis=0) if accs else es.new())
    return out


def check(values, dtype=np.float64, seed=0):
    """Every way equals the reference and (binary64, where defined) math.fsum; returns it.
    values must be values of dtype."""
    assert np.array_equal(np.asarray(values, dtype), np.asarray(values, np.float64),
                          equal_nan=True)
    ref = es.exact_sum_reference(values, dtype)
    assert ref.dtype == np.dtype(dtype)
    if dtype == np.float64:
        f = fsum(values)
        if f is not None:
            assert same(ref, f), (ref, f)
    for way, got in every_way(values, dtype, seed).items():
        assert same(got, ref), (way, got, ref)
    return ref


# -- the rules, on small cases ---------------------------------------------------------------
def test_cancellation_where_a_float_sum_fails():
    values = [1e16, 1.0, -1e16]
    assert sum(values) == 0.0  # the naive sum loses the 1
    assert check(values) == 1.0
    values = [1e100, 1.0, -1e100, 1e-100, 3.0, -1e-100]
    assert sum(values) != 4.0
    assert check(values) == 4.0


@pytest.mark.parametrize("tiny", [1e-30, 1e-300, 5e-324])
def test_pairs_cancel_leaving_the_tiny_one(tiny):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(5000) * 10.0 ** rng.uniform(-5, 5, 5000)
    values = rng.permutation(np.concatenate([x, -x, [tiny]]))
    assert math.fsum(values) == tiny
    assert np.sum(values) != tiny and sum(values) != tiny
    assert check(values) == tiny


def test_signed_zeros_follow_fsum():
    # fsum never keeps a zero partial: an exact sum of zero is +0.0, whatever the zeros' signs
    for values in ([], [-0.0], [-0.0, -0.0], [0.0, -0.0], [1.0, -1.0], [-1.0, 1.0],
                   [TINY, -TINY], [-F64MAX, F64MAX], [-0.0] * 10000):
        assert same(math.fsum(values), 0.0)
        assert same(check(values), np.float64(0.0))
    for values in ([], [-0.0], [-0.0, -0.0], [-1.0, 1.0], [2.0**-149, -(2.0**-149)],
                   [-F32MAX, F32MAX], [-0.0] * 10000):
        assert same(check(values, np.float32), np.float32(0.0))
    assert same(check([-0.0, -5e-324]), np.float64(-5e-324))


def test_subnormals():
    assert check([TINY] * 3) == 3 * TINY
    assert check([2.2250738585072014e-308, -TINY]) == 2.225073858507201e-308
    assert check([1e-310, 1e-310, -3e-310, 2.5e-320]) == math.fsum([1e-310, 1e-310, -3e-310,
                                                                    2.5e-320])
    rng = np.random.default_rng(2)
    sub = rng.integers(-(1 << 52), 1 << 52, 3000).astype(np.float64) * TINY
    check(sub)
    check(np.concatenate([sub, [1.0, -1.0, 1e-300]]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_specials(dtype):
    inf, nan = math.inf, math.nan
    cases = [
        ([nan], nan), ([1.0, nan, 2.0], nan), ([inf, -inf], nan), ([inf, nan], nan),
        ([inf, 1.0], inf), ([-inf, 1.0], -inf), ([inf, inf, -F32MAX], inf),
        ([-inf, -inf], -inf), ([inf, -inf, 1.0, inf], nan),
    ]
    for values, want in cases:
        assert same(check(values, dtype), np.asarray(want, dtype)), values
    # one special among many values: the block holding it takes the integer path
    rng = np.random.default_rng(3)
    big = rng.standard_normal(20000).astype(dtype).astype(np.float64)
    for special, want in ((nan, nan), (inf, inf), (-inf, -inf)):
        values = big.copy()
        values[12345] = special
        assert same(check(values, dtype), np.asarray(want, dtype))
    values = big.copy()
    values[10] = inf
    values[19000] = -inf
    assert same(check(values, dtype), np.asarray(nan, dtype))


def test_overflow_f64():
    half_ulp = math.ulp(F64MAX) / 2
    assert same(check([F64MAX, F64MAX]), np.float64(math.inf))
    assert same(check([-F64MAX, -F64MAX]), np.float64(-math.inf))
    assert fsum([F64MAX, F64MAX, -F64MAX]) is None  # fsum gives up; the exact sum does not
    assert check([F64MAX, F64MAX, -F64MAX]) == F64MAX
    assert same(check([F64MAX, half_ulp]), np.float64(math.inf))  # the tie goes to even: inf
    assert check([F64MAX, half_ulp, -TINY]) == F64MAX  # just below the threshold
    assert same(check([-F64MAX, -half_ulp]), np.float64(-math.inf))
    # a sum far beyond the range that comes back
    values = [F64MAX] * 3000 + [-F64MAX] * 2999 + [1e292]
    assert check(values, seed=4) == F64MAX + 1e292


def test_overflow_f32():
    half_ulp = 2.0 ** 103  # half an ulp of the largest float32
    inf = np.float32(math.inf)
    assert same(check([F32MAX, F32MAX], np.float32), inf)
    assert same(check([F32MAX, half_ulp], np.float32), inf)
    assert check([F32MAX, half_ulp, -(2.0 ** -149)], np.float32) == np.float32(F32MAX)
    assert same(check([-F32MAX, -half_ulp], np.float32), -inf)
    assert check([F32MAX] * 50 + [-F32MAX] * 49, np.float32) == np.float32(F32MAX)


def test_f32_rounds_once():
    # 1 + 2**-24 + 2**-60 is above the float32 tie between 1 and 1 + 2**-23, so it rounds up;
    # through float64 it would first round to 1 + 2**-24 (the tie), then to even: 1
    values = [1.0, 2.0 ** -24, 2.0 ** -60]
    assert all(np.float32(v) == v for v in values)
    twice = np.float32(math.fsum(values))
    assert twice == np.float32(1.0)
    want = np.float32(1.0 + 2.0 ** -23)
    assert check(values, np.float32) == want
    assert check([-(2.0**-60), -(2.0**-24), -1.0], np.float32) == -want
    assert check([2.0**-60, -(2.0**-24), -1.0], np.float32) == np.float32(-1.0)  # below the tie
    # ties near the bottom of the range (the quantum of 2**-125 is 2**-148): to even
    assert check([2.0**-125, 2.0**-149], np.float32) == np.float32(2.0**-125)
    assert check([2.0**-125 + 2.0**-148, 2.0**-149], np.float32) == np.float32(
        2.0**-125 + 2.0**-147)


def test_f32_ties_to_even_and_subnormal_rounding():
    q = 2.0 ** -149
    # sums that are not float32 values: exact halves of the subnormal quantum do not occur from
    # float32 inputs, so build ties from larger values: 1 + 2**-24 is a tie, to even: 1
    assert check([1.0, 2.0 ** -24], np.float32) == np.float32(1.0)
    assert check([1.0 + 2.0 ** -23, 2.0 ** -24], np.float32) == np.float32(1.0 + 2.0 ** -22)
    assert check([2.0 ** -126, -q], np.float32) == np.float32(2.0 ** -126 - q)
    assert check([q] * 7, np.float32) == np.float32(7 * q)


def test_f32_underflow_keeps_the_sign():
    # only float64 inputs can make a float32 sum underflow (float32 inputs are multiples of
    # 2**-149): a nonzero sum rounding to zero keeps its sign, an exact zero is +0.0
    f32 = rounder(np.float32)
    for values, want in (([-1e-300], -0.0), ([1e-300], 0.0), ([-1e-300, 1e-300], 0.0),
                         ([-(2.0**-150)], -0.0), ([-(2.0**-150), -1e-300], -(2.0**-149)),
                         ([2.0**-150, 2.0**-149], 2.0**-148)):
        assert same(f32(acc_of(values)), np.float32(want)), values
        assert same(es.exact_sum_reference(values, np.float32), np.float32(want)), values


# -- random inputs --------------------------------------------------------------------------
@SETTINGS
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), max_size=40))
def test_random_f64_full_range(values):
    check(values)


@SETTINGS
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), max_size=40))
def test_random_f32_full_range(values):
    ref = check(values, np.float32)
    exact = sum((Fraction(v) for v in values), Fraction(0))
    assert same(ref, es.round_fraction(exact, np.float32))


@SETTINGS
@given(st.lists(st.floats(width=64), max_size=20))
def test_random_f64_with_specials(values):
    check(values)


@SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.sampled_from(SIZES),
    centre=st.integers(-1000, 1000),
    spread=st.integers(0, 120),
    cancel=st.booleans(),
)
def test_random_arrays(seed, n, centre, spread, cancel):
    """Arrays with magnitudes 2**(centre +- spread): narrow spreads take the slice path, wide
    ones the integer path, and mixtures of blocks both."""
    rng = np.random.default_rng(seed)
    e = np.clip(centre + rng.integers(-spread, spread + 1, n), -1074, 1000)
    values = np.ldexp(rng.uniform(-1.0, 1.0, n), e)
    if cancel:
        values = rng.permutation(np.concatenate([values, -values[: n // 2]]))
    ref = check(values, seed=seed)
    assert same(ref, np.float64(math.fsum(values)))
    assert_same_acc(values)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.sampled_from(SIZES), spread=st.integers(0, 60))
def test_random_arrays_f32(seed, n, spread):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(n).astype(np.float32) * np.float32(2.0) ** rng.integers(
        -spread, spread + 1, n).astype(np.float32)
    check(values.astype(np.float32), np.float32, seed=seed)


# -- the slice path's plan, and block edges ---------------------------------------------------
def test_every_plan_is_taken_and_exact():
    rng = np.random.default_rng(5)
    seen = set()
    for lo, hi in ((0, 0), (-20, 10), (-60, 10), (-99, 10), (-140, 10), (-300, 10),
                   (-1020, -1000), (-1060, -1040), (1000, 1023), (-1074, -1060)):
        for n in (1, es.LANES - 1, es.LANES + 3, es.BLOCK - 1, es.BLOCK, es.BLOCK + 1):
            values = np.ldexp(rng.uniform(1.0, 2.0, n) * rng.choice([-1.0, 1.0], n),
                              rng.integers(lo, hi + 1, n))
            blk = values[: es.BLOCK]
            k, _ = es._plan(*es._range(blk))
            seen.add(int(k))
            acc = es.new()
            es.add_array(acc, values)
            want = es.exact_sum_reference(values, np.float64)
            assert same(rounder(np.float64)(acc), want), (lo, hi, n, k)
            assert_same_acc(values)
    assert seen == {0, 2, 3, 4}  # slice 1 keeps only 53 - LOG_BLOCK bits: never one slice
    assert es._plan(*es._range(np.zeros(5)))[0] == -1
    assert es._plan(*es._range(np.array([-0.0, 0.0])))[0] == -1
    assert es._plan(*es._range(np.array([1.0, math.inf])))[0] == 0
    assert es._plan(*es._range(np.array([1.0, math.nan])))[0] == 0
    assert es._plan(*es._range(np.array([2.0**-960, 2.0**-969])))[0] == 2  # the lowest sliced
    assert es._plan(*es._range(np.array([2.0**-960, 2.0**-970])))[0] == 0


def test_slice_path_at_its_limits():
    rng = np.random.default_rng(6)
    # the largest magnitudes the slice path takes, and beyond: C_1 would overflow
    for top in (1009, 1010, 1011, 1023):
        x = np.ldexp(rng.uniform(1.0, 2.0, es.BLOCK), rng.integers(top - 30, top, es.BLOCK))
        for values in (x, -x, rng.permutation(np.concatenate([x, -x[:-1]]))):
            acc = es.new()
            es.add_array(acc, values)
            assert same(rounder(np.float64)(acc), es.exact_sum_reference(values, np.float64))
    # every slice's sum at its bound: a block whose remainders entering slice k (k = 2, 3) are
    # all just below half of slice k - 1's grid, so that slice k's parts sum to about
    # 2**(LOG_BLOCK - 1 + b_(k-1)) = 2**(b_k + 53): one bit wider slices would round
    b1 = 20 + es.LOG_BLOCK - 53  # the plan of a block with 2**19 <= max |x| < 2**20
    width = 54 - es.LOG_BLOCK  # SLICE_BITS, by the argument in the module
    for k, _ in itertools.product((2, 3), range(8)):  # rounding would show in most trials
        grid = b1 - (k - 2) * width  # slice k - 1's grid
        x = 2.0 ** (grid - 1) - rng.integers(1, 1 << 20, es.BLOCK) * 2.0 ** (grid - 54)
        x[0] = 1.5 * 2.0**19
        assert es._plan(*es._range(x)) == (k + 1, b1)
        # sliced with its own plan (a guess has room above): each slice's lanes sum exactly, in
        # the module's order, and the slices add up to the block's sum
        lanes = np.zeros((es.KMAX, es.LANES))
        es._slice_block(x, k + 1, b1, lanes, np.zeros((2, es.LANES), np.int64))
        totals = []
        for j in range(k + 1):
            total = 0.0
            for v in lanes[j]:
                total += v
            assert total == math.fsum(lanes[j]), (k, j)
            totals.append(Fraction(total))
        assert sum(totals) == sum(Fraction(v) for v in x)
        # and through add_array, behind a block whose guess misses it (so its own plan is used)
        values = np.concatenate([np.ones(es.BLOCK), x])
        assert_same_acc(values)
        assert same(rounder(np.float64)(acc_of(values)), np.float64(math.fsum(values))), k
    # K slices at the widest span they take (and one binade more): a full block of the largest
    # value of its binade (its slice-1 sum reaches the bound 2**(b_1 + 53)) and, every third
    # value, one with its lowest bit at the smallest quantum the plan covers
    emax = 1042  # values below 2**20
    for k in (2, 3, 4):
        for extra in (0, 1):
            emin = emax + es.LOG_BLOCK - (k - 1) * es.SLICE_BITS - extra
            x = np.full(es.BLOCK, 2.0**20 - 2.0**-33)
            x[::3] = 2.0 ** (emin - 1023) * (1 + 2.0**-52)
            x[1::3] *= -1 if extra else 1
            want_k = k if not extra else (k + 1 if k < es.KMAX else 0)
            assert es._plan(*es._range(x))[0] == want_k
            assert_same_acc(x)
            assert same(rounder(np.float64)(acc_of(x)), np.float64(math.fsum(x))), (k, extra)


def test_guessed_plans_that_miss():
    """Each block is sliced with a plan guessed from the block before (the first from a prefix)
    and re-done when the guess does not cover it: blocks whose range moves up, down, widens or
    narrows, by a little or a lot, must all come out exact. The blocks are pairs x, -x, which
    cancel, and one probe value with a full significand at the bottom of the block's range: the
    exact sum is the probe itself, so a bit lost anywhere shows."""
    rng = np.random.default_rng(12)
    B = es.BLOCK

    def pairs(lo, hi, n):
        x = np.ldexp(rng.uniform(1.0, 2.0, n // 2), rng.integers(lo, hi + 1, n // 2))
        return np.concatenate([x, -x])

    def probe(lo):
        return math.ldexp(1.0 + int(rng.integers(0, 1 << 52) | 1) * 2.0**-52, lo)

    def probed(lo, hi, n=B):
        z = probe(lo)
        return rng.permutation(np.concatenate([pairs(lo, hi, n - 2), [z]])), z

    ranges = [(0, 0), (0, 2), (1, 3), (-3, 0), (-27, 0), (-29, 1), (-60, 0), (-70, 2), (-100, 0),
              (-150, 0), (300, 310), (-900, -890), (900, 960)]
    for i, (lo, hi) in enumerate(ranges):
        for lo2, hi2 in ranges[max(0, i - 3): i + 4]:
            second, z = probed(lo2, hi2)
            values = np.concatenate([pairs(lo, hi, B), second, pairs(lo, hi, B // 3)])
            assert rounder(np.float64)(acc_of(values)) == z, ((lo, hi), (lo2, hi2))
            assert_same_acc(values)
    # a first block whose prefix is narrower than the rest of it
    for lo, hi in ((-40, 0), (0, 40), (-80, 0)):
        rest, z = probed(lo, hi, B - es.GUESS_PREFIX)
        values = np.concatenate([pairs(0, 0, es.GUESS_PREFIX), rest, pairs(0, 0, B)])
        assert rounder(np.float64)(acc_of(values)) == z, (lo, hi)
    # the guess's own rules
    blk = np.ldexp(rng.uniform(1.0, 2.0, B), rng.integers(-20, 1, B))
    amin1, amax = es._range(blk)
    k, b1 = es._plan(amin1, amax)
    assert es._covers(k, b1, amin1, b1)
    assert not es._covers(k, b1 - 1, amin1, b1)  # the block's top is above the guess's
    assert not es._covers(k, b1 + es.SLICE_BITS, amin1, b1)  # its bottom below the guess's
    assert not es._covers(0, b1, amin1, b1)
    top = es._raise_top(k, b1, amin1)
    assert b1 < top <= b1 + es.GUESS_ROOM and es._covers(k, top, amin1, b1)


@intrinsic
def _mxcsr_swap(typingctx, new):
    """Load new (int32) into the x86 SSE control register, returning the old value."""
    if new != types.int32:
        return None

    def codegen(context, builder, sig, args):
        i32, i8p = ir.IntType(32), ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i8p])
        stmxcsr = builder.module.declare_intrinsic("llvm.x86.sse.stmxcsr", fnty=fnty)
        ldmxcsr = builder.module.declare_intrinsic("llvm.x86.sse.ldmxcsr", fnty=fnty)
        slot = builder.alloca(i32)
        builder.call(stmxcsr, [builder.bitcast(slot, i8p)])
        old = builder.load(slot)
        builder.store(args[0], slot)
        builder.call(ldmxcsr, [builder.bitcast(slot, i8p)])
        return old

    return types.int32(types.int32), codegen


@numba.njit
def _set_mxcsr(value):
    return _mxcsr_swap(np.int32(value))


@numba.njit
def _float_add(a, b):
    return a + b


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 MXCSR")
def test_exact_with_flush_to_zero_on():
    """Other code in the process may switch on flush-to-zero / denormals-are-zero (MXCSR bits
    FTZ, DAZ): the integer path reads bits and the slice path never meets a subnormal, so sums
    stay exact (ordinary float arithmetic does not)."""
    rng = np.random.default_rng(13)
    cases = []
    for lo, hi in ((-1000, -980), (-969, -940), (-1074, -1030), (-1022, -1000), (-30, 0)):
        x = np.ldexp(rng.uniform(1.0, 2.0, 5000), rng.integers(lo, hi + 1, 5000))
        z = math.ldexp(1.0 + int(rng.integers(0, 1 << 52) | 1) * 2.0**-52, max(lo, -1022))
        cases.append((rng.permutation(np.concatenate([x, -x, [z]])), z))
    cases.append((np.array([TINY] * 7 + [-(2.0**-1022)]), 7 * TINY - 2.0**-1022))
    old = _set_mxcsr(0x1F80)
    try:
        _set_mxcsr((old | 0x8040) & 0xFFC0)  # FTZ | DAZ, status flags cleared
        assert _float_add(TINY, 0.0) == 0.0  # flushed: the switch is on
        got = []
        for values, _ in cases:
            acc = es.new()
            es.add_array(acc, values)
            got.append(es.round_f64(acc))
    finally:
        _set_mxcsr(old)
    assert _float_add(TINY, 0.0) == TINY
    for g, (_, z) in zip(got, cases):
        assert same(np.float64(g), np.float64(z))


# -- accumulators: merging, normalisation, headroom -------------------------------------------
def test_merge_in_any_order_gives_the_same_bits():
    rng = np.random.default_rng(7)
    values = np.concatenate([rng.standard_normal(3000) * 10.0 ** rng.uniform(-300, 300, 3000),
                             [math.inf], rng.standard_normal(3000)])
    pieces = np.array_split(values, 9)
    accs = [acc_of(p) for p in pieces]
    results = set()
    for trial in range(6):
        order = list(range(len(accs)))
        random.Random(trial).shuffle(order)
        if trial % 2:  # a left fold
            total = es.new()
            for i in order:
                es.merge(total, accs[i])
        else:  # a balanced tree
            level = [accs[i].copy() for i in order]
            while len(level) > 1:
                nxt = []
                for i in range(0, len(level) - 1, 2):
                    es.merge(level[i], level[i + 1])
                    nxt.append(level[i])
                if len(level) % 2:
                    nxt.append(level[-1])
                level = nxt
            total = level[0]
        es.normalise(total)
        results.add(total.tobytes())
    assert len(results) == 1
    whole = acc_of(values)
    es.normalise(whole)
    assert results == {whole.tobytes()}  # the normalised form is canonical
    assert es.round_f64(whole) == math.inf


def test_elementwise_sum_of_normalised_accumulators():
    rng = np.random.default_rng(8)
    pieces = [rng.standard_normal(500) * 10.0 ** rng.uniform(-20, 300, 500) for _ in range(64)]
    accs = []
    for p in pieces:
        a = acc_of(p)
        es.normalise(a)
        assert a[es.I_HEAD] == 1
        assert np.all((a[: es.TOP] >= 0) & (a[: es.TOP] < 2**32))
        accs.append(a)
    summed = np.sum(accs, axis=0)  # what MPI_Allreduce(SUM) computes
    values = np.concatenate(pieces)
    assert same(rounder(np.float64)(summed), np.float64(math.fsum(values)))
    assert same(rounder(np.float32)(summed), es.exact_sum_reference(values, np.float32))
    merged = es.new()
    for a in accs:
        es.merge(merged, a)
    es.normalise(summed)
    assert summed.tobytes() == merged.tobytes()


def test_headroom_is_never_exceeded():
    # thousands of the largest values, one add at a time: carries are propagated in time
    rng = np.random.default_rng(9)
    values = rng.choice([F64MAX, -F64MAX, F64MAX / 3], 20000)
    acc = es.new()
    for x in values:
        es.add(acc, x)
        assert acc[es.I_HEAD] <= es.HMAX
    bound = acc[es.I_HEAD] * 2**32
    assert np.all(np.abs(acc[: es.TOP].astype(object)) <= bound)
    assert same(rounder(np.float64)(acc), es.exact_sum_reference(values, np.float64))
    # and the elementwise sum of many un-normalised accumulators, within HMAX in total
    accs = []
    for i in range(40):
        a = es.new()
        for x in values[i * 50:(i + 1) * 50]:
            es.add(a, x)
        accs.append(a)
    total = np.sum(accs, axis=0)
    assert total[es.I_HEAD] <= es.HMAX
    assert same(rounder(np.float64)(total), es.exact_sum_reference(values[:2000], np.float64))


def test_integer_path_carries_in_time():
    # 40000 values whose high parts are as large as they get (2**52, exponent field = 31 mod 32)
    # into the same chunk, on the integer path (one tiny value makes the block's span too wide)
    x = 2.0**32 * (2 - 2.0**-52)
    assert (np.float64(x).view(np.int64) >> 52) & 31 == 31
    for sign in (1.0, -1.0):
        values = np.full(40000, sign * x)
        values[17] = 1e-300
        assert es._plan(*es._range(values[: es.BLOCK]))[0] == 0
        want = np.float64(math.fsum(values))
        assert same(rounder(np.float64)(acc_of(values)), want)
        acc = es.new()
        es._add_int(acc, values)  # the integer path on more than a block
        assert same(rounder(np.float64)(acc), want)


def test_accumulators_are_not_changed_by_rounding_or_merge():
    a = acc_of([1.5, 2.5, -1e300])
    b = acc_of([1e-300])
    a0, b0 = a.copy(), b.copy()
    es.round_f64(a)
    es.round_f32(a)
    assert a.tobytes() == a0.tobytes()
    es.merge(a, b)
    assert b.tobytes() == b0.tobytes()


# -- sum_slots -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sum_slots_columns_layouts_and_threads(dtype):
    rng = np.random.default_rng(10)
    n = 70000
    vals = (rng.standard_normal((n, 3)) * 10.0 ** rng.uniform(-6, 6, (n, 3))).astype(dtype)
    vals[5, 2] = -np.inf
    rnd = rounder(dtype)
    want = [es.exact_sum_reference(vals[:, c], dtype) for c in range(3)]
    assert same(want[2], np.asarray(-np.inf, dtype))
    views = {"C": vals, "strided": np.repeat(vals, 2, axis=0)[::2]}
    if dtype == np.float64:  # (copied C-contiguous: one compilation per dtype)
        views["F"] = np.asfortranarray(vals)
    states = set()
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(threads)
        try:
            for name, v in views.items():
                for nb in (0, 1, 5, 64):
                    acc = es.new_many(3)
                    es.sum_slots(v, acc, nb)
                    states.add(acc.tobytes())
                    for c in range(3):
                        assert same(rnd(acc[c]), want[c]), (threads, name, nb, c)
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    assert len(states) == 1
    # sum_slots adds into out_acc: the Global's value before the launch
    g = float(np.float32(1e30))
    acc = es.new_many(3)
    for c in range(3):
        es.add(acc[c], g)
    es.sum_slots(vals, acc, 0)
    for c in range(2):
        assert same(rnd(acc[c]), es.exact_sum_reference(list(vals[:, c]) + [g], dtype))


def test_sum_slots_single_column_and_empty():
    rng = np.random.default_rng(11)
    x = rng.standard_normal(100003) * 10.0 ** rng.uniform(-5, 5, 100003)
    acc = es.new_many(1)
    es.sum_slots(x.reshape(-1, 1), acc)
    assert same(rounder(np.float64)(acc[0]), np.float64(math.fsum(x)))
    acc = es.new_many(2)
    es.sum_slots(np.zeros((0, 2)), acc, 0)
    assert same(rounder(np.float64)(acc[1]), np.float64(0.0))


# -- the reference's own rounding ------------------------------------------------------------
@SETTINGS
@given(st.integers(-(10**400), 10**400), st.integers(1, 10**400))
def test_round_fraction_matches_float_division(num, den):
    q = Fraction(num, den)
    try:
        want = np.float64(num / den)  # CPython's int / int: correctly rounded
    except OverflowError:
        want = np.float64(math.inf if num > 0 else -math.inf)
    assert same(es.round_fraction(q, np.float64), want)


@SETTINGS
@given(st.floats(allow_nan=False, width=64))
def test_round_fraction_f32_matches_one_numpy_rounding(x):
    assume(math.isfinite(x))
    # a float64 has at most 53 bits, so numpy's float64 -> float32 conversion rounds only once
    with np.errstate(over="ignore"):
        want = np.float32(x)
    got = es.round_fraction(Fraction(x), np.float32)
    if x == 0:
        want = np.float32(0.0)  # exact zeros are +0.0 by the sum's rule
    assert same(got, want)


# -- a Global's fold of few slots, before its compiled fold exists ---------------------------
@SETTINGS
@given(st.lists(st.tuples(st.integers(-2**12, 2**12), st.integers(-60, 4)), max_size=60),
       st.integers(-2**12, 2**12), st.integers(1, 3))
def test_few_slots_summed_by_fsum_give_the_compiled_folds_bits(terms, init, ncomp):
    """Small dyadic values (ties to even are common among them) and cancellations: the host
    path `fsum_columns` gives `fold_serial_f64`'s bits, column by column."""
    values = np.array([m * 2.0**e for m, e in terms] or [0.0])
    vals = np.stack([np.roll(values, c) * (-1.0) ** c for c in range(ncomp)], axis=1)
    g = np.array([init * 2.0**-3] * ncomp)
    want = g.copy()
    es.fold_serial_f64(want, vals)
    got = es.fsum_columns(g, vals)
    assert got is not None and np.array(got).tobytes() == want.tobytes()


def test_the_host_path_leaves_specials_and_overflow_to_the_compiled_fold():
    for column in ([1.0, math.inf], [math.nan], [math.inf, -math.inf],
                   [F64MAX, F64MAX, -F64MAX]):
        assert es.fsum_columns(np.zeros(1), np.array(column).reshape(-1, 1)) is None
    fold = es.fold_of(g := np.zeros(1), np.array([F64MAX, F64MAX, -F64MAX]).reshape(-1, 1))
    fold.compiled, fold.ready = False, lambda: False  # as while it compiles: fsum first
    fold()
    assert same(g[0], np.float64(F64MAX))
    fold = es.fold_of(g := np.array([0.5]), np.array([[0.1], [0.2], [-0.3]]))
    fold.compiled, fold.ready = False, lambda: False
    fold()
    assert same(g[0], np.float64(math.fsum([0.5, 0.1, 0.2, -0.3])))


def test_the_exact_folds_compilation_comes_after_the_kernels(monkeypatch):
    """The first undecided sum has the background worker compile the exact fold after the
    kernels' parallel variants given to it (its cost: `AFTER_KERNELS`; math.fsum gives the
    bits meanwhile): compiled first, it held smoke's whole cold run in tier 0."""
    from relsim.runtime.host import compile_jobs
    given = []
    monkeypatch.setattr(compile_jobs, "helper_in_background",
                        lambda fn, sig, cost=1: given.append((fn, cost)) or (False, lambda: 0))
    fold = es.fold_of(g := np.array([0.5]), np.array([[0.1], [0.2], [-0.3]]))
    fold()
    assert given == [(es.fold_serial_f64, compile_jobs.AFTER_KERNELS)]
    assert same(g[0], np.float64(math.fsum([0.5, 0.1, 0.2, -0.3])))


@SETTINGS
@given(st.lists(st.floats(width=64), max_size=30), st.floats(width=64), st.integers(0, 3),
       st.sampled_from([np.float64, np.float32]))
def test_round_merged_is_the_exact_sum_of_the_pieces_and_the_start(values, start, cut, dtype):
    """Ranks' accumulators (normalised or not) and the Global's value before the launch,
    rounded once in Python: the reference's bits, specials included."""
    if dtype == np.float32:
        with np.errstate(over="ignore"):
            values = [float(np.float32(v)) for v in values]
            start = float(np.float32(start))
    pieces = [values[:cut], values[cut:]]
    accs = []
    for i, piece in enumerate(pieces):
        acc = es.new()
        for v in piece:
            es.add(acc, v)
        if i:
            es.normalise(acc)
        accs.append(acc)
    want = es.exact_sum_reference([start] + values, dtype)
    assert same(es.round_merged(accs, start, dtype), want)


@SETTINGS
@given(st.lists(st.floats(width=64), max_size=30), st.floats(width=64), st.integers(0, 3),
       st.sampled_from([np.float64, np.float32]))
def test_exact_parts_add_up_to_the_sum_and_make_the_accumulator(values, start, cut, dtype):
    """A rank's few slots as floats adding up to their exact sum (math.fsum only), and from
    them, in Python, the accumulator `add` and `normalise` make: merged with another rank's
    and the Global's value, the reference's bits; values with specials (or a partial sum
    overflowing) give None, for the compiled path."""
    if dtype == np.float32:
        with np.errstate(over="ignore"):
            values = [float(np.float32(v)) for v in values]
            start = float(np.float32(start))
    mine, other = values[:cut], values[cut:]
    parts = es.exact_parts(mine)
    if parts is None:
        assert not all(map(math.isfinite, mine)) or _overflows(mine)
        return
    assert sum(map(Fraction, parts), Fraction(0)) == sum(map(Fraction, mine), Fraction(0))
    assert all(p != 0.0 for p in parts) and len(parts) <= 64
    made, added, acc = es.new(), es.new(), es.new()
    es.acc_of_parts(parts, made)
    for v in mine:
        es.add(added, v)
    es.normalise(added)
    assert (made == added).all()  # (the normalised form is canonical)
    for v in other:
        es.add(acc, v)
    want = es.exact_sum_reference([start] + values, dtype)
    assert same(es.round_merged([acc, made], start, dtype), want)


def _overflows(values) -> bool:
    try:
        math.fsum(values)
    except OverflowError:
        return True
    return False


def test_exact_parts_of_a_wide_spread_and_of_a_tie():
    """Magnitudes from 1e-300 to 1e300 (one part per ~53 bits of the exact sum's span) and
    2**53 + 1 (no float holds it: two parts)."""
    rng = np.random.default_rng(3)
    for _ in range(50):
        values = (rng.standard_normal(100) * 10.0 ** rng.integers(-300, 300, 100)).tolist()
        parts = es.exact_parts(values)
        assert sum(map(Fraction, parts)) == sum(map(Fraction, values))
    assert es.exact_parts([2.0 ** 53, 1.0]) == [2.0 ** 53, 1.0]
    assert es.exact_parts([1.0, -1.0]) == [] and es.exact_parts([]) == []
    assert es.exact_parts([1e300, 1e-300], most=1) is None  # (more parts than allowed)


def test_chunks_become_the_integer_they_stand_for_at_any_sign_and_size():
    """A merge's accumulators are read as sum(chunk[j] * 2**(32*j)) through 32-bit digits:
    chunks at the int64 extremes, negative, zero and several accumulators at once."""
    rng = np.random.default_rng(5)
    extremes = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1, 0, 1,
                         -(1 << 32), (1 << 32) - 1, 1 << 32], dtype=np.int64)
    for k in (1, 2, 3):
        for trial in range(50):
            chunks = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max,
                                  size=(k, es.NCHUNK), dtype=np.int64, endpoint=True)
            if trial % 2:
                chunks = rng.choice(extremes, size=(k, es.NCHUNK))
            want = sum(int(chunks[i, j]) << (32 * j) for i in range(k) for j in range(es.NCHUNK))
            assert es._chunks_value(chunks) == want
