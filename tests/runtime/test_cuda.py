"""The cuda target against the `interp` oracle, bit for bit, on tiny relations (in CI the kernels
run in numba's CUDA simulator, one Python thread per CUDA thread), and its data movement: device
copies uploaded only when the host copy is newer, downloaded only when the host reads them."""
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import relsim as rs
from tests import heat_graph
from tests.fails.helpers import marked_line

needs_cuda = pytest.mark.skipif("cuda" not in rs.targets(),
                                reason="numba.cuda is not importable (pip install relsim[cuda])")

CUDA = rs.Config(target="cuda")
INTERP = rs.Config(target="interp")


def bits(x) -> bytes:
    return np.ascontiguousarray(np.asarray(x)).tobytes()


def differential(build, run):
    """build() -> state; run(state, config) -> list of arrays/values: equal bits on both."""
    want = run(build(), INTERP)
    got = run(build(), CUDA)
    assert len(want) == len(got)
    for i, (w, g) in enumerate(zip(want, got)):
        assert bits(w) == bits(g), f"result {i}: interp {w!r} != cuda {g!r}"
    return got


def chain(n=7):
    V, E = rs.Relation("V", n), rs.Relation("E", n - 1)
    E.new_key_field("head", V).load(np.arange(1, n))
    E.new_key_field("tail", V).load(np.arange(0, n - 1))
    rng = np.random.default_rng(3)
    V.new_field("x", rs.f64).load(rng.standard_normal(n))
    V.new_field("s", rs.f32).load(rng.standard_normal(n).astype(np.float32))
    V.new_field("i", rs.i32).load(rng.integers(-50, 50, n).astype(np.int32))
    V.new_field("u", rs.vec(3)).load(rng.standard_normal((n, 3)))
    return V, E


@needs_cuda
def test_field_map_with_math_and_casts():
    @rs.kernel
    def f(v):
        v.x = math.floor(v.x * 3.7) + math.ceil(v.x) + round(v.x * 2.5) + math.cbrt(v.x) \
            + math.sqrt(abs(v.x)) + math.sin(v.x) + math.trunc(v.x * 9.1)
        v.s = math.floor(v.s * 2.5) + round(v.s) + v.s * v.s / 3.0
        v.i = v.i * 3 // 2 + v.i % 7
        v.u = rs.cross(v.u, v.u + 1.0) * rs.norm(v.u)

    def run(VE, cfg):
        V, _ = VE
        V.foreach(f, cfg)
        V.foreach(f, cfg)
        return [V.x.numpy(), V.s.numpy(), V.i.numpy(), V.u.numpy()]

    differential(chain, run)


@needs_cuda
def test_key_chain_reads_and_subsets():
    def build():
        V, E = chain()
        C = rs.Relation("C", 3)
        V.new_key_field("cell", C).load(np.array([0, 1, 2, 0, 1, 2, 0]))
        C.new_field("w", rs.f64).load([0.5, -1.25, 3.0])
        E.new_field("y", rs.f64)
        E.subset("odd", np.array([1, 3, 4]))
        return E

    @rs.kernel
    def k(e):
        e.y = e.head.cell.w * e.tail.x + e.tail.cell.w

    def run(E, cfg):
        E.odd.foreach(k, cfg)
        first = E.y.numpy(copy=True)
        E.foreach(k, cfg)
        return [first, E.y.numpy()]

    differential(build, run)


@needs_cuda
def test_key_reductions_sum_min_max_vectors():
    def build():
        V, E = chain()
        V.new_field("acc", rs.f64)
        V.new_field("lo", rs.f64, init=float("inf"))
        V.new_field("hi", rs.f32, init=-float("inf"))
        V.new_field("vacc", rs.vec(3))
        V.new_field("n", rs.i64)
        return V, E

    @rs.kernel
    def k(e):
        d = e.head.x - e.tail.x
        e.tail.acc += d
        e.head.acc -= d * 0.5
        e.head.lo = min(e.head.lo, d)
        e.tail.lo = min(e.tail.lo, -d)
        rs.reduce_max(e.head.hi, e.tail.s)
        e.head.vacc += e.tail.u * d
        e.tail.vacc[1] += 2.0
        e.head.n += 1

    def run(VE, cfg):
        V, E = VE
        E.foreach(k, cfg)
        E.foreach(k, cfg)
        E.subset("some", np.array([0, 2, 3])).foreach(k, cfg)
        return [V.acc.numpy(), V.lo.numpy(), V.hi.numpy(), V.vacc.numpy(), V.n.numpy()]

    differential(build, run)


