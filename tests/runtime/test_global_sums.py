"""Float Global sums are exact: the value before the launch plus every contribution, summed
exactly and rounded once (math.fsum's value), on every target, thread count and row order.
Float min/max/argmin/argmax: a NaN makes the result NaN (the lowest row's), ties go to the
lowest row."""
import math

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import relsim as rs
from relsim.runtime.folds.exact_sum import exact_sum_reference
from tests.conftest import SLOW_TARGETS

N = 257  # rows; drawn arrays are padded with zeros, which change no exact sum
SETTINGS = dict(max_examples=int(__import__("os").environ.get("RELSIM_SUM_EXAMPLES", "40")),
                deadline=None, suppress_health_check=list(HealthCheck))


def _configs():
    """Every target; cpu in its parallel variant on 1 and on 2 threads."""
    out = []
    for t in rs.targets():
        if t == "cpu":
            for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
                out.append(rs.Config(target=t, parallel_threshold=1, threads=threads))
        else:
            out.append(rs.Config(target=t))
    return out


CONFIGS = _configs()


class Sums:
    """One relation with f64/f32 inputs and the kernels summing them into Globals."""

    def __init__(self):
        self.R = rs.Relation("R", N)
        self.R.new_field("x", rs.f64)
        self.R.new_field("xf", rs.f32)
        self.total = total = rs.Global(rs.f64, 0.0)
        self.t32 = t32 = rs.Global(rs.f32, 0.0)
        self.vec = vec = rs.Global(rs.vec(3, rs.f64), (0.0, 0.0, 0.0))

        @rs.kernel
        def add_all(r):
            total += r.x
            t32 += r.xf
            vec += (r.x, -r.x, r.x * 0.5)

        @rs.kernel
        def subtract(r):
            total -= r.x

        self.add_all, self.subtract = add_all, subtract

    def run(self, x, xf, init, cfg, kernel=None):
        self.R.x.load(x)
        self.R.xf.load(xf)
        with np.errstate(over="ignore"):
            self.total.value, self.t32.value = init, np.float32(init)
        self.vec.value = (init, 0.0, -0.0)
        self.R.foreach(kernel or self.add_all, cfg)
        return (np.float64(self.total.value), np.float32(self.t32.value),
                np.array(self.vec.value))


SUMS = Sums()


def _pad(values):
    x = np.zeros(N)
    x[:len(values)] = values
    return x


def _bits(a):
    return np.asarray(a).tobytes()


finite64 = st.floats(allow_nan=False, allow_infinity=False, width=64)
wide = st.builds(lambda m, e: math.ldexp(m, e), st.floats(-1.0, 1.0), st.integers(-1074, 1023))
cancelling = st.lists(st.sampled_from([1e16, 1.0, -1e16, 3.0, -1.0, 2.0 ** -1074, 1e308,
                                       -1e308, 5e-324, -0.0]), max_size=N)


@settings(**SETTINGS)
@given(values=st.one_of(st.lists(finite64, max_size=N), st.lists(wide, max_size=N), cancelling),
       init=st.sampled_from([0.0, -0.0, 1.5, 1e300]), seed=st.integers(0, 2 ** 32 - 1))
def test_f64_and_vector_sums_are_fsum_on_every_target_and_row_order(values, init, seed):
    x = _pad(values)
    with np.errstate(over="ignore"):  # huge f64 values become f32 infinities
        xf = _pad(np.asarray(values, dtype=np.float64).astype(np.float32))
        init32 = np.float32(init)
    want = exact_sum_reference([init, *x], np.float64)
    try:
        fsum = math.fsum([init, *x])
        assert _bits(want) == _bits(np.float64(fsum))
    except OverflowError:  # fsum raises where a partial sum overflows; the exact sum does not
        pass
    want32 = exact_sum_reference([init32, *xf], np.float32)
    want_vec = [want, exact_sum_reference([0.0, *(-x)], np.float64),
                exact_sum_reference([-0.0, *(x * 0.5)], np.float64)]
    perm = np.random.default_rng(seed).permutation(N)
    for cfg in CONFIGS:
        for order in (slice(None), perm):
            got, got32, got_vec = SUMS.run(x[order], xf[order], init, cfg)
            assert _bits(got) == _bits(want), (cfg, got, want)
            assert _bits(got32) == _bits(want32), (cfg, got32, want32)
            assert _bits(got_vec) == _bits(np.array(want_vec)), (cfg, got_vec, want_vec)


def test_heavy_cancellation_keeps_every_unit():
    x = _pad([1e16, 1.0, -1e16, 3.0, 1.0, 1e16, -1e16])
    for cfg in CONFIGS:
        got, got32, _ = SUMS.run(x, x.astype(np.float32), 0.0, cfg)
        assert got == 5.0  # a left-to-right sum gives 4.0
        got, _, _ = SUMS.run(x, x.astype(np.float32), 0.0, cfg, SUMS.subtract)
        assert got == -5.0


def test_an_f32_sum_is_rounded_once():
    # 1 + 2**-24 + 2**-60: the exact sum is just above the f32 tie 1 + 2**-24, so it rounds up;
    # rounding to f64 first lands on the tie itself, which then rounds to even (1.0)
    xf = np.zeros(N, dtype=np.float32)
    xf[:3] = [1.0, 2.0 ** -24, 2.0 ** -60]
    assert np.float32(math.fsum(xf.astype(np.float64))) == np.float32(1.0)
    for cfg in CONFIGS:
        _, got32, _ = SUMS.run(np.zeros(N), xf, 0.0, cfg)
        assert got32 == np.float32(1.0) + np.float32(2.0 ** -23)


