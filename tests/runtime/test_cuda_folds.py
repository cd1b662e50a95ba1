"""Global reductions folded on the device (`backends/cuda/folds.py`) against the cpu's serial
folds of the same slots, bit for bit, on hostile values (NaNs with payloads, infinities, signed
zeros, subnormals, values 2**1000 apart, ties), slot counts that take one to three passes, and
every op. In CI the kernels run in numba's CUDA simulator."""
import numpy as np
import pytest

import relsim as rs
from relsim.runtime.analysis.slots import Layout
from relsim.runtime.backends.cpu.backend import CpuExecutable

pytestmark = pytest.mark.skipif("cuda" not in rs.targets(),
                                reason="numba.cuda is not importable (pip install relsim[cuda])")

# one pass (<= 64 / 256 slots), two, three
SIZES = [1, 5, 64, 300, 4100, 17000]


class _Binding:  # what CpuExecutable.make_fold reads of a binding
    def __init__(self, rows):
        self.rows = rows if rows is not None else np.zeros(0, np.int64)
        self.has_rows = rows is not None


def hostile(rng, n, dtype, kind):
    if kind == "int":
        return rng.integers(-2**62, 2**62, n).astype(dtype)
    if kind == "bool":
        return rng.random(n) < 0.97
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-300, 300, n)
    pool = np.array([0.0, -0.0, np.inf, -np.inf, 5e-324, -5e-324, 2.2e-308, 1e308, -1e308,
                     1.5, 1.5, -1.5], dtype=np.float64)
    pick = rng.random(n) < 0.2
    x[pick] = rng.choice(pool, pick.sum())
    with np.errstate(over="ignore"):  # binary32: beyond its range is an infinity
        x = x.astype(dtype)
    if kind == "nan" and n > 3:  # NaNs with different payloads, never at slot 0
        bits = np.array([0x7FF8000000000001, 0x7FF8000000000002, -0x7FF8000000000003 & 0xFFFF],
                        dtype=np.int64)
        for k, at in enumerate(sorted(rng.choice(np.arange(1, n), 2, replace=False))):
            x[at] = np.int64(bits[k] | 0x7FF8000000000000).view(np.float64).astype(dtype)
    if kind == "finite":
        x[~np.isfinite(x)] = 0.5
    return x


def run_both(op, dtype, vals, init, ncomp=1, rows=None, per_row=1):
    """(cpu Global, cuda Global) after folding `vals` (nslots x ncomp) into Globals holding
    `init`."""
    from numba import cuda

    from relsim.runtime.backends.cuda import folds as cuda_folds
    t = {np.float64: rs.f64, np.float32: rs.f32, np.int64: rs.i64, np.int32: rs.i32,
         np.bool_: rs.bool_}[dtype]
    typ = t if ncomp == 1 else rs.vec(ncomp, t)
    out = []
    for device in (False, True):
        with np.errstate(over="ignore"):
            g = rs.Global(typ, init)
        lay = Layout(target=g, op=op, per_row=per_row, sites=(), conditional=False)
        slots = np.ascontiguousarray(vals.reshape(len(vals), ncomp).astype(dtype))
        if device:
            cuda_folds.DeviceFold(lay, cuda.to_device(slots), rows if rows is not None else
                                  np.zeros(0, np.int64), rows is not None).run()
        else:
            CpuExecutable.make_fold(lay, slots, _Binding(rows))()
        out.append(g)
    return out


def same(a, b):
    return a.data.tobytes() == b.data.tobytes() and a.row == b.row


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["finite", "specials", "nan"])
def test_float_sum_is_the_exact_sum(n, dtype, kind):
    rng = np.random.default_rng(n * 7 + len(kind))
    vals = hostile(rng, n, dtype, kind)
    big = 1e300 if dtype is np.float64 else float("inf")  # (1e300 is no f32: its inf)
    for init in (0.0, -0.0, big, float(vals[0])):
        cpu, dev = run_both("+", dtype, vals, init)
        assert same(cpu, dev), (init, cpu.value, dev.value)


def test_float_sum_cancellation_and_overflow():
    big = np.array([1e308, 1e308, -1e308, 2.0**-1074, -1e308], dtype=np.float64)
    for vals in (big, np.tile(big, 900), np.array([1e308] * 3000)):
        cpu, dev = run_both("+", np.float64, vals, 0.0)
        assert same(cpu, dev)


def test_vector_sum():
    rng = np.random.default_rng(5)
    vals = hostile(rng, 3 * 900, np.float64, "specials").reshape(900, 3)
    cpu, dev = run_both("+", np.float64, vals, [0.0, -0.0, 1.0], ncomp=3)
    assert same(cpu, dev)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("kind", ["specials", "nan"])