@needs_cuda
@pytest.mark.parametrize("other", ["cpu", "interp"])
def test_targets_mixed_on_the_same_fields(other):
    """cuda, then a host target, then cuda again on the same fields (with key reductions left
    pending by cpu in between): the bits of interp alone."""
    @rs.kernel
    def k(e):
        d = e.head.x - e.tail.x
        e.tail.acc += d
        e.head.acc -= d * 0.5

    @rs.kernel
    def step(v):
        v.x += 0.25 * v.acc

    def run(cfgs):
        V, E = chain()
        V.new_field("acc", rs.f64)
        for cfg in cfgs:
            E.foreach(k, cfg)
            V.foreach(step, cfg)
        return [V.x.numpy(copy=True), V.acc.numpy(copy=True)]

    host = rs.Config(target=other, parallel_threshold=1)
    want = run([INTERP] * 4)
    got = run([CUDA, host, host, CUDA])
    assert [bits(w) for w in want] == [bits(g) for g in got]


@needs_cuda
def test_global_sum_min_argmax():
    def build():
        V, _ = chain(9)
        return V, rs.Global(rs.f64, 0.25), rs.Global(rs.f32, float("inf")), \
            rs.Global(rs.f64, -float("inf")), rs.Global(rs.i64, 0)

    def run(state, cfg):
        V, total, lo, best, count = state

        @rs.kernel
        def k(v):
            total += v.x * 1e16 + v.x
            lo = min(lo, v.s)
            rs.reduce_argmax(best, abs(v.x))
            count += v.i

        V.foreach(k, cfg)
        V.subset("tail", np.array([4, 5, 6, 7, 8])).foreach(k, cfg)
        return [total.value, lo.value, best.value, best.row, count.value]

    differential(build, run)


@needs_cuda
def test_insert_and_delete():
    def build():
        P = rs.Relation("P", 6, elastic=True)
        P.new_field("x", rs.f64).load(np.arange(6.0))
        P.new_field("tag", rs.i32)
        return P

    def run(P, cfg):
        @rs.kernel
        def step(p):
            p.x += 1.0
            if p.x > 5.5:
                rs.delete(p)
            for k in range(2):
                if p.x < 2.5:
                    rs.insert(P, x=p.x * 10 + k, tag=7)

        P.foreach(step, cfg)
        first = [P.x.numpy(copy=True), P.tag.numpy(copy=True)]
        P.foreach(step, cfg)  # the storage changed: the launch re-binds
        return first + [P.x.numpy(), P.tag.numpy(), P.size]

    got = differential(build, run)
    assert got[0].tolist() == [1, 2, 3, 4, 5, 10, 11, 20, 21]


@needs_cuda
def test_grid_stencil_and_periodic_reduction():
    def build():
        C = rs.Relation("C", 20)
        C.set_grid((5, 4), periodic=(True, False))
        C.new_field("u", rs.f64).load(np.sin(np.arange(20.0)))
        C.new_field("lap", rs.f64)
        C.new_field("acc", rs.f64)
        C.subset("inner", np.arange(5, 15))
        return C

    @rs.kernel
    def lap(c):
        c.lap = c(1, 0).u + c(-1, 0).u + c(0, 1).u + c(0, -1).u - 4.0 * c.u

    @rs.kernel
    def spread(c):
        c(1, 0).acc += c.u * 0.5
        c(-1, 0).acc += c.u * 0.25

    def run(C, cfg):
        C.inner.foreach(lap, cfg)
        C.foreach(spread, cfg)
        return [C.lap.numpy(), C.acc.numpy()]

    differential(build, run)