@pytest.mark.parametrize("values,want", [
    ([math.inf, 1.0], math.inf), ([-math.inf, 1e308, 1e308], -math.inf),
    ([math.inf, -math.inf], math.nan), ([math.nan, 1.0], math.nan),
    ([1e308, 1e308], math.inf), ([1e308, 1e308, -1e308], 1e308),
    ([-0.0, -0.0], 0.0), ([5e-324, -5e-324, 5e-324], 5e-324),
], ids=str)
def test_special_values_follow_the_exact_sum(values, want):
    x = _pad(values)
    for cfg in CONFIGS:
        with np.errstate(all="ignore"):
            got, _, _ = SUMS.run(x, x.astype(np.float32), -0.0, cfg)
        if math.isnan(want):
            assert math.isnan(got), cfg
        else:
            assert _bits(got) == _bits(np.float64(want)), (cfg, got)


def test_a_sum_over_many_blocks_of_slots_is_exact_and_order_free():
    # several blocks of slots, summed in parallel and merged; on the CUDA simulator (8 threads
    # a block) 4,096 rows are 512 blocks already, and 300,000 took 38 s a launch
    for n, targets in ((300_000, lambda t: t not in SLOW_TARGETS),
                       (4_096, lambda t: t in SLOW_TARGETS)):
        rng = np.random.default_rng(5)
        x = rng.standard_normal(n) * 10.0 ** rng.uniform(-200, 200, n)
        R = rs.Relation("R", n)
        R.new_field("x", rs.f64)
        total = rs.Global(rs.f64, 0.25)

        @rs.kernel
        def add(r):
            total += r.x

        want = math.fsum([0.25, *x])
        for cfg in CONFIGS:
            if cfg.target == "interp" or not targets(cfg.target):
                continue
            for order in (slice(None), rng.permutation(n)):
                R.x.load(x[order])
                total.value = 0.25
                R.foreach(add, cfg)
                assert total.value == want, (cfg, n)


MINMAX = st.lists(st.sampled_from([1.0, -2.0, 3.5, -0.0, 0.0, math.inf, -math.inf, math.nan]),
                  min_size=1, max_size=12)


@settings(**SETTINGS)
@given(values=MINMAX, seed=st.integers(0, 2 ** 32 - 1))
def test_min_max_and_arg_reductions_propagate_nan_and_tie_to_the_lowest_row(values, seed):
    R = rs.Relation("R", len(values))
    R.new_field("x", rs.f64)
    lo, hi = rs.Global(rs.f64, math.inf), rs.Global(rs.f64, -math.inf)
    amin = rs.Global(rs.f64, math.inf)

    @rs.kernel
    def extremes(r):
        rs.reduce_min(lo, r.x)
        hi = max(hi, r.x)
        rs.reduce_argmin(amin, r.x)

    x = np.array(values)
    nan = np.isnan(x)
    perm = np.random.default_rng(seed).permutation(len(x))
    for cfg in CONFIGS:
        for xs in (x, x[perm]):
            R.x.load(xs)
            lo.value, hi.value, amin.value = math.inf, -math.inf, math.inf
            R.foreach(extremes, cfg)
            isnan = np.isnan(xs)
            if nan.any():  # any NaN: NaN, at the lowest row holding one
                assert math.isnan(lo.value) and math.isnan(hi.value)
                assert math.isnan(amin.value) and amin.row == int(np.argmax(isnan))
            else:
                assert lo.value == xs.min() and hi.value == xs.max()
                first = int(np.flatnonzero(xs == xs.min())[0]) if xs.min() < math.inf else -1
                assert amin.value == xs.min() and amin.row == first


@pytest.mark.parametrize("config", _configs() + [rs.Config(target="cpu")],
                         ids=lambda c: f"{c.target}-{c.threads}-{c.parallel_threshold}")
def test_launches_reducing_into_one_global_add_up_with_no_read_between(config):
    """A kernel folding its Global sum later (slots, left pending because it also reduces into
    a field through keys) then one summing in its loop (lanes) or per chunk: the second starts
    from the first's folded value (the lanes once replaced the pending fold)."""
    rng = np.random.default_rng(0)
    V = rs.Relation("V", 7)
    V.new_field("a", rs.f64).load(rng.random(7))
    V.new_field("acc", rs.f64)
    E = rs.Relation("E", 12)
    E.new_key_field("head", V, values=rng.integers(0, 7, 12))
    E.new_key_field("tail", V, values=rng.integers(0, 7, 12))
    total, top, count = rs.Global(rs.f64, 0.5), rs.Global(rs.f64, -1.0), rs.Global(rs.i64, 3)

    @rs.kernel
    def edges(e):
        e.head.acc += e.tail.a
        total += 2.0 * e.tail.a
        top = max(top, e.tail.a + 1.0)  # noqa: F841 (a captured Global)
        count += 1

    @rs.kernel
    def vertices(v):
        total += v.a
        top = max(top, v.a)  # noqa: F841
        count += 2

    for _ in range(2):
        E.foreach(edges, config)
        V.foreach(vertices, config)
    a, tail = V.a.numpy(), V.a.numpy()[E.tail.numpy()]
    assert total.value == math.fsum([0.5, *(2.0 * tail), *(2.0 * tail), *a, *a])
    assert top.value == max(tail.max() + 1.0, a.max()) and count.value == 3 + 2 * (12 + 14)
