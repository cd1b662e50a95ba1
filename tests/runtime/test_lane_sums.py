"""float64 Global sums accumulated in the launch's loop (cpu: `folds/lane_sums.py`,
`backends/cpu/lanes.py`): the same correctly rounded exact sum as the slot path, the check
undecided only where it must be (then the exact path: the slots, written by the same run or by
running a kernel with no other effect again), and never a second run of a kernel that writes."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import relsim as rs
from relsim.runtime.backends.cpu import lanes
from relsim.runtime.folds import lane_sums

N = 203  # rows: more than a group of lanes, not a multiple of one
CONFIGS = [rs.Config(target="cpu", threads=t, parallel_threshold=p)
           for t in (1, 2) for p in (1, 10 ** 9)]
IDS = ["1-thread-parallel", "1-thread-serial", "2-thread-parallel", "2-thread-serial"]

R = rs.Relation("lanes_R", N)
R.new_field("x", rs.f64)
R.new_field("y", rs.f64)
R.new_field("runs", rs.i64)
total = rs.Global(rs.f64, 0.0)
vec = rs.Global(rs.vec(2, rs.f64), (0.0, 0.0))
small = rs.Global(rs.f64, 0.0)
odd = R.subset("odd", np.arange(1, N, 2))


@rs.kernel
def pure(r):
    total += r.x


@rs.kernel
def writes(r):
    r.runs = r.runs + 1  # run twice, this would count 2
    total += r.x


@rs.kernel
def sites(r):
    if r.x > 0.0:
        total += r.x
    for k in rs.static(range(2)):
        vec += (r.x * k, -r.x)
    small += 0.5 * r.y


@rs.kernel
def picks(r):
    v = rs.vec(3, rs.f64)(1.0, 2.0, 3.0)
    total += v[r.runs]  # an index out of range in a row fails the launch


def _run(kernel, x, init, cfg, over=R):
    R.x.load(x)
    R.y.load(np.zeros(N))
    R.runs.load(np.zeros(N, dtype=np.int64))
    total.value = init
    before = lanes.EXACT_PATH["count"]
    over.foreach(kernel, cfg)
    return total.value, lanes.EXACT_PATH["count"] - before


def _fsum(values, init=0.0):
    return math.fsum([init] + list(values))


def _padded(values):
    x = np.zeros(N)
    x[:len(values)] = values
    return x


def _same(a, b):
    return np.float64(a).tobytes() == np.float64(b).tobytes()


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_an_ordinary_sum_is_decided_in_the_loop(cfg):
    x = np.random.default_rng(3).standard_normal(N)
    value, exact = _run(pure, x, 0.5, cfg)
    assert _same(value, _fsum(x, 0.5))
    assert exact == 0


# sums the check must leave to the exact path, and their correctly rounded values
UNDECIDED = {
    "a tie, to even": ([1.0, 2.0 ** -53], 0.0, 1.0),
    "a tie, away to even": ([1.0 + 2.0 ** -52, 2.0 ** -53], 0.0, 1.0 + 2.0 ** -51),
    "just above a tie": ([1.0, 2.0 ** -53, 2.0 ** -160], 0.0, 1.0 + 2.0 ** -52),
    "total cancellation but a tiny rest": ([1e300, 2.0 ** -1074, -1e300], 0.0, 2.0 ** -1074),
    "an infinity": ([1.0, math.inf, 2.0], 0.0, math.inf),
    "a NaN": ([1.0, math.nan], 0.0, math.nan),
    "overflow of a partial sum only": ([1.7e308, 1.7e308, -1.7e308], 0.0, 1.7e308),
    "a NaN value before the launch": ([1.0], math.nan, math.nan),
}


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
@pytest.mark.parametrize("case", sorted(UNDECIDED))
@pytest.mark.parametrize("kernel", [pure, writes], ids=["pure", "writes"])
def test_what_the_check_cannot_decide_takes_the_exact_path(case, kernel, cfg):
    values, init, want = UNDECIDED[case]
    value, exact = _run(kernel, _padded(values), init, cfg)
    assert _same(value, want), (value, want)
    assert exact == 1
    if kernel is writes:  # the kernel that writes ran once: its slots were written then
        assert (R.runs.numpy() == 1).all()


def test_an_exact_zero_is_positive():
    cfg = CONFIGS[0]
    value, exact = _run(pure, _padded([-0.0, -0.0]), -0.0, cfg)
    assert _same(value, 0.0) and exact == 0
    value, exact = _run(pure, _padded([3.5, -3.5]), 0.0, cfg)
    assert _same(value, 0.0) and exact == 0


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_sites_components_conditions_and_subsets(cfg):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(N)
    R.x.load(x)
    R.y.load(rng.standard_normal(N))
    total.value, vec.value, small.value = 1.0, (2.0, -3.0), 0.0
    R.foreach(sites, cfg)
    assert _same(total.value, _fsum(x[x > 0], 1.0))
    assert _same(vec.value[0], _fsum(x, 2.0))
    assert _same(vec.value[1], _fsum(np.concatenate([-x, -x]), -3.0))
    assert _same(small.value, _fsum(0.5 * R.y.numpy()))
    total.value = 0.0
    odd.foreach(pure, cfg)
    assert _same(total.value, _fsum(x[1::2]))


FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)
# values near one another's rounding boundaries: a base, and multiples of its half ulp
NEAR_TIES = st.tuples(st.floats(1.0, 2.0), st.lists(st.integers(-4, 4), max_size=6)).map(
    lambda t: [t[0]] + [k * 2.0 ** -53 * t[0] for k in t[1]])


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(values=st.one_of(st.lists(FINITE, max_size=N), NEAR_TIES), init=FINITE,
       seed=st.integers(0, 3))
def test_every_sum_is_the_correctly_rounded_exact_sum(values, init, seed):
    cfg = CONFIGS[seed]
    x = np.random.default_rng(seed).permutation(_padded(values))
    with np.errstate(over="ignore", invalid="ignore"):
        value, _ = _run(pure, x, init, cfg)
    try:
        want = _fsum(x, init)
    except OverflowError:  # fsum refuses an overflowing partial sum: the exact module decides
        from relsim.runtime.folds.exact_sum import exact_sum_reference
        want = exact_sum_reference([init] + list(x), np.float64)
    assert _same(value, want), (value, want)


@pytest.mark.parametrize("n", [0, 1, 15, 17, 8192 * 3 + 5])
def test_chunks_and_depth_cover_every_row(n):
    nch = lane_sums.chunks(n)
    assert 1 <= nch <= lane_sums.MAX_CHUNKS
    assert lane_sums.depth_bound(n, 2, nch) >= 2 * n + nch * lane_sums.LANES + lane_sums.LANES


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_a_failed_launch_leaves_the_global_as_it_was(cfg):
    runs = np.zeros(N, dtype=np.int64)
    R.runs.load(runs)
    total.value = 5.0
    before = lanes.EXACT_PATH["count"]
    R.foreach(picks, cfg)
    assert total.value == 5.0 + N and lanes.EXACT_PATH["count"] == before  # (in the loop)
    runs[N // 2] = 7
    R.runs.load(runs)
    with pytest.raises(rs.KernelRuntimeError, match="index out of range at line"):
        R.foreach(picks, cfg)
    assert total.value == 5.0 + N


def test_a_pure_kernels_rerun_in_tier_0_calls_its_serial_part_function(tmp_path):
    """A kernel whose only effect is its sums runs again with its slots where the lanes leave
    a sum undecided: in tier 0 through its serial part function (not the plain dispatcher
    tier 0 runs), the code an MPI rank's serial launch calls, so that a first `mpiexec` run
    finds it compiled (md's compiled its momentum kernel's slot variant); the same bits."""
    from relsim.runtime import execute
    from relsim.runtime.backends.cpu import parts
    cfg = rs.Config(target="cpu", parallel_threshold=1, cache_dir=str(tmp_path))
    V = rs.Relation("V", 3000)
    half = np.random.default_rng(4).standard_normal(1500)
    V.new_field("x", rs.f64).load(np.concatenate([half, -half[::-1]]))  # (cancels exactly)
    s = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def total(v):
        s += v.x

    exe = execute.executable(total, V, cfg)
    exe.set_tier0(True)
    before = lanes.EXACT_PATH["count"]
    V.foreach(total, cfg)
    rerun, _ = exe.bindings[None].lanes.rerun
    assert isinstance(rerun, parts.Parts) and rerun.serial
    assert lanes.EXACT_PATH["count"] == before + 1 and s.value == 0.0