@needs_cuda
def test_index_error_is_raised_with_its_line():
    V, _ = chain()

    @rs.kernel
    def bad(v):
        a = (1.0, 2.0, 3.0)
        v.x = a[v.i]  # <- out of range for most rows

    V.foreach(bad, CUDA)  # queued: nothing waits for it
    with pytest.raises(rs.KernelRuntimeError, match="index out of range at line"):
        V.x.numpy()  # the first host read checks the launches queued before it
    V, _ = chain()  # (V.x's array is out now: a launch writing it downloads it at once)
    V.foreach(bad, CUDA)
    with pytest.raises(rs.KernelRuntimeError, match="in kernel 'bad': index out of range"):
        rs.synchronize()
    rs.synchronize()  # (reported once)


@needs_cuda
def test_an_error_in_the_third_of_five_queued_launches_is_that_launchs():
    """Launches queue without waiting; the first read reports the first failed launch (kernel
    and line), and raises before the values downstream of it reach the host."""
    V, _ = chain()
    V.new_field("y", rs.f64)
    V.new_field("z", rs.f64)
    total = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def fine(v):
        v.y = v.x + 1.0

    @rs.kernel
    def also_fine(v):
        v.z = v.y * 2.0

    @rs.kernel
    def third(v):
        a = (1.0, 2.0)
        v.y = a[v.i]  # <- here: out of range for most rows

    @rs.kernel
    def summed(v):
        total += v.z

    before = transfers()
    V.foreach(fine, CUDA)
    V.foreach(also_fine, CUDA)
    assert moved(before, "down", "error") == 0  # no launch waited
    V.foreach(third, CUDA)
    V.foreach(also_fine, CUDA)
    V.foreach(summed, CUDA)  # the sum stays on the device: nothing waits
    assert moved(before, "down", "error") == 0 and moved(before, "down", "global") == 0
    with pytest.raises(rs.KernelRuntimeError) as info:
        total.value  # noqa: B018 - the host reads: the check comes first
    assert "in kernel 'third'" in str(info.value)
    assert f"line {marked_line(third)}" in str(info.value)
    # what the launches after the failed one wrote is never shown as if they had succeeded
    for read, what in ((lambda: total.value, "Global 'total'"), (lambda: V.z.numpy(),
                                                                 "field V.z")):
        with pytest.raises(rs.KernelRuntimeError, match=f"{what} is not valid: a cuda launch "
                                                        f"of kernel 'third' failed"):
            read()
    with pytest.raises(rs.KernelRuntimeError, match="field V.z is not valid: a cuda launch of "
                                                    "kernel 'third' failed"):
        V.foreach(summed, CUDA)  # nor used by a later launch (named: the re-run's input)
    V.y.numpy()  # stored by the failed launch: partial, as the cpu leaves it
    assert np.isfinite(V.x.numpy()).all()  # not written since
    total.value = 0.0  # set again by the host: valid
    V.z.fill(1.0)
    V.foreach(summed, CUDA)
    assert total.value == 7.0


# -- where data lives ---------------------------------------------------------------------
def transfers():
    from relsim.runtime.backends.cuda import memory as cuda_memory
    return dict(cuda_memory.TRANSFERS)


def moved(before, direction, kind="field"):
    return transfers().get((direction, kind), 0) - before.get((direction, kind), 0)


@needs_cuda
def test_nothing_uploaded_twice_and_downloads_only_when_read():
    V, E = chain()
    V.new_field("acc", rs.f64)
    E.new_field("y", rs.f64)

    @rs.kernel
    def k(e):
        e.y = e.head.x * 2.0
        e.tail.acc += e.y

    t0 = transfers()
    E.foreach(k, CUDA)  # uploads head, tail, x, y, acc once
    assert moved(t0, "up") == 5 and moved(t0, "down") == 0
    assert moved(t0, "up", "index") == 2  # the inverse index of acc: offsets and slot ids
    t1 = transfers()
    for _ in range(3):
        E.foreach(k, CUDA)
    assert moved(t1, "up") == 0 and moved(t1, "down") == 0
    assert moved(t1, "up", "index") == 0 and moved(t1, "down", "index") == 0
    got = V.acc.data.copy()  # the host reads acc: one download, then current
    assert moved(t1, "down") == 1
    V.acc.data  # noqa: B018
    assert moved(t1, "down") == 1
    assert np.array_equal(got, 4 * np.bincount(np.arange(6), 2.0 * V.x.data[1:], 7))


