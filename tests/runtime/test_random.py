"""Counter-based random numbers (`rs.uniform`, `rs.normal`; `relsim/philox.py`): Philox4x32
against the published known answers, the documented layout of a draw's inputs, the same bits on
every target and thread count, over subsets and through keys, and sane statistics."""
import math

import numba
import numpy as np
import pytest

import relsim as rs
from relsim import philox
from tests.conftest import TARGETS

# the target tests here are tiny: they run on the cuda target too (tests/conftest.py)
pytestmark = pytest.mark.device_sized

# Random123's kat_vectors for philox4x32 (ctr[4], key[2] -> out[4]), 7 and 10 rounds
KAT = [
    (7, (0, 0, 0, 0), (0, 0), (0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48)),
    (7, (0xffffffff,) * 4, (0xffffffff,) * 2, (0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662)),
    (7, (0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a)),
    (10, (0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    (10, (0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    (10, (0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


@numba.njit
def _compiled_block(c0, c1, c2, c3, k0, k1, rounds):
    return philox.philox4x32(c0, c1, c2, c3, k0, k1, rounds)


@pytest.mark.parametrize("rounds, ctr, key, out", KAT)
def test_philox4x32_known_answers(rounds, ctr, key, out):
    words = [np.uint64(w) for w in ctr + key]
    assert [int(x) for x in philox.philox4x32(*words, rounds)] == list(out)
    assert [int(x) for x in _compiled_block(*words, rounds)] == list(out)


# The layout (relsim/philox.py): key = (p mod 2**32, p div 2**32), ctr = (c0, c1, c2, seed);
# the three 10-round vectors above as draws: (p, c0, c1, c2, seed) -> the block's words
LAYOUT = [((p1 << 32 | p0) - (1 << 64 if p1 >> 31 else 0), c0, c1, c2, seed, out)
          for rounds, (c0, c1, c2, seed), (p0, p1), out in KAT if rounds == 10]


def _unit(lo, hi):  # the top 53 bits of hi:lo, times 2**-53 (written out independently)
    return ((hi << 32 | lo) >> 11) / 2.0 ** 53


def _expected(name, out):
    if name == "uniform":
        return _unit(out[0], out[1])
    u1, u2 = 1.0 - _unit(out[0], out[1]), _unit(out[2], out[3])
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@pytest.mark.parametrize("name", ["uniform", "normal"])
def test_draws_are_the_documented_philox_block(name):
    fn = getattr(rs, name)
    for p, c0, c1, c2, seed, out in LAYOUT:
        got = fn(p, c0, c1, c2, seed=seed)
        assert np.float64(got).view(np.uint64) == np.float64(_expected(name, out)).view(
            np.uint64)
    assert LAYOUT[1][0] == -1  # p = 0xffff...ffff: negative integers are taken as their 64 bits


def test_the_documented_draws_in_kernels_on_every_target():
    """The same known draws computed in a kernel: p an integer constant, counters and the seed
    from fields, one row per vector."""
    R = rs.Relation("R", len(LAYOUT))
    for j, what in enumerate(("c0", "c1", "c2", "seed")):
        R.new_field(what, rs.i64).load(np.array([v[1 + j] for v in LAYOUT]))
    R.new_field("u", rs.f64)
    R.new_field("z", rs.f64)
    p0, p1, p2 = (v[0] for v in LAYOUT)

    @rs.kernel
    def known(r):
        p = p0
        if r.c0 != 0:
            p = p1 if r.c0 == 0xffffffff else p2
        r.u = rs.uniform(p, r.c0, r.c1, r.c2, seed=r.seed)
        r.z = rs.normal(p, r.c0, r.c1, r.c2, seed=r.seed)

    want_u = np.array([_expected("uniform", v[5]) for v in LAYOUT])
    want_z = np.array([_expected("normal", v[5]) for v in LAYOUT])
    for t in TARGETS:
        R.foreach(known, rs.Config(target=t, parallel_threshold=1))
        assert np.array_equal(R.u.numpy().view(np.uint64), want_u.view(np.uint64)), t
        assert np.array_equal(R.z.numpy().view(np.uint64), want_z.view(np.uint64)), t


def test_box_muller_never_takes_log_of_zero():
    top = np.uint64(0xffffffff)
    zero = np.uint64(0)
    # the largest 53-bit draw: u1 = 2**-53, the longest tail there is
    assert philox.gaussian(top, top, zero, zero) == math.sqrt(106 * math.log(2.0))
    # the smallest: u1 = 1, z = 0
    assert philox.gaussian(zero, zero, zero, zero) == 0.0
    assert philox.unit(top, top) == 1.0 - 2.0 ** -53


N = 4000


def _particles():
    R = rs.Relation("P", N)
    R.new_field("stream", rs.i32).load((np.arange(N) % 5).astype(np.int32))
    for f in ("u", "v", "z"):
        R.new_field(f, rs.f64)
    return R


def _run_draws(R, cfg, step, seed):
    @rs.kernel
    def draws(r):
        r.u = rs.uniform(r, step, r.stream)
        r.v = rs.uniform(r, step, r.stream, 1, seed=seed)
        r.z = rs.normal(r, step, r.stream + 7, seed=seed)

    R.foreach(draws, cfg)
    return [R.field(f).numpy().copy() for f in ("u", "v", "z")]


def _same_bits(a, b):
    return all(np.array_equal(x.view(np.uint64), y.view(np.uint64)) for x, y in zip(a, b))


def test_same_bits_on_every_target_and_as_on_the_host(target):
    """cpu runs in parallel (parallel_threshold=1); counters and the seed are run-time values."""
    step, seed = rs.Global(rs.i64, 12), rs.Global(rs.i64, 0xfeedbeef)
    got = _run_draws(_particles(), target, step, seed)
    want = _run_draws(_particles(), rs.Config(target="interp"), step, seed)
    assert _same_bits(got, want)
    rows, stream = np.arange(N), np.arange(N) % 5
    host = [rs.uniform(rows, 12, stream), rs.uniform(rows, 12, stream, 1, seed=0xfeedbeef),
            rs.normal(rows, 12, stream + 7, seed=0xfeedbeef)]
    assert _same_bits(got, host)


@pytest.mark.skipif("cpu" not in TARGETS, reason="the cpu target is not registered")
def test_thread_count_does_not_change_the_bits():
    step, seed = rs.Global(rs.i64, 3), rs.Global(rs.i64, 99)
    results = []
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            rs.configure(threads=threads)
            results.append(_run_draws(_particles(), rs.Config(target="cpu", parallel_threshold=1),
                                      step, seed))
    finally:
        rs.configure(threads=None)
    assert _same_bits(results[0], results[1])


def test_a_subset_draws_for_the_relation_rows_and_a_key_for_its_row(target):
    """Over a subset, the kernel's own key is its relation row (not its position in the
    subset); a key into another relation draws for that relation's row."""
    V = rs.Relation("V", 50)
    E = rs.Relation("E", 40)
    heads = (np.arange(40) * 7 + 3) % 50
    E.new_key_field("head", V).load(heads)
    E.new_field("h", rs.f64)
    V.new_field("u", rs.f64).fill(-1.0)
    odd = V.subset("odd", np.arange(1, 50, 2))

    @rs.kernel
    def own(v):
        v.u = rs.uniform(v, 5, seed=1)

    @rs.kernel
    def through(e):
        e.h = rs.normal(e.head, 5, seed=1)

    odd.foreach(own, target)
    want = np.full(50, -1.0)
    want[1::2] = rs.uniform(np.arange(1, 50, 2), 5, seed=1)
    assert np.array_equal(V.u.numpy().view(np.uint64), want.view(np.uint64))
    E.foreach(through, target)
    assert np.array_equal(E.h.numpy().view(np.uint64),
                          rs.normal(heads, 5, seed=1).view(np.uint64))


def test_statistics_of_1e5_draws():
    """Generous bounds (many standard errors): a wrong transform or a broken block fails them."""
    n = 100_000
    R = rs.Relation("S", n)
    for f in ("u", "u2", "w", "z"):
        R.new_field(f, rs.f64)

    @rs.kernel
    def draw(r):
        r.u = rs.uniform(r, 0)
        r.u2 = rs.uniform(r, 1)
        r.w = rs.uniform(r, 0, seed=1)
        r.z = rs.normal(r, 0, 1, 2)

    R.foreach(draw, rs.Config(target="cpu" if "cpu" in TARGETS else "interp"))
    u, u2, w, z = (R.field(f).numpy() for f in ("u", "u2", "w", "z"))
    for x in (u, u2, w):
        assert 0.0 <= x.min() and x.max() < 1.0
        assert abs(x.mean() - 0.5) < 0.01 and abs(x.var() - 1 / 12) < 0.005
        counts = np.histogram(x, bins=10, range=(0.0, 1.0))[0]
        assert np.all(np.abs(counts - n / 10) < 0.05 * n / 10), counts
    assert abs(z.mean()) < 0.02 and abs(z.var() - 1.0) < 0.03
    assert abs(np.mean(np.abs(z) < 1.0) - 0.6827) < 0.01
    assert np.all(np.isfinite(z)) and np.abs(z).max() < 8.6
    # distinct across rows, counters and seeds, and not correlated between them
    both = np.concatenate([u, u2, w])
    assert len(np.unique(both)) == len(both)
    for a, b in ((u, u2), (u, w), (u[:-1], u[1:])):
        assert abs(np.corrcoef(a, b)[0, 1]) < 0.02


def test_omitted_counters_are_zero_and_host_checks():
    assert rs.uniform(3, 4) == rs.uniform(3, 4, 0) == rs.uniform(3, 4, 0, 0, seed=0)
    assert rs.uniform(3, 4) != rs.uniform(3, 4, 1) != rs.uniform(3, 4, seed=1)
    assert isinstance(rs.normal(3, 4), float)
    arr = rs.uniform(np.arange(6).reshape(2, 3), 1)
    assert arr.shape == (2, 3) and arr[1, 2] == rs.uniform(5, 1)
    with pytest.raises(TypeError, match="c0 must be an integer"):
        rs.uniform(3, 1.5)
    with pytest.raises(ValueError, match=r"seed = 4294967296 is outside \[0, 2\*\*32\)"):
        rs.normal(3, 1, seed=2 ** 32)
    with pytest.raises(ValueError, match="c1 = -1"):
        rs.uniform(3, 1, -1)


def test_a_counter_out_of_range_at_run_time_names_the_line(target):
    R = rs.Relation("R", 8)
    R.new_field("c", rs.i64).load(np.array([0, 1, 2, 3, -1, 5, 6, 7]))
    R.new_field("u", rs.f64)

    @rs.kernel
    def bad(r):
        r.u = rs.uniform(r, r.c)

    line = bad.fn.__code__.co_firstlineno + 2
    with pytest.raises(rs.KernelRuntimeError, match=r"outside \[0, 2\*\*32\)") as info:
        R.foreach(bad, target)
        rs.synchronize()  # (cuda: a launch's error surfaces at the next read or here)
    assert f"line {line}" in str(info.value)
    R.c.load(np.array([0, 1, 2, 3, 2 ** 32, 5, 6, 7]))
    with pytest.raises(rs.KernelRuntimeError, match=r"outside \[0, 2\*\*32\)"):
        R.foreach(bad, target)
        rs.synchronize()
    R.c.load(np.arange(8) + (2 ** 32 - 8))  # the largest counters are fine
    R.foreach(bad, target)
    assert R.u.numpy()[7] == rs.uniform(7, 2 ** 32 - 1)