def test_min_max_keep_the_first_best(n, op, kind):
    rng = np.random.default_rng(n + 3)
    for dtype in (np.float64, np.float32):
        vals = hostile(rng, n, dtype, kind)
        if n > 10:  # zeros of both signs tie with the minimum / maximum
            vals[rng.integers(0, n, n // 3)] = 0.0
            vals[rng.integers(0, n, n // 3)] = -0.0
            vals = np.abs(vals) * (1 if op == "min" else -1)
        for init in (np.inf if op == "min" else -np.inf, 0.0, -0.0, np.nan):
            cpu, dev = run_both(op, dtype, vals, init)
            assert same(cpu, dev), (dtype, init, cpu.value, dev.value)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("op", ["argmin", "argmax"])
def test_arg_reductions_name_the_first_best_row(n, op):
    rng = np.random.default_rng(n + 11)
    vals = np.round(rng.standard_normal(n) * 3)  # many ties
    if n > 8:
        vals[[n // 2, n // 3]] = np.nan
    rows = np.sort(rng.choice(10 * n, n, replace=False)).astype(np.int64)
    for per_row, r in ((1, None), (1, rows)):
        for init in (np.inf if op == "argmin" else -np.inf, 0.0):
            cpu, dev = run_both(op, np.float64, vals, init, rows=r, per_row=per_row)
            assert same(cpu, dev), (cpu.value, cpu.row, dev.value, dev.row)
    two = np.repeat(vals, 2)  # two sites per row: slot s is row s // 2
    cpu, dev = run_both(op, np.float64, two, np.inf if op == "argmin" else -np.inf, per_row=2)
    assert same(cpu, dev)


@pytest.mark.parametrize("n", SIZES)
def test_integer_and_bool_folds(n):
    rng = np.random.default_rng(n)
    for dtype in (np.int64, np.int32):
        vals = hostile(rng, n, dtype, "int")
        for op in ("+", "*", "min", "max"):
            cpu, dev = run_both(op, dtype, vals, 3)
            assert same(cpu, dev), (op, dtype)
    flags = hostile(rng, n, np.bool_, "bool")
    for op in ("and", "or"):
        for init in (True, False):
            cpu, dev = run_both(op, np.bool_, flags, init)
            assert same(cpu, dev), (op, init)


def test_launch_downloads_nothing_and_a_host_read_one_value():
    from relsim.runtime.backends.cuda import memory as cuda_memory
    V = rs.Relation("V", 300)
    V.new_field("x", rs.f64).load(np.linspace(-1.0, 2.0, 300))
    total, lo = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, np.inf)

    @rs.kernel
    def k(v):
        total += v.x
        lo = min(lo, v.x)

    cfg = rs.Config(target="cuda")
    V.foreach(k, cfg)
    cuda_memory.TRANSFERS.clear()
    V.foreach(k, cfg)
    assert sum(n for (way, _), n in cuda_memory.TRANSFERS.items() if way == "down") == 0
    assert total.value == total.value  # one download each, carrying the error words
    assert lo.value == -1.0
    assert dict(cuda_memory.TRANSFERS) == {("down", "global"): 2}
    want = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def k2(v):
        want += v.x

    V.foreach(k2, rs.Config(target="cpu"))
    V.foreach(k2, rs.Config(target="cpu"))
    assert total.value == want.value
    rs.synchronize()  # (reported once)


def test_globals_stay_on_the_device_between_kernels():
    """A Global reduced by one launch and read by the next is never downloaded; a value the
    host assigns is uploaded once when a kernel reads it, and not at all when a reduction
    starts from it (passed by value); the bits are the cpu's."""
    from relsim.runtime.backends.cuda import memory as cuda_memory

    def program(target):
        V = rs.Relation("V", 500)
        V.new_field("x", rs.f64).load(np.sin(np.arange(500.0)) * 1e3)
        V.new_field("y", rs.f64)
        s, m, am = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, 0.0), rs.Global(rs.f64, 0.0)
        n, ok = rs.Global(rs.i64, 0), rs.Global(rs.bool_, True)
        scale = rs.Global(rs.f32, 1.5)

        @rs.kernel
        def reduce(v):
            s += v.x * scale
            m = max(m, v.x)
            rs.reduce_argmin(am, v.x)
            n += 1
            ok &= v.x < 2e3

        @rs.kernel
        def use(v):
            v.y = v.x / s + m + am + n
            if ok:
                v.x = v.x * 0.5

        cfg = rs.Config(target=target)
        seen = []
        for step in range(3):
            s.value = 0.0  # reset by the host before each reduction
            V.foreach(reduce, cfg)
            V.foreach(use, cfg)
            if target == "cuda" and step == 0:
                cuda_memory.TRANSFERS.clear()
            if step == 1:
                scale.value = 0.25
        seen = [s.value, m.value, am.value, am.row, n.value, ok.value]
        return seen, V.y.numpy().tobytes(), V.x.numpy().tobytes()

    want = program("cpu")
    got = program("cuda")
    # steps 2 and 3 copy nothing but `scale`, uploaded once (a kernel reads it; s's resets go
    # by value); the reads at the end: five values, am's row, two fields
    assert dict(cuda_memory.TRANSFERS) == {("up", "global"): 1, ("down", "global"): 6,
                                           ("down", "field"): 2}
    assert got[0] == want[0] and got[1:] == want[1:]
    rs.synchronize()