@needs_cuda
def test_host_writes_and_numpy_see_device_results():
    V, E = chain()
    E.new_field("y", rs.f64)

    @rs.kernel
    def k(e):
        e.y = e.y + e.head.x

    E.foreach(k, CUDA)
    y = E.y.numpy()  # handed out: current now, and after every launch
    assert np.array_equal(y, V.x.data[1:])
    E.foreach(k, CUDA)
    assert np.array_equal(y, 2 * V.x.data[1:])
    y[:] = 1.0  # written in place by the host: the next launch sees it
    E.foreach(k, CUDA)
    assert np.array_equal(y, 1.0 + V.x.data[1:])

    t0 = transfers()
    V.x.load(np.ones(7))  # host writes: the device copies are stale, uploaded by the next launch
    E.y.fill(0.5)
    E.foreach(k, CUDA)
    assert moved(t0, "up") == 2  # x, and y
    assert np.array_equal(y, np.full(6, 1.5))
    V.x.fill(2.0)
    E.foreach(k, CUDA)
    assert np.array_equal(E.y.data, np.full(6, 3.5))


@needs_cuda
def test_key_field_reload_rebuilds_the_index():
    V, E = chain()
    V.new_field("acc", rs.f64)

    @rs.kernel
    def k(e):
        e.head.acc += 1.0

    E.foreach(k, CUDA)
    E.head.load(np.zeros(6, dtype=np.int64))
    E.foreach(k, CUDA)
    assert V.acc.data.tolist() == [6.0, 1, 1, 1, 1, 1, 1]


def test_unavailable_target_says_how_to_install():
    """Without numba.cuda, `import relsim` works, `cuda` is not listed, and choosing it says
    what to install (run in a fresh interpreter where numba.cuda cannot be imported)."""
    code = textwrap.dedent("""\
        import sys
        sys.modules["numba.cuda"] = None  # an import of numba.cuda fails
        import relsim as rs
        assert "cuda" not in rs.targets(), rs.targets()
        try:
            rs.Config(target="cuda")
        except rs.ConfigError as exc:
            print(exc)
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert "target 'cuda' is not available" in out.stdout
    assert 'pip install "relsim[cuda]"' in out.stdout


@needs_cuda
def test_a_failed_import_is_a_config_error(monkeypatch):
    from relsim.runtime.backends.cuda import device as cuda_runtime
    V, _ = chain()

    @rs.kernel
    def k(v):
        v.x = 1.0

    monkeypatch.setattr(cuda_runtime, "_state", {"error": "ImportError: a broken install"})
    with pytest.raises(rs.ConfigError, match=r"a broken install\); install it: "
                                             r"pip install \"relsim\[cuda\]\""):
        V.foreach(k, CUDA)


# -- bad use --------------------------------------------------------------------------------
class _FakeCudaAPIError(RuntimeError):
    """What numba's driver raises (CudaAPIError, code 2 = CUDA_ERROR_OUT_OF_MEMORY)."""

    def __init__(self, code, msg):
        self.code = code
        super().__init__(f"[{code}] {msg}")


def _failing_to_device(refuse, code=2):
    """numba.cuda.to_device that refuses the arrays `refuse(arr)` is true of, as a full device
    does (code 2), or with another driver error."""
    from relsim.runtime.backends.cuda import device as cuda_runtime
    real = cuda_runtime.cuda().to_device

    def to_device(arr, *args, **kwargs):
        if refuse(arr):
            raise _FakeCudaAPIError(code, "Call to cuMemAlloc results in "
                                          "CUDA_ERROR_OUT_OF_MEMORY" if code == 2 else "other")
        return real(arr, *args, **kwargs)
    return to_device


@needs_cuda
def test_a_field_too_large_for_the_device_names_itself(monkeypatch):
    from relsim.runtime.backends.cuda import device as cuda_runtime
    P = rs.Relation("Big", 1000)
    P.new_field("x", rs.f64)
    P.new_field("small", rs.i32)  # 4000 bytes: fits

    @rs.kernel
    def k(p):
        p.x = p.x + 1.0
        p.small = 1

    monkeypatch.setattr(cuda_runtime.cuda(), "to_device",
                        _failing_to_device(lambda a: a.nbytes > 4000))
    with pytest.raises(rs.DeviceMemoryError) as info:
        P.foreach(k, CUDA)
    msg = str(info.value)
    assert "field Big.x of relation Big (8,000 bytes) does not fit in the GPU's memory" in msg
    assert "CUDA_ERROR_OUT_OF_MEMORY" in msg and "target 'cpu'" in msg
    assert isinstance(info.value, MemoryError) and isinstance(info.value, rs.RelsimError)
    monkeypatch.undo()
    P.foreach(k, CUDA)  # nothing was left half-bound: the launch works once there is room
    assert P.x.data.tolist() == [1.0] * 1000


@needs_cuda
def test_reduction_slots_too_large_and_other_driver_errors(monkeypatch):
    from relsim.runtime.backends.cuda import device as cuda_runtime
    V, E = chain(400)
    V.new_field("acc", rs.f64)

    @rs.kernel
    def k(e):
        e.head.acc += e.tail.x

    monkeypatch.setattr(cuda_runtime.cuda(), "to_device", _failing_to_device(lambda a: a.ndim == 2))
    with pytest.raises(rs.DeviceMemoryError, match=r"^the reduction slots of kernel 'k' into "
                                                   r"field V.acc \(3,192 bytes\) does not fit"):
        E.foreach(k, CUDA)
    # an error that is not out-of-memory passes through unchanged
    monkeypatch.setattr(cuda_runtime.cuda(), "to_device",
                        _failing_to_device(lambda a: True, code=700))
    with pytest.raises(_FakeCudaAPIError, match="700"):
        E.foreach(k, CUDA)


@needs_cuda
def test_an_empty_launch_still_folds_its_globals():
    # the exact sum of no contributions is the value rounded once: -0.0 becomes +0.0, as on
    # every target; a min over nothing leaves the value
    def build():
        V, _ = chain(5)
        return V, rs.Global(rs.f64, -0.0), rs.Global(rs.f64, float("nan"))

    def run(state, cfg):
        V, total, lo = state

        @rs.kernel
        def k(v):
            total += v.x
            lo = min(lo, v.x)

        V.subset("none", np.zeros(0, dtype=np.int64)).foreach(k, cfg)
        return [total.value, lo.value]

    got = differential(build, run)
    assert math.copysign(1.0, got[0]) == 1.0


@needs_cuda
def test_a_heat_step_with_no_host_read_makes_no_copies():
    """conduct over edges (key reductions: slots and gathers on the device), update over
    vertices: once bound, a time step copies nothing between host and device."""
    V, E = heat_graph.random_graph(40, 90, seed=3)
    conduct, update = heat_graph.kernels()
    heat_graph.step(V, E, conduct, update, CUDA)  # binds, uploads the fields
    before = transfers()
    heat_graph.step(V, E, conduct, update, CUDA, times=3)
    assert transfers() == before
    want_V, want_E = heat_graph.random_graph(40, 90, seed=3)
    # (the oracle: compiling heat_graph's kernels for the cpu here would leave nothing for
    # tests/runtime/test_precompile.py's workers to compile)
    heat_graph.step(want_V, want_E, *heat_graph.kernels(), rs.Config(target="interp"),
                    times=4)
    assert V.T.numpy().tobytes() == want_V.T.numpy().tobytes()
